"""``--junit FILE``: the run as JUnit XML that a JUnit parser reads back."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from shadowcode_conformance.cli import main
from shadowcode_conformance.junit import render_junit
from shadowcode_conformance.report import CheckRecord, ExpectedFailure, build_report
from shadowcode_conformance.requirements import requirement_ids


def _report() -> dict:
    records = [
        CheckRecord("cli_usage:json_serve_refused", ("SRV-02", "SRV-01"), True, "exit 2", 0.5),
        CheckRecord("boundaries:notes_sqlite_map", ("SRV-12",), False, "replace \x01 was not refused\nmore", 2.25),
        CheckRecord("registration:claude_http_connected", ("REG-08",), False, "no gateway", 0.1),
    ]
    baseline = [
        ExpectedFailure("registration:claude_http_connected", "not built yet"),
        ExpectedFailure("cli_usage:json_serve_refused", "stale on purpose"),
    ]
    return build_report(["python3", "x.pyz"], records, {}, 0, expected_failures=baseline)


@pytest.mark.req("CONF-01")
def test_junit_has_a_case_per_check_and_per_requirement_with_failures_and_skips() -> None:
    root = ET.fromstring(render_junit(_report()))
    assert root.tag == "testsuites"
    checks, requirements = root.findall("testsuite")
    assert checks.get("name") == "conformance.checks"
    cases = {c.get("name"): c for c in checks.findall("testcase")}
    assert set(cases) == {
        "cli_usage:json_serve_refused",
        "boundaries:notes_sqlite_map",
        "registration:claude_http_connected",
        "baseline:cli_usage:json_serve_refused",
    }
    failed = cases["boundaries:notes_sqlite_map"].find("failure")
    assert failed is not None and failed.get("message") == "replace ? was not refused"
    assert "more" in (failed.text or "")
    assert cases["boundaries:notes_sqlite_map"].get("classname") == "boundaries"
    assert cases["boundaries:notes_sqlite_map"].get("time") == "2.250"
    covers = cases["cli_usage:json_serve_refused"].find("properties/property")
    assert covers is not None and covers.get("value") == "SRV-02,SRV-01"
    skipped = cases["registration:claude_http_connected"].find("skipped")
    assert skipped is not None and "not built yet" in (skipped.get("message") or "")
    stale = cases["baseline:cli_usage:json_serve_refused"].find("failure")
    assert stale is not None and "stale" in (stale.get("message") or "")
    assert (checks.get("tests"), checks.get("failures"), checks.get("skipped")) == ("4", "2", "1")
    ids = [c.get("name") for c in requirements.findall("testcase")]
    assert ids == requirement_ids()
    by_id = {c.get("name"): c for c in requirements.findall("testcase")}
    assert by_id["SRV-02"].find("failure") is None and by_id["SRV-02"].find("skipped") is None
    assert by_id["SRV-12"].find("failure") is not None
    assert by_id["REG-08"].find("skipped") is not None
    assert root.get("tests") == str(4 + len(ids))


@pytest.mark.req("CONF-01")
def test_junit_option_writes_the_file_next_to_the_report(tmp_path: Path, fake_target) -> None:
    target = " ".join(fake_target("--exit-right"))
    junit = tmp_path / "ci" / "conformance.xml"
    code = main(
        [
            "--target",
            target,
            "--only",
            "cli_usage:json_serve_refused",
            "--out",
            str(tmp_path / "out"),
            "--junit",
            str(junit),
            "--no-expected-failures",
        ]
    )
    assert code == 0
    root = ET.parse(junit).getroot()
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases if c.get("classname") != "requirements"] == ["cli_usage:json_serve_refused"]
    assert root.get("failures") == "0"
    assert (tmp_path / "out" / "report.json").is_file()
