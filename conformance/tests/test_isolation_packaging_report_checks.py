"""The project-isolation, packaging and report-contract checks fail targets that do not behave."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from check_runs import run_check, stand_in_project

from shadowcode_conformance.checks.packaging import scrubbed_env
from shadowcode_conformance.checks.report_contract import judge_report
from shadowcode_conformance.report import CheckRecord, build_report, render_markdown
from shadowcode_conformance.requirements import requirement_ids

INNER = "cli_usage:json_serve_refused"


def _run(name: str, target: list[str]) -> list[CheckRecord]:
    return run_check(name, target, stand_in_project, bound_seconds=60)


@pytest.mark.req("ENG-01", "ENG-02", "SRV-07", "SRV-08", "SRV-09")
@pytest.mark.parametrize(
    ("name", "ident"),
    [
        ("project_isolation:profiles_are_separate", "ENG-01"),
        ("project_isolation:canonical_project", "ENG-02"),
        ("project_isolation:server_leaves_nothing_behind", "SRV-07"),
        ("project_isolation:fixed_project", "SRV-08"),
        ("project_isolation:read_only_by_default", "SRV-09"),
    ],
)
def test_isolation_checks_fail_a_target_that_serves_no_mcp(name: str, ident: str) -> None:
    records = _run(name, ["true"])
    assert ident in records[0].covers
    assert all(not r.ok for r in records)
    assert all("session" in r.detail for r in records if r is not records[0] or len(records) == 1), records


@pytest.mark.req("ENG-01")
def test_a_refused_trust_command_fails_the_isolation_check() -> None:
    records = _run("project_isolation:profiles_are_separate", ["false"])
    assert not records[0].ok and "trust --level workspace" in records[0].detail


@pytest.mark.req("PKG-01")
def test_scrubbed_environment_holds_only_path_and_home() -> None:
    assert scrubbed_env("/usr/bin:/bin", "/tmp/h") == {"PATH": "/usr/bin:/bin", "HOME": "/tmp/h"}


def _env_sensitive_target(folder: Path, needs: str | None) -> list[str]:
    """A fake target whose --help and status work only when ``needs`` is (or, for None, no extra variable is) set."""
    script = folder / "env_target.py"
    condition = f"{needs!r} in os.environ" if needs else "not ({'PYTHONPATH', 'SHADOWCODE_HOME'} & set(os.environ))"
    script.write_text(
        "import os, sys\n"
        f"ok = {condition}\n"
        "if '--help' in sys.argv: print('Usage: target [OPTIONS] COMMAND (trust, status, mcp)')\n"
        "elif 'status' in sys.argv: print('profile default')\n"
        "sys.exit(0 if ok else 5)\n",
        encoding="utf-8",
    )
    return [sys.executable, str(script)]


@pytest.mark.req("PKG-01")
def test_packaging_check_runs_the_target_without_the_callers_variables(tmp_path: Path) -> None:
    records = _run("packaging:bare_environment", _env_sensitive_target(tmp_path, None))
    by_name = {r.name: r for r in records}
    assert by_name["packaging:bare_environment:help"].ok, by_name["packaging:bare_environment:help"].detail
    assert by_name["packaging:bare_environment:status"].ok
    assert not by_name["packaging:bare_environment:mcp_serve"].ok
    assert not records[0].ok and "failed: mcp_serve" in records[0].detail


@pytest.mark.req("PKG-01")
def test_packaging_check_fails_a_target_that_needs_more_than_path_and_home(tmp_path: Path) -> None:
    records = _run("packaging:bare_environment", _env_sensitive_target(tmp_path, "SHADOWCODE_HOME"))
    assert not records[0].ok and "failed: help, status, mcp_serve" in records[0].detail
    assert "exit 5" in {r.name: r for r in records}["packaging:bare_environment:help"].detail


def _one_check_report(ok: bool) -> dict:
    return build_report(["t"], [CheckRecord(INNER, ("SRV-02", "SRV-01"), ok, "d", 0.1)], {}, 1)


@pytest.mark.req("CONF-01")
def test_report_judge_accepts_a_consistent_one_check_report() -> None:
    for ok in (True, False):
        report = _one_check_report(ok)
        assert judge_report(report, render_markdown(report), 0 if ok else 1, ["t"]) == []


@pytest.mark.req("CONF-01")
def test_report_judge_catches_missing_ids_wrong_statuses_and_a_lying_exit_status() -> None:
    report = _one_check_report(True)
    markdown = render_markdown(report)
    assert any("exit status 1" in p for p in judge_report(report, markdown, 1, ["t"]))
    assert any("target is" in p for p in judge_report(report, markdown, 0, ["other"]))
    short = dict(report, results=report["results"][:-1])
    count = len(requirement_ids())
    assert any(f"not the {count} manifest ids" in p for p in judge_report(short, markdown, 0, ["t"]))
    flipped = dict(report, results=[dict(r, status="fail") if r["id"] == "SRV-02" else r for r in report["results"]])
    problems = judge_report(flipped, markdown, 0, ["t"])
    assert any("SRV-02 is 'fail'" in p for p in problems) and any("summary" in p for p in problems)
    stray = dict(report, results=[dict(r, status="pass") if r["id"] == "GW-01" else r for r in report["results"]])
    assert any("not 'not_covered'" in p for p in judge_report(stray, markdown, 0, ["t"]))
    assert any("report.md lacks" in p for p in judge_report(report, markdown.replace("| CW-08 |", ""), 0, ["t"]))
    assert judge_report([], "", 0, ["t"]) == ["report.json is not a JSON object"]


@pytest.mark.req("CONF-01")
def test_nested_run_check_accepts_a_run_whose_one_check_failed_consistently() -> None:
    # `true` fails cli_usage:json_serve_refused, so the nested run exits 1 with SRV-02 failing:
    # the report is still consistent, so the CONF-01 check itself passes.
    records = _run("report_contract:nested_run_reports_every_id", ["true"])
    assert records[0].ok, records[0].detail
    assert "exit 1" in records[0].detail
