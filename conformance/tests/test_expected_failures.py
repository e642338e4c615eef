"""The expected-failures baseline: known failures pass the run, stale and unknown entries fail it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from shadowcode_conformance.cli import DEFAULT_EXPECTED_FAILURES, filtered_by_only, main
from shadowcode_conformance.errors import UsageError
from shadowcode_conformance.registry import Check, CheckResult
from shadowcode_conformance.report import (
    CheckRecord,
    ExpectedFailure,
    build_report,
    load_expected_failures,
    render_markdown,
    report_failed,
)
from shadowcode_conformance.verdicts import Verdict

HTTP_CHECK = "registration:claude_http_connected"


def _rec(name: str, covers: tuple[str, ...], ok: bool) -> CheckRecord:
    return CheckRecord(name, covers, ok, f"{name} detail", 0.1)


def _status(report: dict, ident: str) -> str:
    return next(r["status"] for r in report["results"] if r["id"] == ident)


def _baseline(*names: str) -> list[ExpectedFailure]:
    return [ExpectedFailure(n, f"{n} is known to fail") for n in names]


# --- report rules -----------------------------------------------------------------------


@pytest.mark.req("CONF-01")
def test_a_listed_failing_check_is_an_expected_fail_with_its_reason_and_the_run_passes() -> None:
    records = [_rec("a", ("REG-08",), True), _rec(HTTP_CHECK, ("REG-08", "REG-06"), False)]
    report = build_report(["t"], records, {}, 1, expected_failures=_baseline(HTTP_CHECK))
    row = next(c for c in report["checks"] if c["name"] == HTTP_CHECK)
    assert row["status"] == "expected_fail" and row["ok"] is False
    assert row["reason"] == f"{HTTP_CHECK} is known to fail"
    assert next(c for c in report["checks"] if c["name"] == "a")["status"] == "pass"
    assert report["expected_failures"] == [
        {"check": HTTP_CHECK, "reason": f"{HTTP_CHECK} is known to fail", "outcome": "failed_as_expected"}
    ]
    assert not report_failed(report)


@pytest.mark.req("CONF-01")
def test_an_expected_fail_counts_neither_for_nor_against_its_ids() -> None:
    records = [_rec("a", ("REG-08",), True), _rec(HTTP_CHECK, ("REG-08", "REG-06"), False)]
    report = build_report(["t"], records, {}, 1, expected_failures=_baseline(HTTP_CHECK))
    assert _status(report, "REG-08") == "pass"
    reg08 = next(r for r in report["results"] if r["id"] == "REG-08")
    assert reg08["checks"] == ["a"] and reg08["expected_fail"] == [HTTP_CHECK]
    # REG-06 is covered only by the expected failure: not covered, never pass.
    assert _status(report, "REG-06") == "not_covered"
    assert report["summary"]["fail"] == 0


@pytest.mark.req("CONF-01")
def test_without_a_baseline_the_same_failure_fails_its_ids_and_the_run() -> None:
    records = [_rec("a", ("REG-08",), True), _rec(HTTP_CHECK, ("REG-08", "REG-06"), False)]
    report = build_report(["t"], records, {}, 1)
    assert _status(report, "REG-08") == "fail" and _status(report, "REG-06") == "fail"
    assert next(c for c in report["checks"] if c["name"] == HTTP_CHECK)["status"] == "fail"
    assert report["expected_failures"] == [] and report_failed(report)


@pytest.mark.req("CONF-01")
def test_a_failure_outside_the_baseline_still_fails_the_run() -> None:
    records = [_rec("other", ("SRV-04",), False), _rec(HTTP_CHECK, ("REG-06",), False)]
    report = build_report(["t"], records, {}, 1, expected_failures=_baseline(HTTP_CHECK))
    assert report_failed(report) and _status(report, "SRV-04") == "fail"


@pytest.mark.req("CONF-01")
def test_a_listed_check_that_passes_is_stale_and_fails_the_run() -> None:
    report = build_report(["t"], [_rec(HTTP_CHECK, ("REG-06",), True)], {}, 1, expected_failures=_baseline(HTTP_CHECK))
    assert report["expected_failures"][0]["outcome"] == "stale"
    assert report["checks"][0]["status"] == "pass" and "reason" not in report["checks"][0]
    assert _status(report, "REG-06") == "pass"
    assert report_failed(report)
    assert "remove it from the baseline" in render_markdown(report)


@pytest.mark.req("CONF-01")
def test_a_racy_entry_that_passes_is_no_stale_entry_but_one_not_applicable_still_is() -> None:
    racy = [ExpectedFailure(HTTP_CHECK, "a race in the target", racy=True)]
    report = build_report(["t"], [_rec(HTTP_CHECK, ("REG-06",), True)], {}, 1, expected_failures=racy)
    assert report["expected_failures"][0]["outcome"] == "passed_this_time"
    assert not report_failed(report) and "passed this time" in render_markdown(report)
    failing = build_report(["t"], [_rec(HTTP_CHECK, ("REG-06",), False)], {}, 1, expected_failures=racy)
    assert failing["expected_failures"][0]["outcome"] == "failed_as_expected" and not report_failed(failing)
    skipped = CheckRecord(HTTP_CHECK, ("REG-06",), True, "elsewhere", 0.1, verdict=Verdict.NOT_APPLICABLE)
    assert build_report(["t"], [skipped], {}, 1, expected_failures=racy)["expected_failures"][0]["outcome"] == "stale"


@pytest.mark.req("CONF-01")
def test_a_listed_name_that_matched_no_check_is_unknown_and_fails_the_run() -> None:
    report = build_report(["t"], [_rec("a", ("SRV-01",), True)], {}, 1, expected_failures=_baseline("nope:nothing"))
    assert report["expected_failures"] == [
        {"check": "nope:nothing", "reason": "nope:nothing is known to fail", "outcome": "unknown"}
    ]
    assert report_failed(report)
    assert "**UNKNOWN**" in render_markdown(report)


@pytest.mark.req("CONF-01")
def test_a_listed_name_left_out_by_only_is_neither_reported_nor_failing() -> None:
    report = build_report(
        ["t"],
        [_rec("a", ("SRV-01",), True)],
        {},
        1,
        expected_failures=_baseline(HTTP_CHECK),
        filtered_out=lambda name: name == HTTP_CHECK,
    )
    assert report["expected_failures"] == [] and not report_failed(report)


@pytest.mark.req("SRV-03", "CONF-01")
def test_the_synthesized_revisions_check_can_be_baselined() -> None:
    records = [_rec("client:auto", ("SRV-03",), True)]
    report = build_report(
        ["t"], records, {"client:auto": "2026-07-28"}, 1, expected_failures=_baseline("report:protocol_revisions")
    )
    assert report["expected_failures"][0]["outcome"] == "failed_as_expected"
    assert _status(report, "SRV-03") == "pass" and not report_failed(report)


@pytest.mark.req("CONF-01")
def test_markdown_shows_statuses_reasons_and_outcomes() -> None:
    records = [_rec("a", ("REG-08",), True), _rec("b", ("SRV-01",), False), _rec(HTTP_CHECK, ("REG-06",), False)]
    report = build_report(["t"], records, {}, 1, expected_failures=_baseline(HTTP_CHECK))
    text = render_markdown(report)
    assert "## Expected failures" in text and "failed as expected" in text
    assert f"| `{HTTP_CHECK}` | expected fail |" in text and f"(baseline: {HTTP_CHECK} is known to fail)" in text
    assert "| `b` | **FAIL** |" in text and "| `a` | pass |" in text
    assert "1 passed, 1 failed, 0 warned, 0 not applicable, 1 expected failures" in text
    assert f"`{HTTP_CHECK}` (expected fail)" in text and "- Result: **FAIL**" in text


# --- which names --only leaves out ------------------------------------------------------


async def _noop(ctx: object) -> CheckResult:
    return CheckResult(True, "")


def _chk(name: str, group: str) -> Check:
    return Check(name, group, ("SRV-01",), _noop, 1.0)


@pytest.mark.req("CONF-01")
def test_only_leaves_out_unselected_checks_and_unmatched_sub_checks() -> None:
    usage, http, probe = _chk("cli_usage:x", "cli_usage"), _chk(HTTP_CHECK, "registration"), _chk("node:p", "node")
    left_out = filtered_by_only([usage, http, probe], [usage], ["cli_usage"])
    assert left_out(HTTP_CHECK) and left_out("stdio_sdk1:tool_status")
    assert not left_out("cli_usage:x") and not left_out("cli_usage:no_such_check")
    assert not filtered_by_only([usage, http], [usage, http], [])(HTTP_CHECK)
    assert not filtered_by_only([usage, probe], [probe], ["sdk1"])("stdio_sdk1:tool_status")


# --- loading the file -------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "baseline.yml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.req("CONF-01")
def test_the_shipped_baseline_loads_and_gives_a_reason_for_every_entry() -> None:
    entries = load_expected_failures(DEFAULT_EXPECTED_FAILURES)
    assert all(e.check and e.reason for e in entries)
    assert len({e.check for e in entries}) == len(entries)


@pytest.mark.req("CONF-01")
def test_a_baseline_file_loads_in_order_and_an_empty_one_is_empty(tmp_path: Path) -> None:
    path = _write(tmp_path, '- check: "a:b"\n  reason: "why"\n- check: c:d\n  reason: >\n    folded\n    text\n')
    assert load_expected_failures(path) == [ExpectedFailure("a:b", "why"), ExpectedFailure("c:d", "folded text")]
    assert load_expected_failures(_write(tmp_path, "# nothing listed\n")) == []
    assert load_expected_failures(_write(tmp_path, "[]\n")) == []


@pytest.mark.req("CONF-01")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- check: [unclosed\n", "not valid YAML"),
        ("check: a\nreason: b\n", "must be a YAML list"),
        ("- just a string\n", "entry 1: must be a mapping"),
        ("- reason: why\n", "'check' must be a non-empty string"),
        ("- check: a:b\n", "'reason' must be a non-empty string"),
        ("- check: a:b\n  reason: '  '\n", "'reason' must be a non-empty string"),
        ("- check: a:b\n  reason: why\n  reasn: typo\n", "unknown key(s) reasn"),
        ("- check: a:b\n  reason: x\n- check: a:b\n  reason: y\n", "entry 2: 'a:b' is listed twice"),
        ("- check: a:b\n  reason: why\n  racy: sometimes\n", "'racy' must be true or false"),
    ],
)
def test_a_malformed_baseline_is_a_usage_error_naming_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match="expected failures") as caught:
        load_expected_failures(_write(tmp_path, text))
    assert caught.value.exit_code == 2 and message in caught.value.message


@pytest.mark.req("CONF-01")
def test_a_missing_baseline_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read expected failures"):
        load_expected_failures(tmp_path / "absent.yml")


# --- the command line -------------------------------------------------------------------


def _stand_in_fixture(folder: Path) -> Path:
    fixture = folder / "stand_in_fixture.py"
    fixture.write_text(
        "from pathlib import Path\n"
        "def make_sample_project(dest):\n"
        "    dest = Path(dest); dest.mkdir(parents=True); (dest / 'README.md').write_text('x\\n', encoding='utf-8')\n"
        "    return dest\n",
        encoding="utf-8",
    )
    return fixture


def _cli(tmp_path: Path, target: str, baseline: str | None, *extra: str) -> tuple[int, dict | None]:
    out = tmp_path / "out"
    argv = ["--target", target, "--out", str(out), "--fixture", str(_stand_in_fixture(tmp_path)), *extra]
    if baseline is not None:
        argv += ["--expected-failures", str(_write(tmp_path, baseline))]
    code = main(argv)
    report_path = out / "report.json"
    return code, json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else None


@pytest.mark.req("CONF-01")
def test_bad_yaml_exits_2_with_a_clear_message_before_running_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _cli(tmp_path, "true", "- check: [unclosed\n", "--only", "cli_usage:json_serve_refused")
    captured = capsys.readouterr()
    assert code == 2 and report is None and captured.out == ""
    assert captured.err.startswith("conformance: expected failures ") and "is not valid YAML" in captured.err


@pytest.mark.req("CONF-01")
def test_both_baseline_options_at_once_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--target", "true", "--expected-failures", "x.yml", "--no-expected-failures"]) == 2
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.req("CONF-01")
def test_cli_a_baselined_failure_exits_0_and_is_reported_as_expected_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = '- check: "cli_usage:json_serve_refused"\n  reason: "this target ignores --json"\n'
    code, report = _cli(tmp_path, "true", baseline, "--only", "cli_usage:json_serve_refused")
    assert code == 0 and report is not None
    assert report["checks"][0]["status"] == "expected_fail"
    assert report["checks"][0]["reason"] == "this target ignores --json"
    assert _status(report, "SRV-02") == "not_covered"
    assert "EXPECTED FAIL cli_usage:json_serve_refused: this target ignores --json" in capsys.readouterr().err


@pytest.mark.req("CONF-01")
def test_cli_no_expected_failures_makes_the_same_failure_exit_1(tmp_path: Path) -> None:
    code, report = _cli(tmp_path, "true", None, "--only", "cli_usage:json_serve_refused", "--no-expected-failures")
    assert code == 1 and report is not None and report["checks"][0]["status"] == "fail"


@pytest.mark.req("CONF-01")
def test_cli_a_stale_entry_exits_1_and_names_it(
    tmp_path: Path, fake_target, capsys: pytest.CaptureFixture[str]
) -> None:
    target = shlex.join(fake_target("--exit-right"))
    baseline = '- check: "cli_usage:json_serve_refused"\n  reason: "was broken once"\n'
    code, report = _cli(tmp_path, target, baseline, "--only", "cli_usage:json_serve_refused")
    assert code == 1 and report is not None
    assert report["checks"][0]["status"] == "pass"
    assert report["expected_failures"][0]["outcome"] == "stale"
    assert "STALE cli_usage:json_serve_refused: it passed; remove it from the baseline" in capsys.readouterr().err


@pytest.mark.req("CONF-01")
def test_cli_an_unknown_entry_exits_1_unless_only_left_it_out(tmp_path: Path, fake_target) -> None:
    target = shlex.join(fake_target("--exit-right"))
    only = ["--only", "cli_usage:json_serve_refused"]
    unknown = '- check: "cli_usage:json_serve_refused_twice"\n  reason: "typo in the name"\n'
    code, report = _cli(tmp_path, target, unknown, *only)
    assert code == 1 and report is not None and report["expected_failures"][0]["outcome"] == "unknown"
    left_out = f'- check: "{HTTP_CHECK}"\n  reason: "not selected by --only"\n'
    code, report = _cli(tmp_path, target, left_out, *only)
    assert code == 0 and report is not None and report["expected_failures"] == []
