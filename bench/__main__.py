"""``python -m bench``: measure ShadowCode's MCP servers beside their peers, print a table, write JSON.

Run from the repository root with the project's virtualenv (``bash ci/bench`` does both).
Exit status: 0 when every available target was measured, 1 when a target, the gateway or the HTTP client
figure produced nothing (the table and the JSON are written either way), 2 on bad usage.
Every process the run starts (servers, drivers, the headless engine, the HTTP servers) is
stopped before it exits, on failure, Ctrl-C and SIGTERM too.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, Final

from bench.driver import BenchError, CallOptions
from bench.engine import headless_engine
from bench.gateway import GATEWAY_PENDING_REASON, GatewayOptions, gateway_figures, pending_gateway_figures
from bench.http_client import (
    HTTP_CLIENT_NAME,
    HTTP_CLIENT_PENDING_REASON,
    HttpClientOptions,
    http_client_figures,
    pending_http_client_figures,
)
from bench.report import (
    PRIMARY_TARGET,
    cold_first_call_figure,
    compute_ratios,
    render_table,
    summarize_target,
    temporary_engine_figure,
    write_results,
)
from bench.runner import BenchOptions, Samples, run_rounds
from bench.targets import ATTACHED_TARGETS, Layout, Target, base_python, build_targets, engine_argv

__all__ = ["main"]

logger = logging.getLogger("bench")

REPO: Final = Path(__file__).resolve().parents[1]
WINDOW_MARGIN_FRAMES: Final = 8
"""Frames kept below the server's per-second bound when pacing, for timer and pipe jitter."""

WINDOW_MS: Final = 1050
"""The pacing window: the server's one second plus 50 ms of slack."""

SCHEMA_VERSION: Final = 2

GATEWAY_NAME: Final = "gateway"
"""The name that selects the gateway figure in ``--targets``."""

CLIENT_WINDOW_CALLS: Final = 48
"""HTTP client calls per pacing window by default. ShadowCode's client accepts at most 128 SSE
events per connection in any one second (CLI-17); every call's reply is at least one event and
server-everything may send notifications beside them, so this stays well under the bound."""

_WARM_POLL_SECONDS: Final = 0.1


def _frames_per_second_bound() -> int:
    try:
        from shadowcode.limits import STDIO_FRAMES_PER_SECOND_MAX
    except ImportError:
        return 128
    return STDIO_FRAMES_PER_SECOND_MAX


def _requests_per_second_bound() -> int:
    try:
        from shadowcode.limits import GATEWAY_REQUESTS_PER_SECOND_MAX
    except ImportError:
        return 128
    return GATEWAY_REQUESTS_PER_SECOND_MAX


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10, help="start-up rounds (one timed spawn per target each)")
    p.add_argument("--cold-rounds", type=int, default=5, help="rounds that also time the empty-cache zipapp")
    p.add_argument("--call-rounds", type=int, default=3, help="call rounds (one connection per target each)")
    p.add_argument("--calls", type=int, default=1000, help="sequential tools/call round trips per call round")
    p.add_argument("--inflight", type=int, default=8, help="calls in flight for the throughput figure")
    p.add_argument("--burst-calls", type=int, default=480, help="calls in the throughput figure")
    p.add_argument(
        "--window-frames",
        type=int,
        default=_frames_per_second_bound() - WINDOW_MARGIN_FRAMES,
        help="client frames per pacing window, the same for every server (0: no pacing; ShadowCode then "
        "closes the connection past its per-second frame bound)",
    )
    p.add_argument("--window-ms", type=int, default=WINDOW_MS, help="pacing window length")
    p.add_argument("--gateway-rounds", type=int, default=3, help="HTTP load rounds per server (0: no gateway figure)")
    p.add_argument("--gateway-requests", type=int, default=480, help="timed requests per gateway round")
    p.add_argument("--gateway-warmup", type=int, default=8, help="untimed requests before each gateway round")
    p.add_argument("--gateway-callers", type=int, default=8, help="concurrent callers in the gateway figure")
    p.add_argument(
        "--gateway-window-requests",
        type=int,
        default=_requests_per_second_bound() - WINDOW_MARGIN_FRAMES,
        help="HTTP requests per pacing window, the same for both servers (0: no pacing; the gateway then "
        "answers 429 past its per-second bound)",
    )
    p.add_argument("--client-rounds", type=int, default=3, help="HTTP client rounds per client (0: no figure)")
    p.add_argument("--client-calls", type=int, default=300, help="timed sequential calls per HTTP client round")
    p.add_argument("--client-warmup", type=int, default=10, help="untimed calls before each HTTP client round")
    p.add_argument(
        "--client-window-requests",
        type=int,
        default=CLIENT_WINDOW_CALLS,
        help="HTTP client calls per pacing window, the same for both clients (0: no pacing; ShadowCode's "
        "client then closes a connection past 128 SSE events in one second)",
    )
    p.add_argument(
        "--targets",
        default="",
        help=f"comma-separated target names to run, `{GATEWAY_NAME}` for the HTTP gateway figure, "
        f"`{HTTP_CLIENT_NAME}` for the HTTP client figure (default: all)",
    )
    p.add_argument("--pyz", type=Path, default=REPO / "dist" / "shadowcode.pyz", help="the zipapp under test")
    p.add_argument("--pyz-python", type=Path, default=None, help="interpreter for the zipapp (default: base python)")
    p.add_argument("--node", default=shutil.which("node") or "node", help="node executable")
    p.add_argument("--timeout-seconds", type=float, default=180.0, help="deadline of one driver run")
    p.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "latest.json")
    p.add_argument(
        "--dont-write-bytecode",
        action="store_true",
        help="start the servers with PYTHONDONTWRITEBYTECODE=1 (default: unset, as most hosts start them)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _make_sample_project(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "shadowcode_bench_sample", REPO / "conformance/shadowcode_conformance/fixtures/sample_project.py"
    )
    if spec is None or spec.loader is None:
        raise RuntimeError("conformance/shadowcode_conformance/fixtures/sample_project.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.make_sample_project(dest))


def _version(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8", timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip() or None


def _check_counts(args: argparse.Namespace) -> str | None:
    for name in (
        "rounds", "cold_rounds", "call_rounds", "calls", "burst_calls", "window_frames",
        "gateway_rounds", "gateway_warmup", "gateway_window_requests",
    ):  # fmt: skip
        if getattr(args, name) < 0:
            return f"--{name.replace('_', '-')} must not be negative"
    if args.calls < 1:
        return "--calls must be at least 1"
    if args.inflight < 1:
        return "--inflight must be at least 1"
    if args.client_calls < 1:
        return "--client-calls must be at least 1"
    if args.gateway_requests < 1 or args.gateway_callers < 1:
        return "--gateway-requests and --gateway-callers must be at least 1"
    if args.window_frames and args.window_frames <= 3:
        return "--window-frames must be 0 or more than 3 (the handshake's frames)"
    if args.window_ms < 1:
        return "--window-ms must be positive"
    return None


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see ``python -m bench --help``.

    Args:
        argv: arguments (default: ``sys.argv[1:]``).

    Returns:
        0 when every available target was measured, 1 when one (or the gateway figure)
        produced nothing, 2 on bad usage.
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING if args.quiet else logging.INFO, format="bench: %(message)s"
    )
    problem = _check_counts(args)
    if problem:
        sys.stderr.write(f"bench: {problem}\n")
        return 2
    # SIGTERM unwinds like Ctrl-C, so the finally blocks below stop every process started.
    signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.time()
    root = Path(tempfile.mkdtemp(prefix="shadowcode-bench-"))
    try:
        pyz = root / "pyz" / "shadowcode.pyz"
        pyz.parent.mkdir()
        if args.pyz.is_file():
            shutil.copy2(args.pyz, pyz)
        layout = Layout(
            repo=REPO,
            workspace=_make_sample_project(root / "project"),
            home=root / "home",
            attached_home=root / "home-attached",
            shiv_warm=root / "shiv-warm",
            pyz=pyz,
            venv_python=Path(sys.executable),
            pyz_python=args.pyz_python or base_python(),
            node=args.node,
        )
        targets = build_targets(layout)
        run_gateway = args.gateway_rounds > 0
        run_client = args.client_rounds > 0
        if args.targets:
            wanted = {n.strip() for n in args.targets.split(",") if n.strip()}
            unknown = wanted - {t.name for t in targets} - {GATEWAY_NAME, HTTP_CLIENT_NAME}
            if unknown:
                sys.stderr.write(f"bench: unknown targets: {', '.join(sorted(unknown))}\n")
                return 2
            targets = [t for t in targets if t.name in wanted]
            run_gateway = run_gateway and GATEWAY_NAME in wanted
            run_client = run_client and HTTP_CLIENT_NAME in wanted
        if not pyz.is_file():
            missing = f"{_shown(args.pyz)} is missing; build it with `bash ci/build`"
            targets = [replace(t, unavailable=t.unavailable or missing) if str(pyz) in t.argv else t for t in targets]
        (root / "tmp").mkdir()
        env = {**os.environ, "SHADOWCODE_HOME": str(layout.home), "TMPDIR": str(root / "tmp")}
        env.pop("SHIV_ROOT", None)
        # `mcp serve` runs as a host runs it: behind the stdio front (issue 15), never with the
        # front turned off by a variable the caller happened to export.
        env.pop("SHADOWCODE_STDIO_FRONT", None)
        env.pop("SHADOWCODE_FRONT_READY_FD", None)
        # Servers start as a host starts them: Python may cache bytecode (a warm zipapp cache
        # otherwise recompiles every module on every start), unless asked to measure without.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.dont_write_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        call = CallOptions(args.calls, args.inflight, args.burst_calls, args.window_frames, args.window_ms)
        options = BenchOptions(args.rounds, args.cold_rounds, args.call_rounds, call, args.timeout_seconds)
        samples, engine = _stdio_figures(layout, targets, env, options, root)
        gateway_options = GatewayOptions(
            rounds=args.gateway_rounds,
            requests=args.gateway_requests,
            warmup=args.gateway_warmup,
            callers=args.gateway_callers,
            window_requests=args.gateway_window_requests,
            window_ms=args.window_ms,
            timeout_seconds=args.timeout_seconds,
        )
        if run_gateway:
            logger.info("gateway: %d rounds of %d requests per server", args.gateway_rounds, args.gateway_requests)
            gateway = gateway_figures(REPO, args.node, layout, env, gateway_options, root)
        else:
            gateway = pending_gateway_figures(GATEWAY_PENDING_REASON, gateway_options)
        client_options = HttpClientOptions(
            rounds=args.client_rounds,
            calls=args.client_calls,
            warmup=args.client_warmup,
            window_requests=args.client_window_requests,
            window_ms=args.window_ms,
            timeout_seconds=args.timeout_seconds,
        )
        if run_client:
            logger.info("http client: %d rounds of %d calls per client", args.client_rounds, args.client_calls)
            http_client = http_client_figures(REPO, layout, env, client_options, root)
        else:
            http_client = pending_http_client_figures(HTTP_CLIENT_PENDING_REASON, client_options)
        results = _results(layout, targets, samples, gateway, engine, args, options, started)
        results["http_client"] = http_client
        results["ratios"], results["ratio_reasons"] = compute_ratios(results["targets"], gateway, http_client)
        results["pyz"]["path"] = _shown(args.pyz)
    finally:
        _remove(root)
    write_results(args.output, results)
    sys.stdout.write(render_table(results))
    sys.stdout.write(f"\nwrote {_shown(args.output)}\n")
    missing = [
        name
        for name, entry in results["targets"].items()
        if not entry["unavailable"] and entry["startup"] is None and entry["calls"] is None
    ]
    gateway_failed = run_gateway and gateway["reason"] is not None
    client_failed = run_client and http_client["reason"] is not None
    return 1 if missing or gateway_failed or client_failed else 0


def _stdio_figures(
    layout: Layout, targets: list[Target], env: dict[str, str], options: BenchOptions, root: Path
) -> tuple[dict[str, Samples], dict[str, Any]]:
    """Run the stdio rounds, with the headless engine up while any attached target is measured.

    Returns:
        ``(samples by target name, engine document)``; when the engine cannot start, the
        attached targets get that failure as their error and the others are still measured.
    """
    attached = [t for t in targets if t.name in ATTACHED_TARGETS and t.unavailable is None]
    argv = engine_argv(layout)
    if layout.pyz.is_file() and any(t.name == PRIMARY_TARGET and t.unavailable is None for t in targets):
        _warm_cache(layout, env, root, options.timeout_seconds)
    engine: dict[str, Any] = {"command": layout.display(argv), "started": False, "reason": None}
    if not attached:
        engine["reason"] = "no attached target in this run"
        return run_rounds(REPO, layout.node, targets, env, options), engine
    engine_env = {**env, "SHADOWCODE_HOME": str(layout.attached_home), "SHIV_ROOT": str(layout.shiv_warm)}
    with ExitStack() as stack:
        logger.info("starting the headless engine for the attached targets")
        try:
            proc = stack.enter_context(
                headless_engine(list(argv), env=engine_env, cwd=REPO, stderr_path=root / "engine.stderr")
            )
        except BenchError as exc:
            logger.warning("%s", exc.message)
            engine["reason"] = exc.message
            others = [t for t in targets if t not in attached]
            samples = run_rounds(REPO, layout.node, others, env, options)
            for t in attached:
                samples[t.name] = Samples(errors=[f"{t.name}: {exc.message}"])
            return samples, engine
        engine.update(started=True, pid=proc.pid, ready_ms=(proc.ready_seconds or 0.0) * 1000, ready=proc.memory())
        samples = run_rounds(REPO, layout.node, targets, env, options)
        engine["after"] = proc.memory()
        engine["alive_after_rounds"] = proc.alive()
    engine["exit_status"] = proc.proc.returncode if proc.proc else None
    return samples, engine


def _warm_cache(layout: Layout, env: dict[str, str], root: Path, timeout: float) -> None:
    """Unpack the archive into the warm shiv cache and wait until its bytecode is written (issue 32).

    A first run answers before the copy's bytecode is compiled: a low-priority child of that
    run compiles it, writes the marker ``bytecode`` and ends with the run. A warm cache is one
    whose bytecode is all there, so a headless engine from the archive (a process that lives
    on) runs under it until the marker appears, at most ``timeout`` seconds; otherwise the
    first rounds would count that compiling in their time and their memory. A cache that does
    not get warm is logged, and the run goes on.
    """
    engine_env = {**env, "SHADOWCODE_HOME": str(root / "warm-home"), "SHIV_ROOT": str(layout.shiv_warm)}
    argv = [str(layout.pyz_python), str(layout.pyz), "engine"]
    logger.info("warming the shiv cache: unpack and bytecode")
    try:
        with headless_engine(argv, env=engine_env, cwd=REPO, stderr_path=root / "warm-engine.stderr"):
            deadline = time.monotonic() + timeout
            while not list(layout.shiv_warm.glob("*/bytecode")) and time.monotonic() < deadline:
                time.sleep(_WARM_POLL_SECONDS)
    except BenchError as exc:
        logger.warning("the warm shiv cache: %s", exc.message)
        return
    if not list(layout.shiv_warm.glob("*/bytecode")):
        logger.warning("the warm shiv cache has no complete bytecode after %g s", timeout)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else its file name (no machine paths)."""
    full = path.resolve()
    return str(full.relative_to(REPO)) if full.is_relative_to(REPO) else full.name


def _results(
    layout: Layout,
    targets: list[Any],
    samples: dict[str, Any],
    gateway: dict[str, Any],
    engine: dict[str, Any],
    args: argparse.Namespace,
    options: BenchOptions,
    started: float,
) -> dict[str, Any]:
    entries = {t.name: summarize_target(t, samples.get(t.name), layout.display(t.argv)) for t in targets}
    ratios, reasons = compute_ratios(entries, gateway)
    pyz_size = layout.pyz.stat().st_size if layout.pyz.is_file() else None
    return {
        "schema": SCHEMA_VERSION,
        "started_at": int(started),
        "duration_seconds": round(time.time() - started, 1),
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "pyz_python": _version([str(layout.pyz_python), "--version"]),
            "node": _version([args.node, "--version"]),
        },
        "options": {
            "rounds": options.rounds,
            "cold_rounds": options.cold_rounds,
            "call_rounds": options.call_rounds,
            "calls": options.call.calls,
            "inflight": options.call.inflight,
            "burst_calls": options.call.burst_calls,
            "window_frames": options.call.window_frames,
            "window_ms": options.call.window_ms,
            "dont_write_bytecode": args.dont_write_bytecode,
        },
        "pyz": {"path": None, "size_bytes": pyz_size},
        "targets": entries,
        "engine": engine,
        "cold_first_call": cold_first_call_figure(entries),
        "temporary_engine": temporary_engine_figure(entries),
        "gateway": gateway,
        "ratios": ratios,
        "ratio_reasons": reasons,
    }


def _remove(root: Path) -> None:
    """Remove the run's folder; a process still closing files in it gets a few bounded retries."""
    for _ in range(10):
        shutil.rmtree(root, ignore_errors=True)
        if not root.exists():
            return
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
