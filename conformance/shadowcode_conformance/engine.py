"""The target's headless engine (``<target> engine``) as the runner and the checks start it.

Both the runner (for ``--attached`` runs) and the engine checks start the engine the same
way: as a child in its own process group, in the check's private ``SHADOWCODE_HOME``,
ready once ``<target> --json engine status`` says it runs, and stopped with SIGTERM, a
bounded wait, then SIGKILL of its process group (ENG-03).
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress
from typing import Final, cast

import anyio
import anyio.abc

from shadowcode_conformance.context import Context
from shadowcode_conformance.limits import ENGINE_READY_SECONDS, ENGINE_STATUS_TIMEOUT_SECONDS, ENGINE_STOP_WAIT_SECONDS
from shadowcode_conformance.processes import drain, kill_group, tail

__all__ = [
    "engine_running",
    "headless_engine",
]

_POLL_SECONDS: Final = 0.2


async def engine_running(ctx: Context) -> bool:
    """Whether ``<target> --json engine status`` says the profile's engine runs (ENG-03).

    It must exit 0 and, when it prints a JSON object, that object must not say
    ``"running": false``.

    Args:
        ctx: the check's context (its ``SHADOWCODE_HOME`` names the profile).

    Returns:
        True when the engine answers as running.
    """
    done = await ctx.run([*ctx.target, "--json", "engine", "status"], timeout_seconds=ENGINE_STATUS_TIMEOUT_SECONDS)
    if done.returncode != 0:
        return False
    try:
        doc = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return True
    return not isinstance(doc, dict) or cast("dict[str, object]", doc).get("running") is not False


@asynccontextmanager
async def headless_engine(
    ctx: Context, problems: list[str], *, ready_seconds: float | None = None
) -> AsyncGenerator[anyio.abc.Process | None, None]:
    """``<target> engine`` running in ``ctx.home`` until the block ends (ENG-03).

    Readiness is :func:`engine_running`, polled until it holds, the engine exits, or
    ``ready_seconds`` pass. An engine that has exited non-zero by the end of the block is
    noted as a problem. On exit the engine gets SIGTERM and ``ENGINE_STOP_WAIT_SECONDS``,
    then its process group is killed; this cleanup is shielded from cancellation.

    Args:
        ctx: the check's context.
        problems: findings are appended here, one sentence each.
        ready_seconds: bound on the readiness wait; by default ``ENGINE_READY_SECONDS`` or
            what is left of the check's time, whichever is less.

    Yields:
        The engine process, or None (with a problem noted) when it never became ready.

    Raises:
        OSError: the target could not be started.
    """
    bound = min(ENGINE_READY_SECONDS, ctx.remaining()) if ready_seconds is None else ready_seconds
    stderr = bytearray()
    async with ctx.spawn([*ctx.target, "engine"]) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        tg.start_soon(drain, proc.stdout, bytearray())
        ready = False
        try:
            with anyio.move_on_after(bound):
                while proc.returncode is None and not (ready := await engine_running(ctx)):
                    await anyio.sleep(_POLL_SECONDS)
            if not ready:
                problems.append(
                    f"`engine` did not become ready within {bound:g} s (exit {proc.returncode}; stderr: {tail(stderr)})"
                )
            yield proc if ready else None
        finally:
            if ready and proc.returncode not in (None, 0):
                problems.append(f"the engine failed with exit {proc.returncode} (stderr: {tail(stderr)})")
            with anyio.CancelScope(shield=True):
                with suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with anyio.move_on_after(ENGINE_STOP_WAIT_SECONDS):
                    await proc.wait()
                kill_group(proc.pid)
            tg.cancel_scope.cancel()
