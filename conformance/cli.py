"""``python -m conformance``: parse the command line, run the checks, write the report.

Exit status: 0 when every check passed, 1 when any failed, 2 on bad usage (CONF-01).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from conformance.errors import ConformanceError, UsageError
from conformance.fixture import default_fixture_path, load_project_factory
from conformance.limits import JOBS_DEFAULT
from conformance.registry import load_checks, select
from conformance.report import build_report, write_report
from conformance.runner import run_checks

__all__ = ["main", "parse_target"]

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The folder holding ``conformance/``, ``fixtures/`` and ``node_probes/``."""


def parse_target(command: str) -> list[str]:
    """Split a target command line the way a POSIX shell would (no expansion).

    Args:
        command: e.g. ``"python3 dist/shadowcode.pyz"``.

    Returns:
        The argv list, at least one element.

    Raises:
        UsageError: unbalanced quotes or an empty command.
    """
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"cannot split --target: {exc}") from exc
    if not argv:
        raise UsageError("--target is empty")
    return argv


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m conformance",
        description="Run the conformance checks against a target command and write report.json and report.md.",
    )
    p.add_argument("--target", help='the command to test, split like a shell, e.g. "python3 dist/shadowcode.pyz"')
    p.add_argument("--out", default="conformance-out", help="report folder (default: conformance-out)")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only checks whose name or module matches (wildcards or substring; repeat or comma-separate)",
    )
    p.add_argument("--jobs", type=int, default=JOBS_DEFAULT, help=f"checks run at once (default: {JOBS_DEFAULT})")
    p.add_argument(
        "--fixture", help="a Python file defining make_sample_project(dest) (default: fixtures/sample_project.py)"
    )
    p.add_argument("--list", action="store_true", help="list the selected checks and the ids they cover, then exit")
    return p


def _run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    patterns = [p.strip() for item in args.only for p in item.split(",")]
    checks = select(load_checks().values(), patterns)
    if not checks:
        raise UsageError("--only matched no check; use --list to see them")
    if args.list:
        for c in checks:
            sys.stdout.write(f"{c.name}\t{','.join(c.covers)}\n")
        return 0
    if args.target is None:
        raise UsageError("--target is required")
    target = parse_target(args.target)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    fixture = Path(args.fixture) if args.fixture else default_fixture_path(REPO_ROOT)
    factory = load_project_factory(fixture)
    out_dir = Path(args.out)

    outcome = anyio.run(
        lambda: run_checks(
            checks, target=target, cwd=Path.cwd(), repo_root=REPO_ROOT, project_factory=factory, jobs=args.jobs
        )
    )
    report = build_report(target, outcome.records, outcome.revisions, int(time.time()))
    json_path, md_path = write_report(out_dir, report)
    failed = [c for c in report["checks"] if not c["ok"]]
    s = report["summary"]
    sys.stderr.write(
        f"conformance: {len(report['checks']) - len(failed)} checks passed, {len(failed)} failed; "
        f"ids: {s['pass']} pass, {s['fail']} fail, {s['not_covered']} not covered\n"
    )
    for c in failed:
        sys.stderr.write(f"  FAIL {c['name']}: {c['detail'][:300]}\n")
    sys.stderr.write(f"conformance: wrote {json_path} and {md_path}\n")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conformance command line (CONF-01).

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        0 when no check failed, 1 when one did or the run broke, 2 on bad usage.
    """
    try:
        return _run(sys.argv[1:] if argv is None else argv)
    except ConformanceError as exc:
        sys.stderr.write(f"conformance: {exc.message}\n")
        return exc.exit_code
    except OSError as exc:
        sys.stderr.write(f"conformance: {exc}\n")
        return 1
