"""The requirement manifest lists every contract id once, in order, and checks cite only those ids."""

from __future__ import annotations

import pytest

from shadowcode_conformance.registry import check, load_checks
from shadowcode_conformance.requirements import AREAS, REQUIREMENTS, requirement_ids

EXPECTED_COUNTS = {"ENG": 8, "SRV": 30, "REG": 8, "GW": 8, "CLI": 19, "PKG": 2, "CONF": 4, "CW": 12}


def _expected_ids() -> list[str]:
    return [f"{area}-{n:02d}" for area in AREAS for n in range(1, EXPECTED_COUNTS[area] + 1)]


@pytest.mark.req("CONF-01")
def test_manifest_lists_every_contract_id_in_order_without_gaps() -> None:
    assert list(AREAS) == list(EXPECTED_COUNTS)
    assert requirement_ids() == _expected_ids()
    assert len(requirement_ids()) == 91


@pytest.mark.req("CONF-01")
def test_manifest_summaries_are_single_nonempty_lines() -> None:
    for r in REQUIREMENTS:
        assert r.summary.strip() and "\n" not in r.summary, r.id
        assert r.area in AREAS


@pytest.mark.req("CONF-01")
def test_every_registered_check_covers_only_manifest_ids() -> None:
    known = set(requirement_ids())
    checks = load_checks()
    assert checks, "no check registered"
    for c in checks.values():
        assert c.covers, f"{c.name} covers nothing"
        assert set(c.covers) <= known, c.name


@pytest.mark.req("CONF-01")
def test_check_decorator_refuses_an_unknown_id() -> None:
    with pytest.raises(ValueError, match="SRV-99"):
        check("test:unknown_id", covers=["SRV-99"])


@pytest.mark.req("CONF-01")
def test_check_decorator_refuses_a_name_registered_twice() -> None:
    name = next(iter(load_checks()))

    async def again(ctx: object) -> object:
        raise AssertionError

    with pytest.raises(ValueError, match="twice"):
        check(name, covers=["SRV-01"])(again)
