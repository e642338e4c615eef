"""``python -m shadowcode_conformance``: parse the command line, run the checks, write the report.

With ``--attached`` each check (but those registered with ``own_engine``) runs while the
target's headless engine runs in its profile, so every stdio server it starts takes the
attached path; the report's ``engine`` field says which way the run went.

Exit status (CONF-01): 0 when every check passed or failed as the expected-failures
baseline says; 1 when a check failed outside the baseline, a baseline entry is stale (its
check passed) or unknown (no check of that name ran), or the run broke; 2 on bad usage,
a malformed baseline included; 128 plus the signal's number when SIGTERM, SIGHUP or SIGINT
stopped the run (after every started check swept its processes and folders; no report).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus

from shadowcode_conformance.context import EngineMode
from shadowcode_conformance.errors import ConformanceError, UsageError
from shadowcode_conformance.fixture import default_fixture_path, load_project_factory
from shadowcode_conformance.junit import write_junit
from shadowcode_conformance.limits import JOBS_DEFAULT
from shadowcode_conformance.links import check_links
from shadowcode_conformance.registry import PROFILES, Check, load_checks, select
from shadowcode_conformance.report import (
    NO_ENGINE,
    ExpectedFailure,
    build_report,
    load_expected_failures,
    report_failed,
    write_report,
)
from shadowcode_conformance.resources import bundled_baseline, bundled_baseline_names, resource_root
from shadowcode_conformance.revision_sets import judge_at_revisions
from shadowcode_conformance.runner import run_checks

T = TypeVar("T")

__all__ = ["DEFAULT_EXPECTED_FAILURES", "filtered_by_only", "main", "parse_target"]

REPO_ROOT = Path(__file__).resolve().parent
"""This package's folder, holding ``fixtures/`` and ``node_probes/``; a run reads them from
:func:`shadowcode_conformance.resources.resource_root`, which is this folder only in the source folder."""

DEFAULT_EXPECTED_FAILURES = Path(__file__).resolve().parent / "expected_failures.yml"
"""ShadowCode's own baseline, used unless ``--expected-failures`` or ``--no-expected-failures`` is given."""


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
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m shadowcode_conformance",
        description="Run the conformance checks against a target command and write report.json and report.md.",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default="shadowcode",
        help="shadowcode: the ShadowCode contract (default); generic: stdio and Streamable HTTP rules of "
        "any MCP server, the target being the whole server command and/or --url its endpoint",
    )
    p.add_argument("--target", help='the command to test, split like a shell, e.g. "python3 dist/shadowcode.pyz"')
    p.add_argument(
        "--url",
        help="generic profile: the server's Streamable HTTP endpoint (e.g. http://127.0.0.1:3001/mcp); "
        "its HTTP checks run only with it, its stdio checks only with --target",
    )
    p.add_argument(
        "--bearer-env",
        metavar="NAME",
        help="with --url: send 'Authorization: Bearer <value of NAME>' on every request to the endpoint",
    )
    p.add_argument(
        "--official",
        action="store_true",
        help="also run the official @modelcontextprotocol/conformance package's scenarios as checks "
        "(0.1.16 and the 0.2.0-alpha.12 2026-07-28 requirement set; server scenarios against the gateway, "
        "--url, or a stdio --target through a loopback bridge; client scenarios in the shadowcode profile); "
        "needs Node 22 and the packages in node_probes/ (bash ci/setup)",
    )
    p.add_argument("--out", default="conformance-out", help="report folder (default: conformance-out)")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only checks whose name or module matches (wildcards or substring; repeat or comma-separate)",
    )
    p.add_argument("--junit", metavar="FILE", help="also write the run as JUnit XML to FILE (for CI test reports)")
    p.add_argument("--jobs", type=int, default=JOBS_DEFAULT, help=f"checks run at once (default: {JOBS_DEFAULT})")
    p.add_argument(
        "--fixture", help="a Python file defining make_sample_project(dest) (default: the bundled sample project)"
    )
    p.add_argument("--list", action="store_true", help="list the selected checks and the ids they cover, then exit")
    p.add_argument(
        "--attached",
        action="store_true",
        help="start `<target> engine` in each check's profile before it runs, so servers attach to it "
        "(checks of the engine's own lifecycle still run without it)",
    )
    baseline = p.add_mutually_exclusive_group()
    baseline.add_argument(
        "--expected-failures",
        metavar="FILE",
        help=f"YAML list of {{check, reason}} known to fail, or the name of a bundled one "
        f"({', '.join(bundled_baseline_names())}) (default: conformance/shadowcode_conformance/expected_failures.yml)",
    )
    baseline.add_argument(
        "--no-expected-failures", action="store_true", help="use no baseline: every failing check fails the run"
    )
    return p


def filtered_by_only(
    registered: Sequence[Check], selected: Sequence[Check], patterns: Sequence[str]
) -> Callable[[str], bool]:
    """Which baseline names ``--only`` (or the absence of ``--official``) left out on purpose (CONF-01).

    A registered check that was not selected is left out (an official check without
    ``--official`` too). Without patterns nothing else is left out. With them, any other
    name (a probe's sub-check, the synthesized SRV-03 check) that no pattern matches as a
    wildcard, as a substring, or through the part before its first colon is left out.

    Args:
        registered: every registered check.
        selected: the checks that run.
        patterns: the ``--only`` patterns, empty strings ignored.

    Returns:
        A predicate on a check name.
    """
    wanted = [p for p in patterns if p]
    registered_names = {c.name for c in registered}
    selected_names = {c.name for c in selected}

    def left_out(name: str) -> bool:
        if name in registered_names:
            return name not in selected_names
        if not wanted:
            return not any(name.startswith(n + ":") for n in selected_names) and any(
                name.startswith(n + ":") for n in registered_names
            )
        group = name.split(":", 1)[0]
        return not any(fnmatchcase(name, p) or fnmatchcase(group, p) or p in name for p in wanted)

    return left_out


def _baseline(args: argparse.Namespace) -> list[ExpectedFailure]:
    if args.no_expected_failures or (args.profile != "shadowcode" and not args.expected_failures):
        return []
    chosen = bundled_baseline(args.expected_failures) if args.expected_failures else DEFAULT_EXPECTED_FAILURES
    return load_expected_failures(chosen)


def _list(checks: Sequence[Check], profile: str, *, attached: bool) -> int:
    """``--list``: a line a check (name, ids, in the generic profile what it needs and its weight,
    with ``--attached`` whether it gets the engine, then its links); 0, also when the reader
    stops early (``| head``)."""
    try:
        for c in checks:
            line = f"{c.name}\t{','.join(c.covers)}"
            if profile == "generic":
                line += f"\t{c.needs}\t{c.weight}"
            if attached:
                line += "\town engine" if c.own_engine else "\tattached"
            sys.stdout.write(line + "\t" + " ".join(check_links(c)) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader has all it wanted; the exit must not flush into the pipe again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    patterns = [p.strip() for item in args.only for p in item.split(",")]
    registered = [c for c in load_checks().values() if args.profile in c.profiles]
    checks = select([c for c in registered if args.official or not c.official], patterns)
    if not checks:
        hint = "" if args.official else " (official:* checks need --official)"
        raise UsageError("--only matched no check; use --list to see them" + hint)
    expected = _baseline(args)  # a baseline that cannot be read is bad usage, with --list too
    if args.list:
        return _list(checks, args.profile, attached=args.attached)
    if args.url is not None and args.profile != "generic":
        raise UsageError("--url is for --profile generic; the shadowcode profile starts its own gateway")
    if args.bearer_env and args.url is None:
        raise UsageError("--bearer-env needs --url")
    if args.target is None and args.url is None:
        raise UsageError("--target is required" + (" (or --url)" if args.profile == "generic" else ""))
    target = parse_target(args.target) if args.target is not None else []
    url = _check_url(args.url) if args.url is not None else None
    bearer = None
    if args.bearer_env:
        bearer = os.environ.get(args.bearer_env)
        if not bearer:
            raise UsageError(f"--bearer-env {args.bearer_env}: that variable is not set or empty")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    # A fixture the user named is loaded before anything is set up: bad usage changes nothing.
    given = load_project_factory(Path(args.fixture)) if args.fixture else None
    root = resource_root(c.group for c in checks)
    factory = given or load_project_factory(default_fixture_path(root))
    out_dir = Path(args.out)
    mode = EngineMode.ATTACHED if args.attached else EngineMode.TEMPORARY

    outcome = anyio.run(
        _unless_stopped,
        lambda: run_checks(
            checks,
            target=target,
            cwd=Path.cwd(),
            repo_root=root,
            project_factory=factory,
            jobs=args.jobs,
            engine=mode,
            url=url,
            bearer=bearer,
            profile=args.profile,
        ),
    )
    records = outcome.records
    if args.profile == "generic":  # a server of revision R is held to R's frozen set
        records = judge_at_revisions(records, outcome.revisions, load_checks())
    report = build_report(
        target,
        records,
        outcome.revisions,
        int(time.time()),
        expected_failures=expected,
        filtered_out=filtered_by_only(registered, checks, patterns),
        engine=mode.value if args.profile == "shadowcode" else NO_ENGINE,
        url=url,
        profile=args.profile,
    )
    json_path, md_path = write_report(out_dir, report)
    _summarize(report)
    sys.stderr.write(f"conformance: wrote {json_path} and {md_path}\n")
    if args.junit:
        sys.stderr.write(f"conformance: wrote {write_junit(Path(args.junit), report)}\n")
    return 1 if report_failed(report) else 0


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class RunStopped(ConformanceError):
    """A stop signal ended the run; every check's processes were swept first (exit 128 + the signal)."""

    def __init__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        super().__init__(f"stopped by {name}: the checks' processes and folders were removed; no report written")
        self.exit_code = 128 + signum


async def _unless_stopped(run: Callable[[], Awaitable[T]]) -> T:
    """``run()``, cancelled at SIGTERM, SIGHUP or SIGINT, so each check's cleanup stops what it started (CONF-01).

    The signals are watched before ``run`` starts anything; a second one while the checks
    clean up ends the process at once (the default action is back by then).

    Raises:
        RunStopped: a stop signal arrived before ``run`` finished.
    """
    received: list[int] = []

    async def watch(tg: TaskGroup, *, task_status: TaskStatus[None]) -> None:
        with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
            task_status.started()
            async for signum in signals:
                received.append(signum)
                tg.cancel_scope.cancel()
                return

    async with anyio.create_task_group() as tg:
        await tg.start(watch, tg)
        outcome = await run()  # finished before a signal took effect: the report is written
        tg.cancel_scope.cancel()
        return outcome
    raise RunStopped(received[0])


def _summarize(report: Mapping[str, Any]) -> None:
    """One summary line on stderr, then a line per failure, expected failure and bad baseline entry."""
    checks, baseline, s = report["checks"], report["expected_failures"], report["summary"]
    statuses = [c["status"] for c in checks]
    engine = report.get("engine", EngineMode.TEMPORARY.value)
    sys.stderr.write(
        f"conformance ({'generic profile' if engine == NO_ENGINE else engine + ' engine'}): "
        f"{statuses.count('pass')} checks passed, {statuses.count('fail')} failed, "
        f"{statuses.count('warn')} warned, {statuses.count('not_applicable')} not applicable, "
        f"{statuses.count('expected_fail')} failed as expected, {statuses.count('expected_warn')} warned as expected, "
        f"{statuses.count('not_run')} not run; "
        f"ids: {s['pass']} pass, {s['fail']} fail, {s['not_covered']} not covered\n"
    )
    for c in checks:
        if c["status"] == "fail":
            sys.stderr.write(f"  FAIL {c['name']}: {c['detail'][:300]}\n")
        elif c["status"] == "warn":
            sys.stderr.write(f"  WARN ({c['weight']}) {c['name']}: {c['detail'][:300]}\n")
        elif c["status"] == "expected_fail":
            sys.stderr.write(f"  EXPECTED FAIL {c['name']}: {c['reason']}\n")
        elif c.get("not_run") == "unavailable":
            sys.stderr.write(f"  NOT RUN {c['name']}: {c['detail'][:300]}\n")
    for e in baseline:
        if e["outcome"] == "stale":
            sys.stderr.write(f"  STALE {e['check']}: it passed; remove it from the baseline\n")
        elif e["outcome"] == "unknown":
            sys.stderr.write(f"  UNKNOWN {e['check']}: no check of this name ran; fix or remove the entry\n")
        elif e["outcome"] == "wrong_weight":
            sys.stderr.write(f"  WRONG WEIGHT {e['check']}: the entry says {e.get('weight')}; fix the entry\n")


def _check_url(url: str) -> str:
    """``--url`` as given, once it is an absolute http(s) URL with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url must be an http:// or https:// URL with a host, not {url!r}")
    return url


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conformance command line (CONF-01).

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        0 when every check passed or failed as the baseline expects; 1 when a check failed
        outside the baseline, a baseline entry is stale or unknown, or the run broke; 2 on
        bad usage or a malformed baseline.
    """
    try:
        return _run(sys.argv[1:] if argv is None else argv)
    except ConformanceError as exc:
        sys.stderr.write(f"conformance: {exc.message}\n")
        return exc.exit_code
    except OSError as exc:
        sys.stderr.write(f"conformance: {exc}\n")
        return 1
