"""``python -m bench.callprofile``: where a ``tools/call`` round trip and the gateway spend their time.

Runs one ShadowCode server from source under ``cProfile`` in a temporary profile root and
sample project, loads it, stops it so the profile is written, and prints the top functions
by cumulative and by own time (``pstats``). Three paths:

* ``inprocess``: ``python -m cProfile -m shadowcode --workspace P mcp serve`` with the stdio
  front turned off (``SHADOWCODE_STDIO_FRONT=0``), so the profiled process is the full server
  (behind the front it is the front's child, and the front only copies bytes); a client
  here makes ``--calls`` sequential ``tools/call shadow_status`` round trips, paced under
  the SRV-25 frame bound, then closes stdin;
* ``attached``: the headless engine under ``cProfile`` (``python -m cProfile -m shadowcode
  engine``), the same calls through ``mcp serve``'s relay, then ``shadowcode engine stop``;
* ``gateway``: ``mcp serve --http 127.0.0.1:0`` under ``cProfile``, loaded by
  ``shadowcode_conformance/node_probes/bench/http_load.mjs`` as the gateway figure loads it (8 callers, one POST per
  connection, paced under GW-07), then SIGINT.

Each profile starts after the server is up (SIGUSR1 after the first, untimed call; before the
gateway's load), so imports and start-up stay out of it (``python -m bench.importtime`` covers
those). Profiling slows Python code several times over, so the latencies printed beside the profile
say only that the calls worked; the shares are what this is for. cProfile sees the main
thread only (every path here serves on the main thread's event loop). Every process started
runs in its own process group and is killed when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from bench.stats import percentile

__all__ = ["main"]

REPO: Final = Path(__file__).resolve().parents[1]
LOAD_CLIENT: Final = Path("conformance/shadowcode_conformance/node_probes/bench/http_load.mjs")
_WINDOW_FRAMES: Final = 100
"""Client frames per window: under ShadowCode's 128 frames in any one second (SRV-25)."""
_WINDOW_SECONDS: Final = 1.05
_DEADLINE_SECONDS: Final = 180.0
_PROTOCOL: Final = "2025-06-18"


def _sample_project(dest: Path) -> Path:
    sys.path.insert(0, str(REPO / "conformance/shadowcode_conformance/fixtures"))
    try:
        from sample_project import make_sample_project
    finally:
        sys.path.pop(0)
    return Path(make_sample_project(dest))


class _Pacer:
    """Waits before a send that would put more than ``_WINDOW_FRAMES`` frames in one window."""

    def __init__(self) -> None:
        self.sent: deque[float] = deque()

    def take(self) -> None:
        now = time.monotonic()
        while self.sent and now - self.sent[0] > _WINDOW_SECONDS:
            self.sent.popleft()
        if len(self.sent) >= _WINDOW_FRAMES:
            time.sleep(_WINDOW_SECONDS - (now - self.sent[0]) + 0.001)
            self.sent.popleft()
        self.sent.append(time.monotonic())


def _stdio_calls(
    argv: list[str], env: dict[str, str], calls: int, profiled: Callable[[subprocess.Popen[Any]], Any] | None = None
) -> list[float]:
    """Handshake with a stdio server, make ``calls`` timed ``shadow_status`` calls, close stdin, wait.

    ``profiled`` is called with the spawned process after the untimed first call: it starts
    the profile (sends SIGUSR1 to the profiled process); None: nothing is profiled.
    """
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    pacer = _Pacer()

    def ask(message: dict[str, Any]) -> dict[str, Any] | None:
        pacer.take()  # before the clock starts (see `timed`)
        timed[0] = time.perf_counter()
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        if "id" not in message:
            return None
        while line := proc.stdout.readline():  # type: ignore[union-attr]
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer
        raise RuntimeError(f"the server closed stdout (exit {proc.wait()})")

    timed = [0.0]
    try:
        client = {"name": "shadowcode-callprofile", "version": "0"}
        ask({"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": _PROTOCOL, "capabilities": {}, "clientInfo": client}})  # fmt: skip
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        latencies = []
        for i in range(calls + 1):  # the first call is untimed (the server may still be warming up)
            if i == 1 and profiled is not None:
                profiled(proc)
            answer = ask({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                          "params": {"name": "shadow_status", "arguments": {}}})  # fmt: skip
            if not answer or "result" not in answer or answer["result"].get("isError"):
                raise RuntimeError(f"shadow_status failed: {str(answer)[:300]}")
            if i:
                latencies.append((time.perf_counter() - timed[0]) * 1000)
        proc.stdin.close()
        proc.wait(timeout=_DEADLINE_SECONDS)
        return latencies
    finally:
        _kill(proc)


def _kill(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def _wait_line(path: Path, pattern: str, proc: subprocess.Popen[Any]) -> re.Match[str]:
    deadline = time.monotonic() + _DEADLINE_SECONDS
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found
        if proc.poll() is not None:
            raise RuntimeError(f"exited {proc.returncode}: {path.read_text(encoding='utf-8')[-1500:]}")
        time.sleep(0.05)
    raise RuntimeError(f"no line matching {pattern!r} within {_DEADLINE_SECONDS:g} s")


def _background(argv: list[str], env: dict[str, str], stderr: Path) -> subprocess.Popen[Any]:
    with stderr.open("wb") as sink:
        return subprocess.Popen(
            argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink,
            start_new_session=True,
        )  # fmt: skip


def _profiled(out: Path) -> list[str]:
    """``python -m shadowcode`` under cProfile, written to ``out`` however the process ends (see :func:`_run`)."""
    return [sys.executable, "-m", "bench.callprofile", "--run-profiled", str(out), "--"]


def _run(out: Path, argv: list[str]) -> None:
    """Run ``python -m shadowcode *argv`` in this process under cProfile; dump to ``out`` on any exit.

    ``mcp serve`` ends a served connection with ``os._exit`` (it skips interpreter teardown),
    which ``python -m cProfile`` would never see; so ``os._exit`` is wrapped to dump first.
    """
    import cProfile
    import runpy

    profiler = cProfile.Profile()
    real_exit = os._exit

    def dump() -> None:
        profiler.disable()
        profiler.dump_stats(str(out))

    def exit_after_dump(status: int) -> None:
        dump()
        real_exit(status)

    os._exit = exit_after_dump  # type: ignore[assignment]
    sys.argv = ["shadowcode", *argv]
    # Start-up (imports, the store) is bench.importtime's subject: the profile starts at
    # SIGUSR1, which the client sends after its untimed first call.
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: profiler.enable())
    try:
        runpy.run_module("shadowcode", run_name="__main__", alter_sys=True)
    finally:
        dump()


def _inprocess(root: Path, env: dict[str, str], workspace: Path, out: Path, calls: int) -> str:
    env = {**env, "SHADOWCODE_STDIO_FRONT": "0"}
    argv = [*_profiled(out), "--workspace", str(workspace), "mcp", "serve"]
    lat = _stdio_calls(argv, env, calls, profiled=lambda server: server.send_signal(signal.SIGUSR1))
    return _latency_line(lat)


def _attached(root: Path, env: dict[str, str], workspace: Path, out: Path, calls: int) -> str:
    engine = _background([*_profiled(out), "engine"], env, root / "engine.stderr")
    try:
        _wait_line(root / "engine.stderr", r"shadowcode engine ready", engine)
        relay = [sys.executable, "-m", "shadowcode", "--workspace", str(workspace), "mcp", "serve"]
        lat = _stdio_calls(relay, env, calls, profiled=lambda _relay: engine.send_signal(signal.SIGUSR1))
        stop = [sys.executable, "-m", "shadowcode", "engine", "stop"]
        subprocess.run(stop, cwd=REPO, env=env, check=True, capture_output=True, timeout=_DEADLINE_SECONDS)
        engine.wait(timeout=_DEADLINE_SECONDS)
        return _latency_line(lat)
    finally:
        _kill(engine)


def _gateway(root: Path, env: dict[str, str], workspace: Path, out: Path, calls: int) -> str:
    token = "SHADOWCODE_BENCH_HTTP_TOKEN"
    env = {**env, token: secrets.token_hex(32)}
    argv = [*_profiled(out), "--workspace", str(workspace), "mcp", "serve", "--http", "127.0.0.1:0"]
    server = _background([*argv, "--token-env", token], env, root / "gateway.stderr")
    try:
        url = _wait_line(root / "gateway.stderr", r"shadowcode gateway ready: (http://\S+)", server).group(1)
        load = [
            shutil.which("node") or "node", str(REPO / LOAD_CLIENT), "--url", url,
            "--token-env", token, "--tool", "shadow_status", "--args", "{}", "--requests", str(calls),
            "--warmup", "8", "--callers", "8", "--window-requests", "120", "--window-ms", "1050",
        ]  # fmt: skip
        server.send_signal(signal.SIGUSR1)  # the profile covers the load (warm-up requests included)
        done = subprocess.run(load, cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        if not report.get("ok"):
            raise RuntimeError(f"the load client failed: {report.get('error')}")
        server.send_signal(signal.SIGINT)
        server.wait(timeout=_DEADLINE_SECONDS)
        rps = report.get("requests_per_second")
        return f"{calls} requests, 8 callers: {rps:.0f} requests/s (busy time) under the profiler"
    finally:
        _kill(server)


def _latency_line(lat: list[float]) -> str:
    return f"{len(lat)} timed calls: p50 {percentile(lat, 50):.2f} ms, p99 {percentile(lat, 99):.2f} ms (profiled)"


def _shown(file: str) -> str:
    """A profiled file's path without machine folders: relative to the repository or the interpreter."""
    if file == "~":
        return ""
    for root in (REPO, Path(sys.prefix), Path(sys.base_prefix)):
        for base in {str(root), str(root.resolve())}:
            if file.startswith(base + os.sep):
                return file[len(base) + 1 :]
    return file


def _top(out: Path, sort: str, count: int) -> str:
    stats = pstats.Stats(str(out))
    rows = []
    total = stats.total_tt  # type: ignore[attr-defined]
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            (tottime if sort == "tottime" else cumtime, calls, tottime, cumtime, f"{_shown(file)}:{line}({name})")
        )
    rows.sort(reverse=True)
    lines = [f"top {count} by {sort} (total {total:.2f} s):", "  ncalls   tottime   cumtime  function"]
    lines += [f"{c:8d} {tt:9.3f} {ct:9.3f}  {fn}" for _key, c, tt, ct, fn in rows[:count]]
    return "\n".join(lines)


_PATHS: Final = {"inprocess": _inprocess, "attached": _attached, "gateway": _gateway}


def main(argv: list[str] | None = None) -> int:
    """Profile one path; see ``python -m bench.callprofile --help``. Returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--run-profiled"] and len(argv) >= 3 and argv[2] == "--":
        _run(Path(argv[1]), argv[3:])
        return 0
    p = argparse.ArgumentParser(prog="python -m bench.callprofile", description=__doc__.splitlines()[0])
    p.add_argument("path", choices=sorted(_PATHS))
    p.add_argument("--calls", type=int, default=1000, help="timed calls (stdio) or requests (gateway)")
    p.add_argument("--top", type=int, default=12, help="functions listed per table")
    p.add_argument("--save", type=Path, default=None, help="keep the raw profile here (pstats format)")
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="shadowcode-callprofile-"))
    try:
        (root / "tmp").mkdir()
        env = {**os.environ, "SHADOWCODE_HOME": str(root / "home"), "TMPDIR": str(root / "tmp")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("SHADOWCODE_FRONT_READY_FD", None)
        workspace = _sample_project(root / "project")
        out = root / "profile.pstats"
        summary = _PATHS[args.path](root, env, workspace, out, args.calls)
        if not out.is_file():
            sys.stderr.write("callprofile: the server wrote no profile (it did not exit normally)\n")
            return 1
        if args.save:
            shutil.copy2(out, args.save)
        sys.stdout.write(f"{args.path}: {summary}\n\n")
        for sort in ("cumulative", "tottime"):
            sys.stdout.write(_top(out, sort, args.top) + "\n\n")
        return 0
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as exc:
        sys.stderr.write(f"callprofile: {args.path}: {exc}\n")
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
