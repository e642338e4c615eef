"""Runs the Node driver (``shadowcode_conformance/node_probes/bench/driver.mjs``) and returns its JSON report.

The driver is a TypeScript SDK 1.x client: it spawns the server, times the handshake and
the calls, reads the server's memory from /proc and prints one JSON document. This module
bounds each run with a deadline, kills the driver's whole process group when the deadline
passes, and turns every failure into a :class:`BenchError`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.targets import Target
from shadowcode.errors import ShadowcodeError

__all__ = ["BenchError", "CallOptions", "run_calls", "run_startup"]

DRIVER: Final = Path("conformance/shadowcode_conformance/node_probes") / "bench" / "driver.mjs"
"""The driver script, relative to the repository root."""

_KILL_WAIT_SECONDS: Final = 10.0
_ERROR_TAIL_CHARS: Final = 1500


class BenchError(ShadowcodeError):
    """A measurement could not be taken (the server failed, timed out, or answered wrongly).

    Fields: ``target`` (the target's name).
    """


@dataclass(frozen=True)
class CallOptions:
    """How the call figures are taken on one open connection.

    Attributes:
        calls: sequential ``tools/call`` round trips timed one by one.
        inflight: calls kept in flight for the throughput figure.
        burst_calls: calls in the throughput figure.
        window_frames: client frames allowed per sliding window (0: no pacing).
        window_ms: the window's length in milliseconds.
    """

    calls: int
    inflight: int
    burst_calls: int
    window_frames: int
    window_ms: int


def _check_args(target: Target) -> list[str]:
    args = [] if target.forbid_mapped is None else ["--forbid-mapped", target.forbid_mapped]
    if target.expect_text is None:
        return args
    return [*args, "--tool", target.tool, "--args", json.dumps(target.tool_args), "--expect-text", target.expect_text]


def _run(repo: Path, node: str, args: list[str], target: Target, env: dict[str, str], timeout: float) -> dict[str, Any]:
    argv = [node, str(repo / DRIVER), *args, "--", *target.argv]
    proc = subprocess.Popen(
        argv,
        cwd=repo,
        env={**env, **target.env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=_KILL_WAIT_SECONDS)
        raise BenchError(f"{target.name}: the driver did not finish within {timeout:g} s", target=target.name) from exc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=_KILL_WAIT_SECONDS)
    try:
        report = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict):
        detail = (err or out)[-_ERROR_TAIL_CHARS:]
        raise BenchError(
            f"{target.name}: the driver exited {proc.returncode} without a report: {detail}", target=target.name
        )
    if not report.get("ok"):
        tail = str(report.get("stderr_tail", ""))[-_ERROR_TAIL_CHARS:]
        raise BenchError(f"{target.name}: {report.get('error')}; server stderr: {tail}", target=target.name)
    return report


def run_startup(
    repo: Path, node: str, target: Target, env: dict[str, str], *, runs: int, warmup: int, timeout: float
) -> list[dict[str, Any]]:
    """Time ``runs`` spawns of ``target`` up to its first answered ``tools/list``.

    Args:
        repo: repository root (the driver's working folder).
        node: the node executable.
        target: what to spawn.
        env: the environment of the driver and so of the server (``target.env`` is added).
        runs: timed spawns.
        warmup: untimed spawns first.
        timeout: seconds for the whole driver run.

    With ``target.expect_text`` set, each spawn also calls ``target.tool`` once after the
    clock stopped and the memory was read, and fails unless the answer contains that text;
    with ``target.forbid_mapped`` set, a spawn fails when the server maps such a file.

    Returns:
        One dict per timed spawn: ``spawn_to_tools_list_ms``, ``spawn_to_initialize_ms``
        (floats, ms), ``spawn_to_first_call_ms`` (float, ms: spawn → the answer of the checking
        call, sent after the memory was read; None without ``target.expect_text``), ``tool_count``,
        ``rss_hwm_kib``, ``rss_kib``, ``tree_rss_hwm_kib`` (ints, KiB, or None where /proc is
        unreadable), ``descendants`` (int).

    Raises:
        BenchError: the server failed to start or answer, answered the check without
            ``target.expect_text``, or the deadline passed.
    """
    args = ["startup", "--runs", str(runs), "--warmup", str(warmup), *_check_args(target)]
    for name in target.fresh_dir_env:
        args += ["--fresh-dir-env", name]
    return list(_run(repo, node, args, target, env, timeout)["runs"])


def run_calls(
    repo: Path, node: str, target: Target, env: dict[str, str], options: CallOptions, *, timeout: float
) -> dict[str, Any]:
    """Spawn ``target`` once and time its tool calls.

    Args:
        repo: repository root.
        node: the node executable.
        target: what to spawn; ``target.tool`` with ``target.tool_args`` is called.
        env: the environment of the driver and the server.
        options: counts and pacing.
        timeout: seconds for the whole driver run.

    Returns:
        The driver's report: ``sequential_latencies_ms`` (list of floats, in call order),
        ``sequential_wall_ms``, ``throughput`` (``calls``, ``inflight``, ``busy_ms``,
        ``wall_ms``, ``calls_per_second``), ``spawn_to_tools_list_ms`` and the memory
        fields of :func:`run_startup`, read after the calls.

    Raises:
        BenchError: the server failed, a call answered ``isError``, the first answer lacked
            ``target.expect_text``, or the deadline passed.
    """
    args = [
        "calls",
        "--tool",
        target.tool,
        "--args",
        json.dumps(target.tool_args),
        "--calls",
        str(options.calls),
        "--inflight",
        str(options.inflight),
        "--burst-calls",
        str(options.burst_calls),
        "--window-frames",
        str(options.window_frames),
        "--window-ms",
        str(options.window_ms),
    ]
    if target.expect_text is not None:
        args += ["--expect-text", target.expect_text]
    if target.forbid_mapped is not None:
        args += ["--forbid-mapped", target.forbid_mapped]
    return _run(repo, node, args, target, env, timeout)
