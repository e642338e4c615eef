"""Every check links to the specification section or contract id it proves (CONF-01)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowcode_conformance.junit import render_junit
from shadowcode_conformance.links import SPEC_SECTIONS, check_links, requirement_link, urls_in
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.report import CheckRecord, build_report
from shadowcode_conformance.requirements import requirement_ids
from shadowcode_conformance.verdicts import SPEC

pytestmark = pytest.mark.req("CONF-01")


def test_every_registered_check_has_a_link() -> None:
    bare = [c.name for c in load_checks().values() if not check_links(c)]
    assert bare == []


def test_a_generic_check_links_a_specification_section_and_a_contract_check_its_ids() -> None:
    for c in load_checks().values():
        links = check_links(c)
        if "generic" in c.profiles and not c.official:
            assert any(link.startswith("https://") for link in links), c.name
        if "shadowcode" in c.profiles:
            assert [requirement_link(i) for i in c.covers] == [x for x in links if x.startswith("REQUIREMENTS.md#")]
        for link in links:
            if link.startswith("REQUIREMENTS.md#"):
                assert link.removeprefix("REQUIREMENTS.md#") in requirement_ids(), (c.name, link)
            else:
                assert link.startswith("https://") and " " not in link, (c.name, link)


def test_the_section_table_names_only_registered_checks_and_mcp_sections() -> None:
    checks = load_checks().values()
    known = {c.name for c in checks} | {c.group for c in checks}
    assert set(SPEC_SECTIONS) <= known
    for sections in SPEC_SECTIONS.values():
        assert sections and all(s.startswith(SPEC + "/") for s in sections)


def test_a_contract_check_of_mcp_behaviour_links_the_section_beside_its_id() -> None:
    load_checks()
    links = check_links(CHECKS["stdout_purity:500_frames"])
    assert links[0] == f"{SPEC}/2025-11-25/basic/transports#stdio"
    assert "REQUIREMENTS.md#SRV-01" in links
    assert check_links(CHECKS["cli_usage:json_serve_refused"]) == ("REQUIREMENTS.md#SRV-02", "REQUIREMENTS.md#SRV-01")


def test_urls_are_read_out_of_a_source_with_notes() -> None:
    source = "https://www.jsonrpc.org/specification#batch (MCP has no batches since 2025-06-18) ; https://x.test/a."
    assert urls_in(source) == ["https://www.jsonrpc.org/specification#batch", "https://x.test/a"]
    assert urls_in("ShadowCode contract: SRV-01") == []


def test_the_json_and_junit_reports_carry_each_checks_links(tmp_path: Path) -> None:
    record = CheckRecord("g:one", ("SRV-01",), True, "fine", 0.1, links=("https://a.test/s", "REQUIREMENTS.md#SRV-01"))
    report = build_report(["t"], [record], {}, 1)
    row = next(r for r in report["checks"] if r["name"] == "g:one")
    assert row["links"] == ["https://a.test/s", "REQUIREMENTS.md#SRV-01"]
    assert json.loads(json.dumps(report))["checks"][0]["links"] == row["links"]
    junit = render_junit(report).decode("utf-8")
    assert '<property name="links" value="https://a.test/s REQUIREMENTS.md#SRV-01"' in junit
