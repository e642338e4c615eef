"""The verdict model: weights, sources, pass / fail / warn / not applicable, in every output (CONF-01)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.errors import UsageError
from shadowcode_conformance.junit import render_junit
from shadowcode_conformance.official_verdicts import RequirementSet, judge_requirement_set, scenario_verdict
from shadowcode_conformance.registry import CHECKS, CheckResult, SubResult, check, load_checks
from shadowcode_conformance.report import (
    REVISIONS_CHECK,
    CheckRecord,
    ExpectedFailure,
    build_report,
    load_expected_failures,
    render_markdown,
    report_failed,
    revisions_record,
)
from shadowcode_conformance.runner import run_one
from shadowcode_conformance.verdicts import OFFICIAL_STATUS, Verdict, Weight, judge

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"


def _rec(name: str, covers: tuple[str, ...], ok: bool, **kw) -> CheckRecord:
    return CheckRecord(name, covers, ok, f"{name} detail", 0.1, **kw)


def _row(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["name"] == name)


def _id(report: dict, ident: str) -> dict:
    return next(r for r in report["results"] if r["id"] == ident)


@pytest.mark.req("CONF-01")
def test_a_broken_must_rule_fails_and_a_broken_should_or_robustness_rule_warns() -> None:
    assert judge(True, Weight.MUST) is Verdict.PASS and judge(False, Weight.MUST) is Verdict.FAIL
    assert judge(False, Weight.SHOULD) is Verdict.WARN and judge(False, Weight.ROBUSTNESS) is Verdict.WARN
    assert judge(True, Weight.ROBUSTNESS) is Verdict.PASS
    with pytest.raises(ValueError):
        judge(False, "nice to have")
    assert OFFICIAL_STATUS == {
        "SUCCESS": Verdict.PASS,
        "WARNING": Verdict.WARN,
        "FAILURE": Verdict.FAIL,
        "SKIPPED": Verdict.NOT_APPLICABLE,
        "INFO": Verdict.NOT_APPLICABLE,
    }


@pytest.mark.req("CONF-01")
def test_warn_and_not_applicable_are_reported_with_reason_weight_and_source_and_fail_nothing() -> None:
    records = [
        _rec("g:must", ("SRV-01",), True, source="https://spec/a"),
        _rec("g:robust", ("SRV-01",), False, weight=Weight.ROBUSTNESS, source="https://spec/b"),
        _rec("g:na", ("SRV-03",), False, verdict=Verdict.NOT_APPLICABLE, source="https://spec/c"),
    ]
    report = build_report(["t"], records, {}, 1, profile="generic")
    assert not report_failed(report)
    robust = _row(report, "g:robust")
    assert (robust["status"], robust["verdict"], robust["weight"], robust["ok"]) == (
        "warn",
        "warn",
        "robustness",
        False,
    )
    assert robust["source"] == "https://spec/b" and robust["detail"] == "g:robust detail"
    na = _row(report, "g:na")
    assert (na["status"], na["verdict"], na["weight"]) == ("not_applicable", "not_applicable", "must")
    # A warn does not fail its id; it is named under "warn". A not-applicable check counts for no id.
    assert _id(report, "SRV-01")["status"] == "pass" and _id(report, "SRV-01")["warn"] == ["g:robust"]
    assert _id(report, "SRV-03")["status"] == "not_covered" and _id(report, "SRV-03")["checks"] == []
    assert report["verdicts"] == {
        "pass": 1,
        "fail": 0,
        "warn": 1,
        "not_applicable": 1,
        "expected_fail": 0,
        "expected_warn": 0,
        "not_run": 0,
    }
    # The same robustness finding judged as a must rule fails the run and its id.
    strict = build_report(["t"], [_rec("g:robust", ("SRV-01",), False)], {}, 1)
    assert report_failed(strict) and _id(strict, "SRV-01")["status"] == "fail"


@pytest.mark.req("CONF-01")
def test_baseline_entries_cover_warnings_and_their_weight_is_held_against_the_checks() -> None:
    records = [
        _rec("g:robust", ("SRV-01",), False, weight=Weight.ROBUSTNESS),
        _rec("g:must", ("SRV-01",), False),
        _rec("g:na", ("SRV-03",), False, verdict=Verdict.NOT_APPLICABLE),
    ]
    baseline = [
        ExpectedFailure("g:robust", "drops it", Weight.ROBUSTNESS),
        ExpectedFailure("g:must", "breaks it", Weight.MUST),
    ]
    report = build_report(["t"], records, {}, 1, expected_failures=baseline)
    assert _row(report, "g:robust")["status"] == "expected_warn" and _row(report, "g:must")["status"] == "expected_fail"
    assert [e["outcome"] for e in report["expected_failures"]] == ["warned_as_expected", "failed_as_expected"]
    assert report["expected_failures"][0]["weight"] == "robustness" and not report_failed(report)
    # An entry whose weight differs from the check's, or whose check did not apply, fails the run.
    wrong = build_report(["t"], records, {}, 1, expected_failures=[ExpectedFailure("g:robust", "x", Weight.MUST)])
    assert wrong["expected_failures"][0]["outcome"] == "wrong_weight" and report_failed(wrong)
    stale = build_report(["t"], records, {}, 1, expected_failures=[ExpectedFailure("g:na", "x")])
    assert stale["expected_failures"][0]["outcome"] == "stale" and report_failed(stale)


@pytest.mark.req("CONF-01")
def test_a_baseline_file_may_state_a_weight_and_only_a_known_one(tmp_path: Path) -> None:
    good = tmp_path / "good.yml"
    good.write_text(
        '- check: "a"\n  reason: "why"\n  weight: should\n- check: "b"\n  reason: "why"\n', encoding="utf-8"
    )
    assert [(e.check, e.weight) for e in load_expected_failures(good)] == [("a", "should"), ("b", "")]
    bad = tmp_path / "bad.yml"
    bad.write_text('- check: "a"\n  reason: "why"\n  weight: cosmetic\n', encoding="utf-8")
    with pytest.raises(UsageError, match="cosmetic"):
        load_expected_failures(bad)


@pytest.mark.req("CONF-01", "SRV-03")
def test_one_era_fails_srv03_in_the_shadowcode_profile_and_is_a_fact_in_the_generic_one() -> None:
    records = [_rec("g:legacy", ("SRV-03",), True)]
    revisions = {"g:legacy": "2025-11-25"}
    strict = revisions_record(records, revisions)
    fact = revisions_record(records, revisions, "generic")
    assert strict is not None and strict.judged == Verdict.FAIL
    assert fact is not None and fact.judged == Verdict.NOT_APPLICABLE and "2025-11-25" in fact.detail
    report = build_report(["t"], records, revisions, 1, profile="generic")
    assert _row(report, REVISIONS_CHECK)["status"] == "not_applicable" and not report_failed(report)
    assert _id(report, "SRV-03")["status"] == "pass"


@pytest.mark.req("CONF-01")
def test_junit_shows_not_applicable_as_skipped_and_warn_as_passed_with_its_finding() -> None:
    records = [
        _rec("g:robust", ("SRV-01",), False, weight=Weight.ROBUSTNESS, source="https://spec/b", links=("https://spec/b",)),
        _rec("g:na", ("SRV-03",), False, verdict=Verdict.NOT_APPLICABLE),
        _rec("g:must", ("SRV-01",), False),
    ]
    root = ET.fromstring(render_junit(build_report(["t"], records, {}, 1)))
    cases = {c.get("name"): c for c in root.find("testsuite").findall("testcase")}
    warn = cases["g:robust"]
    assert warn.find("failure") is None and warn.find("skipped") is None
    assert (warn.findtext("system-out") or "").startswith("warn (robustness): g:robust detail")
    props = {p.get("name"): p.get("value") for p in warn.find("properties")}
    assert props == {
        "covers": "SRV-01",
        "verdict": "warn",
        "weight": "robustness",
        "source": "https://spec/b",
        "links": "https://spec/b",
    }
    skipped = cases["g:na"].find("skipped")
    assert skipped is not None and skipped.get("message") == "not applicable: g:na detail"
    assert cases["g:na"].find("failure") is None
    assert cases["g:must"].find("failure") is not None
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "1")


@pytest.mark.req("CONF-01")
def test_markdown_names_each_verdict_weight_and_source() -> None:
    records = [
        _rec("g:robust", ("SRV-01",), False, weight=Weight.ROBUSTNESS, source="https://spec/b"),
        _rec("g:na", ("SRV-03",), False, verdict=Verdict.NOT_APPLICABLE),
    ]
    text = render_markdown(build_report(["t"], records, {}, 1))
    assert "| `g:robust` | warn | robustness | 0.10 | SRV-01 | g:robust detail | https://spec/b |" in text
    assert "| `g:na` | n/a | must |" in text and "1 warned, 1 not applicable" in text


@pytest.mark.req("CONF-01")
def test_a_check_states_a_known_weight_and_every_generic_one_names_its_section() -> None:
    load_checks()
    with pytest.raises(ValueError, match="weight"):
        check("test:bad_weight", covers=["SRV-01"], weight="nice")
    generic = [c for c in CHECKS.values() if "generic" in c.profiles]
    assert generic and all(c.source.startswith("https://") for c in generic if not c.official)
    assert {c.weight for c in generic} == {"must", "should", "robustness"}
    assert CHECKS["generic:modern_discover"].revisions == ("2026-07-28",)
    assert CHECKS["generic:batch_of_2025_03_26"].revisions == ("2025-03-26",)
    shadowcode = CHECKS["cli_usage:json_serve_refused"]
    assert shadowcode.weight == "must" and shadowcode.source == "ShadowCode contract: SRV-02, SRV-01"


def _project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    return dest.resolve()


@pytest.mark.req("CONF-01")
def test_the_runner_records_a_checks_own_verdict_and_gives_sub_checks_its_weight() -> None:
    async def fn(ctx) -> CheckResult:
        result = CheckResult.not_applicable("the server claims 2025-11-25 only")
        result.subresults = [
            SubResult("test:verdicts_probe:inner", ("SRV-01",), False, "dropped"),
            SubResult("test:verdicts_probe:told", ("SRV-01",), False, "said so", verdict=Verdict.WARN, weight="should"),
        ]
        return result

    name = "test:verdicts_probe"
    CHECKS.pop(name, None)
    check(name, covers=["SRV-01"], weight=Weight.ROBUSTNESS, source="https://spec/x")(fn)
    chk = CHECKS.pop(name)

    async def go():
        with anyio.fail_after(30):
            return await run_one(
                chk, target=["true"], cwd=Path.cwd(), repo_root=SUITE, project_factory=_project
            )

    records, _ = anyio.run(go)
    assert [(r.name, r.judged, r.weight, r.source) for r in records] == [
        (name, "not_applicable", "robustness", "https://spec/x"),
        (f"{name}:inner", "warn", "robustness", "https://spec/x"),
        (f"{name}:told", "warn", "should", "https://spec/x"),
    ]
    assert records[0].detail == "the server claims 2025-11-25 only"


def _pkg(ident: str, status: str, message: str = "", **details) -> dict:
    return {
        "id": ident,
        "status": status,
        "errorMessage": message or None,
        "details": details,
        "specReferences": [{"id": "X", "url": "https://spec/x"}],
    }


@pytest.mark.req("CONF-01")
def test_official_scenarios_map_their_statuses_onto_the_same_words() -> None:
    assert scenario_verdict([_pkg("a", "SUCCESS")])[0] == "pass"
    warned, detail = scenario_verdict([_pkg("a", "SUCCESS"), _pkg("b", "WARNING", "SHOULD do it")])
    assert warned == "warn" and "b WARNING->warn (SHOULD do it)" in detail
    assert scenario_verdict([_pkg("a", "WARNING"), _pkg("b", "FAILURE", "broke")])[0] == "fail"
    assert scenario_verdict([_pkg("a", "SKIPPED"), _pkg("b", "INFO")])[0] == "not_applicable"


def _judge(results: dict, **kw) -> dict[str, SubResult]:
    sets = RequirementSet(
        "2026-07-28",
        frozenset({"tools-call-simple-text", "caching", "server-stateless", "dns-rebinding-protection"}),
        {
            "tasks-capability-negotiation": "extension",
            "json-schema-2020-12": "pending",
            "http-header-validation": "pending",
        },
    )
    options = {"inventory": {"shadow_status"}, "extensions": set(), "bridged": False, "covers": {"*": ("GW-05",)}}
    subs = judge_requirement_set("official:2026-07-28", results, sets, package="pkg 1", **(options | kw))
    return {s.name.removeprefix("official:2026-07-28:"): s for s in subs}


@pytest.mark.req("CONF-01")
def test_scenarios_needing_the_reference_servers_fixtures_are_not_applicable_never_pass() -> None:
    subs = _judge(
        {
            "tools-call-simple-text": [
                _pkg("tools-call-simple-text", "FAILURE", "Failed: unknown tool 'test_simple_text'"),
                _pkg("wire-schema-valid", "SUCCESS"),
            ],
            "server-stateless": [
                _pkg("sep-2575-server-implements-discover", "SUCCESS"),
                _pkg("sep-2575-server-no-log-without-loglevel", "FAILURE", "Not testable: no 'test_logging_tool'"),
                _pkg("sep-2575-server-sends-subscription-ack", "SKIPPED", note="no subscription capability"),
                _pkg("sep-2575-http-server-meta-invalid-400", "SUCCESS"),
                _pkg("sep-2575-http-server-meta-invalid-400", "FAILURE", "got 200"),
            ],
            "caching": [_pkg("sep-2549-resources-templates-list-caching-hints", "FAILURE", "-32601")],
        }
    )
    for name in ("tools-call-simple-text:tools-call-simple-text", "tools-call-simple-text:wire-schema-valid"):
        assert subs[name].verdict == "not_applicable" and not subs[name].ok
        assert "test_simple_text" in subs[name].detail
    assert subs["server-stateless:sep-2575-server-implements-discover"].verdict == "pass"
    assert subs["server-stateless:sep-2575-server-no-log-without-loglevel"].verdict == "not_applicable"
    skipped = subs["server-stateless:sep-2575-server-sends-subscription-ack"]
    assert skipped.verdict == "not_applicable" and "no subscription capability" in skipped.detail
    assert subs["server-stateless:sep-2575-http-server-meta-invalid-400#2"].verdict == "fail"
    failed = subs["caching:sep-2549-resources-templates-list-caching-hints"]
    assert (failed.verdict, failed.weight, failed.covers) == ("fail", "must", ("GW-05",))
    assert failed.source.startswith("https://spec/x (pkg 1, scenario caching)")
    # A single check of a fixture-free scenario that calls a diagnostic tool the server lacks: the
    # package read an isError result for the unknown tool as "executed"; not applicable here.
    lacking = _judge(
        {
            "server-stateless": [
                _pkg(
                    "sep-2575-server-rejects-undeclared-capability",
                    "FAILURE",
                    "Server executed 'test_missing_capability'",
                )
            ]
        }
    )
    assert lacking["server-stateless:sep-2575-server-rejects-undeclared-capability"].verdict == "not_applicable"
    # The reference server itself offers the fixture: the same scenario is judged.
    offered = _judge(
        {"tools-call-simple-text": [_pkg("tools-call-simple-text", "SUCCESS")]}, inventory={"test_simple_text"}
    )
    assert offered["tools-call-simple-text:tools-call-simple-text"].verdict == "pass"


@pytest.mark.req("CONF-01")
def test_extensions_pending_scenarios_and_the_bridge_decide_what_applies() -> None:
    results = {
        "tasks-capability-negotiation": [
            _pkg("tasks-extension-advertised", "FAILURE", "capabilities.extensions MUST be advertised"),
            _pkg("sep-2663-server-rejects-undeclared-client", "FAILURE", "unknown tool 'slow_compute'"),
        ],
        "http-header-validation": [_pkg("sep-2243-server-reject-invalid-headers", "FAILURE", "Expected 400")],
        "dns-rebinding-protection": [_pkg("localhost-host-valid-accepted", "FAILURE", "got 403")],
        "server-stateless": [_pkg("sep-2575-http-server-method-not-found-404", "FAILURE", "got 200")],
    }
    plain = _judge(results)
    assert plain["tasks-capability-negotiation:tasks-extension-advertised"].verdict == "not_applicable"
    pending = plain["http-header-validation:sep-2243-server-reject-invalid-headers"]
    assert (pending.verdict, pending.weight) == ("warn", "robustness") and "pending" in pending.detail
    assert plain["dns-rebinding-protection:localhost-host-valid-accepted"].verdict == "fail"
    claimed = _judge(results, extensions={"io.modelcontextprotocol/tasks"})
    assert claimed["tasks-capability-negotiation:tasks-extension-advertised"].verdict == "fail"
    # Its fixture-free check is judged; the one needing slow_compute is not applicable.
    assert claimed["tasks-capability-negotiation:sep-2663-server-rejects-undeclared-client"].verdict == "not_applicable"
    bridged = _judge(results, bridged=True)
    for name in (
        "dns-rebinding-protection:localhost-host-valid-accepted",
        "server-stateless:sep-2575-http-server-method-not-found-404",
        "http-header-validation:sep-2243-server-reject-invalid-headers",
    ):
        assert bridged[name].verdict == "not_applicable" and "bridge" in bridged[name].detail


@pytest.mark.req("CONF-01")
def test_report_json_carries_the_verdicts(tmp_path: Path) -> None:
    from shadowcode_conformance.report import write_report

    records = [_rec("g:na", ("SRV-03",), False, verdict=Verdict.NOT_APPLICABLE, source="https://spec/c")]
    json_path, _ = write_report(tmp_path, build_report(["t"], records, {}, 1, profile="generic"))
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert doc["profile"] == "generic" and doc["verdicts"]["not_applicable"] == 1
    row = _row(doc, "g:na")
    assert (row["verdict"], row["source"], row["detail"]) == ("not_applicable", "https://spec/c", "g:na detail")
