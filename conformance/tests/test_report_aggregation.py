"""Report aggregation: pass / fail / not covered per id, and the SRV-03 revision rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowcode_conformance.report import REVISIONS_CHECK, CheckRecord, build_report, render_markdown, write_report
from shadowcode_conformance.requirements import requirement_ids


def _rec(name: str, covers: tuple[str, ...], ok: bool) -> CheckRecord:
    return CheckRecord(name, covers, ok, f"{name} detail", 0.5)


def _status(report: dict, ident: str) -> str:
    return next(r["status"] for r in report["results"] if r["id"] == ident)


@pytest.mark.req("CONF-01")
def test_id_passes_only_when_every_covering_check_passed() -> None:
    records = [_rec("a", ("SRV-04",), True), _rec("b", ("SRV-04", "SRV-05"), True), _rec("c", ("SRV-05",), False)]
    report = build_report(["t"], records, {}, 1)
    assert _status(report, "SRV-04") == "pass"
    assert _status(report, "SRV-05") == "fail"
    assert _status(report, "SRV-06") == "not_covered"
    row = next(r for r in report["results"] if r["id"] == "SRV-05")
    assert row["checks"] == ["b", "c"]


@pytest.mark.req("CONF-01")
def test_report_lists_every_id_and_counts_ids_in_the_summary() -> None:
    report = build_report(["t"], [_rec("a", ("ENG-01",), True), _rec("b", ("ENG-02",), False)], {}, 7)
    assert [r["id"] for r in report["results"]] == requirement_ids()
    assert report["summary"] == {"pass": 1, "fail": 1, "not_covered": len(requirement_ids()) - 2}
    assert report["generated_at"] == 7 and report["target"] == ["t"]
    assert set(report["checks"][0]) == {
        "name",
        "covers",
        "ok",
        "status",
        "verdict",
        "weight",
        "source",
        "links",
        "detail",
        "seconds",
    }


@pytest.mark.req("SRV-03")
def test_fails_when_only_the_modern_revision_was_exercised() -> None:
    records = [_rec("client:auto", ("SRV-03",), True)]
    report = build_report(["t"], records, {"client:auto": "2026-07-28"}, 1)
    assert _status(report, "SRV-03") == "fail"
    synthesized = next(c for c in report["checks"] if c["name"] == REVISIONS_CHECK)
    assert not synthesized["ok"] and "initialize-era" in synthesized["detail"]


@pytest.mark.req("SRV-03")
def test_fails_when_only_a_legacy_revision_was_exercised() -> None:
    report = build_report(["t"], [_rec("x", ("SRV-03",), True)], {"x": "2025-11-25"}, 1)
    assert _status(report, "SRV-03") == "fail"
    assert "2026-07-28" in next(c["detail"] for c in report["checks"] if c["name"] == REVISIONS_CHECK)


@pytest.mark.req("SRV-03")
def test_passes_with_the_modern_and_one_legacy_revision() -> None:
    revisions = {"client:auto": "2026-07-28", "probe": "2024-11-05"}
    report = build_report(["t"], [_rec("client:auto", ("SRV-03",), True)], revisions, 1)
    assert _status(report, "SRV-03") == "pass"
    assert report["protocol_revisions"] == {"client:auto": "2026-07-28", "probe": "2024-11-05"}


@pytest.mark.req("SRV-03")
def test_stays_not_covered_when_no_check_covering_it_ran() -> None:
    report = build_report(["t"], [_rec("purity", ("SRV-01",), True)], {"purity": "2025-11-25"}, 1)
    assert _status(report, "SRV-03") == "not_covered"
    assert all(c["name"] != REVISIONS_CHECK for c in report["checks"])


@pytest.mark.req("SRV-03")
def test_unknown_revision_strings_do_not_count_as_legacy() -> None:
    revisions = {"a": "2026-07-28", "b": "1999-01-01"}
    report = build_report(["t"], [_rec("a", ("SRV-03",), True)], revisions, 1)
    assert _status(report, "SRV-03") == "fail"


@pytest.mark.req("CONF-01")
def test_reports_are_written_as_json_and_markdown(tmp_path: Path) -> None:
    report = build_report(["python3", "x.pyz"], [_rec("a|b", ("SRV-01",), False)], {}, 3)
    json_path, md_path = write_report(tmp_path / "out", report)
    assert json.loads(json_path.read_text(encoding="utf-8")) == report
    text = md_path.read_text(encoding="utf-8")
    for ident in requirement_ids():
        assert f"| {ident} |" in text
    assert "a\\|b" in text and "**FAIL**" in text
    assert render_markdown(report) == text
