"""The runner itself, run as a user would against the target, writes a complete report (CONF-01).

A nested ``python -m shadowcode_conformance`` run with one check (``cli_usage:json_serve_refused``)
and no baseline goes against the same target. Its ``report.json`` must list every
manifest id in order with a valid status, show the one check it ran with that check's
ids decided by it, leave every other id not covered, agree with the exit status, and
``report.md`` must carry a row per id.
"""

from __future__ import annotations

import json
import shlex

from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.requirements import requirement_ids
from shadowcode_conformance.resources import PACKAGE, helper_python

__all__ = ["judge_report", "nested_run_reports_every_id"]

_INNER_CHECK = "cli_usage:json_serve_refused"
_INNER_COVERS = ("SRV-02", "SRV-01")
_INNER_TIMEOUT_SECONDS = 90.0
_STAND_IN_FIXTURE = (
    "from pathlib import Path\n"
    "def make_sample_project(dest):\n"
    "    dest = Path(dest)\n"
    "    dest.mkdir(parents=True)\n"
    "    (dest / 'README.md').write_text('stand-in\\n', encoding='utf-8')\n"
    "    return dest.resolve()\n"
)


def judge_report(report: object, markdown: str, exit_status: int | None, target: list[str]) -> list[str]:
    """What is wrong with a one-check report, as sentences; empty when nothing is (CONF-01).

    Args:
        report: the parsed ``report.json``.
        markdown: the text of ``report.md``.
        exit_status: the nested run's exit status.
        target: the target argv the run was given.

    Returns:
        Problems found, in checking order.
    """
    doc = json_object(report)
    if doc is None:
        return ["report.json is not a JSON object"]
    problems: list[str] = []
    results = json_objects(doc.get("results"))
    ids = [r.get("id") for r in results]
    if ids != requirement_ids():
        problems.append(f"results list {len(ids)} ids, not the {len(requirement_ids())} manifest ids in order")
    statuses: dict[str, object] = {str(r.get("id")): r.get("status") for r in results}
    if bad := sorted(i for i, s in statuses.items() if s not in ("pass", "fail", "not_covered")):
        problems.append(f"ids with an invalid status: {bad}")
    checks = json_objects(doc.get("checks"))
    names = [c.get("name") for c in checks]
    if names != [_INNER_CHECK]:
        problems.append(f"checks are {names}, expected only {_INNER_CHECK}")
    else:
        ok = checks[0].get("ok") is True
        expected = "pass" if ok else "fail"
        for ident in _INNER_COVERS:
            if statuses.get(ident) != expected:
                problems.append(f"{ident} is {statuses.get(ident)!r} although its only check {expected}ed")
        if exit_status != (0 if ok else 1):
            problems.append(f"exit status {exit_status} disagrees with the check (ok={ok})")
    if stray := sorted(i for i, s in statuses.items() if i not in _INNER_COVERS and s != "not_covered"):
        problems.append(f"ids no check covered are not 'not_covered': {stray[:5]}")
    summary = doc.get("summary")
    counted = {s: sum(1 for v in statuses.values() if v == s) for s in ("pass", "fail", "not_covered")}
    if summary != counted:
        problems.append(f"summary {summary} does not count the ids {counted}")
    if doc.get("target") != target:
        problems.append(f"target is {doc.get('target')!r}, expected {target!r}")
    if missing := [i for i in requirement_ids() if f"| {i} |" not in markdown]:
        problems.append(f"report.md lacks rows for {missing[:5]}")
    return problems


@check("report_contract:nested_run_reports_every_id", covers=["CONF-01"], timeout_seconds=120)
async def nested_run_reports_every_id(ctx: Context) -> CheckResult:
    """A nested one-check run against the target writes a consistent report of every id (CONF-01)."""
    fixture = ctx.scratch / "stand_in_fixture.py"
    fixture.write_text(_STAND_IN_FIXTURE, encoding="utf-8")
    out = ctx.scratch / "nested report"
    bootstrap = (
        f"import runpy, sys; sys.path.insert(0, {str(PACKAGE.parent)!r}); "
        "runpy.run_module('shadowcode_conformance', run_name='__main__', alter_sys=True)"
    )
    argv = [helper_python(), "-c", bootstrap, "--target", shlex.join(ctx.target), "--only", _INNER_CHECK]
    argv += ["--out", str(out), "--fixture", str(fixture), "--no-expected-failures", "--jobs", "1"]
    done = await ctx.run(argv, timeout_seconds=_INNER_TIMEOUT_SECONDS)
    if done.timed_out:
        return CheckResult(False, f"the nested run did not finish in {_INNER_TIMEOUT_SECONDS:g} s")
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        markdown = (out / "report.md").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        return CheckResult(False, f"no readable report ({exc}); exit {done.returncode}, stderr: {tail(done.stderr)}")
    problems = judge_report(report, markdown, done.returncode, list(ctx.target))
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(
        True, f"exit {done.returncode}; report.json and report.md list all {len(requirement_ids())} ids consistently"
    )
