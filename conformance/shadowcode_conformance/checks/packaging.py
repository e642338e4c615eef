"""The target runs on a bare environment: only ``PATH`` and a fresh ``HOME`` (PKG-01).

A packaged build must need nothing but ``python3``; a source checkout must run as given.
Neither may lean on variables a developer's shell happens to set (``PYTHONPATH``,
``VIRTUAL_ENV``, ``SHADOWCODE_HOME``, proxies, credentials). The check runs ``--help``,
``status`` and one short stdio MCP exchange (``initialize``, ``tools/list``) with an environment holding only ``PATH``
(as the runner has it) and ``HOME`` (an empty private folder, so the default profile
root lands there and nothing touches the real home).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream

from shadowcode_conformance.context import LEGACY_REVISIONS, Context
from shadowcode_conformance.processes import Completed, drain, run_command, spawn, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = ["bare_environment", "frame", "response_to", "scrubbed_env"]

_COMMAND_TIMEOUT_SECONDS = 60.0
_EXPECTED_TOOL_COUNT = 17


def scrubbed_env(path: str, home: str) -> dict[str, str]:
    """The whole environment the target gets: ``{"PATH": path, "HOME": home}`` (PKG-01)."""
    return {"PATH": path, "HOME": home}


def frame(obj: Mapping[str, Any]) -> bytes:
    """``obj`` as one newline-delimited JSON-RPC frame."""
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n"


async def response_to(stream: ByteReceiveStream, buffer: bytearray, ident: int) -> dict[str, Any]:
    """Read stdout lines until the response with ``ident``; raises ``anyio.EndOfStream`` at EOF."""
    while True:
        while (cut := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:cut])
            del buffer[: cut + 1]
            message = json.loads(line)
            if isinstance(message, dict) and cast("dict[str, Any]", message).get("id") == ident:
                return cast("dict[str, Any]", message)
        buffer.extend(await stream.receive())


async def _serve_tools(ctx: Context, env: Mapping[str, str], bound: float) -> str:
    """initialize, then tools/list, each awaited; a problem sentence or ``""``."""
    stderr = bytearray()
    init = {
        "protocolVersion": LEGACY_REVISIONS[-1],
        "capabilities": {},
        "clientInfo": {"name": "conformance-packaging", "version": "1"},
    }
    tools: object = None
    async with spawn(ctx.serve_argv(), env=env, cwd=ctx.cwd) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        assert proc.stdin is not None and proc.stdout is not None
        buffer = bytearray()
        try:
            with anyio.fail_after(bound):
                await proc.stdin.send(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
                answer = await response_to(proc.stdout, buffer, 1)
                if "result" not in answer:
                    return f"initialize was refused: {json.dumps(answer)[:200]}"
                await proc.stdin.send(frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                await proc.stdin.send(frame({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
                tools = (await response_to(proc.stdout, buffer, 2)).get("result", {}).get("tools")
        except TimeoutError:
            return f"no answer within {bound:g} s (stderr: {tail(stderr)})"
        except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError) as exc:
            return f"the session broke: {type(exc).__name__} (stderr: {tail(stderr)})"
        finally:
            tg.cancel_scope.cancel()
    listed = cast("list[object]", tools) if isinstance(tools, list) else None
    if listed is None or len(listed) != _EXPECTED_TOOL_COUNT:
        count = len(listed) if listed is not None else "no"
        return f"tools/list returned {count} tools, expected {_EXPECTED_TOOL_COUNT}"
    return ""


def _exit_problem(done: Completed) -> str:
    if done.timed_out:
        return f"did not finish within {_COMMAND_TIMEOUT_SECONDS:g} s"
    if done.returncode != 0:
        return f"exit {done.returncode} (stderr: {tail(done.stderr)})"
    return ""


def _judge_help(done: Completed) -> str:
    if problem := _exit_problem(done):
        return problem
    text = done.stdout.decode("utf-8", "replace")
    if "mcp" not in text:
        return f"--help does not mention the mcp commands: {tail(text, 200)!r}"
    return ""


def _judge_status(done: Completed) -> str:
    if problem := _exit_problem(done):
        return problem
    return "" if done.stdout.strip() else "status printed nothing"


@check("packaging:bare_environment", covers=["PKG-01"], timeout_seconds=180)
async def bare_environment(ctx: Context) -> CheckResult:
    """``--help``, ``status`` and a stdio ``tools/list`` work with only PATH and HOME set (PKG-01).

    Each command is a sub-check of its own; all three share one fresh HOME, so a zipapp
    unpacks itself there once.
    """
    home = ctx.scratch / "bare home"
    home.mkdir()
    env = scrubbed_env(ctx.env.get("PATH", os.defpath), str(home))
    commands = (
        ("help", [*ctx.target, "--help"], _judge_help),
        ("status", ctx.target_argv("status"), _judge_status),
    )
    subs: list[SubResult] = []
    for name, argv, judge in commands:
        bound = min(_COMMAND_TIMEOUT_SECONDS, ctx.remaining())
        done = await run_command(argv, env=env, cwd=ctx.cwd, timeout_seconds=bound)
        problem = judge(done)
        detail = problem or f"exit {done.returncode} with only PATH and HOME set"
        subs.append(SubResult(f"packaging:bare_environment:{name}", ("PKG-01",), not problem, detail))
    problem = await _serve_tools(ctx, env, min(_COMMAND_TIMEOUT_SECONDS, ctx.remaining()))
    detail = problem or f"{_EXPECTED_TOOL_COUNT} tools listed over stdio with only PATH and HOME set"
    subs.append(SubResult("packaging:bare_environment:mcp_serve", ("PKG-01",), not problem, detail))
    failed = [s.name.rsplit(":", 1)[-1] for s in subs if not s.ok]
    detail = f"{len(subs) - len(failed)}/{len(subs)} commands ran with only PATH and HOME" + (
        f"; failed: {', '.join(failed)}" if failed else ""
    )
    return CheckResult(not failed, detail, subresults=subs)
