"""The approval-scope and containment checks fail a target that cannot even be set up, naming what failed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from conformance.registry import CHECKS, load_checks
from conformance.runner import run_one

REPO_ROOT = Path(__file__).resolve().parents[2]


def _stand_in_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def _run(name: str, target: list[str]):
    load_checks()
    chk = CHECKS[name]

    async def go():
        with anyio.fail_after(chk.timeout_seconds + 10):
            return await run_one(
                chk, target=target, cwd=Path.cwd(), repo_root=REPO_ROOT, project_factory=_stand_in_project
            )

    records, _ = anyio.run(go)
    return records


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
