"""``python -m bench``: measure ShadowCode's stdio server beside its peers, print a table, write JSON.

Run from the repository root with the project's virtualenv (``bash ci/bench`` does both).
Exit status: 0 when every available target was measured, 1 when a target produced no
figure at all (the table and the JSON are written either way), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from bench.driver import CallOptions
from bench.gateway import gateway_figures
from bench.report import compute_ratios, render_table, summarize_target, write_results
from bench.runner import BenchOptions, run_rounds
from bench.targets import Layout, base_python, build_targets

__all__ = ["main"]

logger = logging.getLogger("bench")

REPO: Final = Path(__file__).resolve().parents[1]
WINDOW_MARGIN_FRAMES: Final = 8
"""Frames kept below the server's per-second bound when pacing, for timer and pipe jitter."""

WINDOW_MS: Final = 1050
"""The pacing window: the server's one second plus 50 ms of slack."""

SCHEMA_VERSION: Final = 1


def _frames_per_second_bound() -> int:
    try:
        from shadowcode.limits import STDIO_FRAMES_PER_SECOND_MAX
    except ImportError:
        return 128
    return STDIO_FRAMES_PER_SECOND_MAX


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
    p.add_argument("--targets", default="", help="comma-separated target names to run (default: all)")
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
    spec = importlib.util.spec_from_file_location("shadowcode_bench_sample", REPO / "fixtures" / "sample_project.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("fixtures/sample_project.py cannot be loaded")
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
    for name in ("rounds", "cold_rounds", "call_rounds", "calls", "burst_calls", "window_frames"):
        if getattr(args, name) < 0:
            return f"--{name.replace('_', '-')} must not be negative"
    if args.calls < 1:
        return "--calls must be at least 1"
    if args.inflight < 1:
        return "--inflight must be at least 1"
    if args.window_frames and args.window_frames <= 3:
        return "--window-frames must be 0 or more than 3 (the handshake's frames)"
    if args.window_ms < 1:
        return "--window-ms must be positive"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see ``python -m bench --help``.

    Args:
        argv: arguments (default: ``sys.argv[1:]``).

    Returns:
        0 when every available target was measured, 1 when one produced nothing, 2 on bad usage.
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING if args.quiet else logging.INFO, format="bench: %(message)s"
    )
    problem = _check_counts(args)
    if problem:
        sys.stderr.write(f"bench: {problem}\n")
        return 2
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
            shiv_warm=root / "shiv-warm",
            pyz=pyz,
            venv_python=Path(sys.executable),
            pyz_python=args.pyz_python or base_python(),
            node=args.node,
        )
        targets = build_targets(layout)
        if args.targets:
            wanted = {n.strip() for n in args.targets.split(",") if n.strip()}
            unknown = wanted - {t.name for t in targets}
            if unknown:
                sys.stderr.write(f"bench: unknown targets: {', '.join(sorted(unknown))}\n")
                return 2
            targets = [t for t in targets if t.name in wanted]
        if not pyz.is_file():
            missing = f"{_shown(args.pyz)} is missing; build it with `bash ci/build`"
            targets = [replace(t, unavailable=t.unavailable or missing) if str(pyz) in t.argv else t for t in targets]
        (root / "tmp").mkdir()
        env = {**os.environ, "SHADOWCODE_HOME": str(layout.home), "TMPDIR": str(root / "tmp")}
        env.pop("SHIV_ROOT", None)
        # Servers start as a host starts them: Python may cache bytecode (a warm zipapp cache
        # otherwise recompiles every module on every start), unless asked to measure without.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.dont_write_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        call = CallOptions(args.calls, args.inflight, args.burst_calls, args.window_frames, args.window_ms)
        options = BenchOptions(args.rounds, args.cold_rounds, args.call_rounds, call, args.timeout_seconds)
        samples = run_rounds(REPO, args.node, targets, env, options)
        results = _results(layout, targets, samples, args, options, started)
        results["pyz"]["path"] = _shown(args.pyz)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    write_results(args.output, results)
    sys.stdout.write(render_table(results))
    sys.stdout.write(f"\nwrote {_shown(args.output)}\n")
    missing = [
        name
        for name, entry in results["targets"].items()
        if not entry["unavailable"] and entry["startup"] is None and entry["calls"] is None
    ]
    return 1 if missing else 0


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else its file name (no machine paths)."""
    full = path.resolve()
    return str(full.relative_to(REPO)) if full.is_relative_to(REPO) else full.name


def _results(
    layout: Layout,
    targets: list[Any],
    samples: dict[str, Any],
    args: argparse.Namespace,
    options: BenchOptions,
    started: float,
) -> dict[str, Any]:
    entries = {t.name: summarize_target(t, samples.get(t.name), layout.display(t.argv)) for t in targets}
    gateway = gateway_figures()
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
        "gateway": gateway,
        "ratios": ratios,
        "ratio_reasons": reasons,
    }


if __name__ == "__main__":
    sys.exit(main())
