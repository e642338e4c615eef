"""The approval-scope and containment checks fail a target that cannot even be set up, naming what failed."""

from __future__ import annotations

import pytest
from check_runs import run_check, stand_in_project

from shadowcode_conformance.report import CheckRecord


def _run(name: str, target: list[str]) -> list[CheckRecord]:
    return run_check(name, target, stand_in_project)


@pytest.mark.req("SRV-08", "SRV-09", "SRV-10", "SRV-11", "SRV-13", "SRV-16", "SRV-18")
@pytest.mark.parametrize(
    ("name", "ident"),
    [
        ("approval_scope:approve_needs_flags_and_ownership", "SRV-11"),
        ("approval_scope:approve_needs_flags_and_ownership", "SRV-16"),
        ("approval_scope:level_lowered_never_raised", "SRV-10"),
        ("approval_scope:rollback_needs_write_and_confirm", "SRV-18"),
        ("containment:sqlite_live_and_contained", "SRV-13"),
    ],
)
def test_checks_fail_a_target_that_refuses_every_command(name: str, ident: str) -> None:
    records = _run(name, ["false"])
    assert ident in records[0].covers
    assert not records[0].ok
    assert "`trust --level " in records[0].detail
