"""The ``config_import`` check fails a target that does not import (CW-01)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.runner import run_one

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"


def _project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


@pytest.mark.req("CW-01")
def test_the_import_check_fails_a_target_that_does_nothing() -> None:
    load_checks()
    chk = CHECKS["config_import:import_twice_enables_nothing"]
    assert list(chk.covers) == ["CW-01"]

    async def go():
        with anyio.fail_after(60):
            return await run_one(
                chk, target=["true"], cwd=Path.cwd(), repo_root=SUITE, project_factory=_project
            )

    records, _ = anyio.run(go)
    assert records and not records[0].ok
    assert "dry run without FILE" in records[0].detail
