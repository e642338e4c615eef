"""Running one registered conformance check in-process, for the tests of the checks themselves."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import anyio

from conformance.registry import CHECKS, load_checks
from conformance.report import CheckRecord
from conformance.runner import run_one

REPO_ROOT = Path(__file__).resolve().parents[2]


def stand_in_project(dest: Path) -> Path:
    """A project of one README: enough for a check that never gets past its set-up."""
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def sample_project(dest: Path) -> Path:
    """The real sample project's files (no database needed here)."""
    shutil.copytree(REPO_ROOT / "conformance/fixtures" / "projects" / "sample", dest)
    return dest.resolve()


def run_check(
    name: str,
    target: list[str],
    project_factory: Callable[[Path], Path] = stand_in_project,
    *,
    bound_seconds: float | None = None,
) -> list[CheckRecord]:
    """Run the registered check ``name`` against ``target``; its record, then its sub-records.

    The run is bounded by ``bound_seconds`` (default: the check's own bound plus 10 s).
    """
    load_checks()
    chk = CHECKS[name]
    bound = chk.timeout_seconds + 10 if bound_seconds is None else bound_seconds

    async def go() -> tuple[list[CheckRecord], dict[str, str]]:
        with anyio.fail_after(bound):
            return await run_one(
                chk, target=target, cwd=Path.cwd(), repo_root=REPO_ROOT / "conformance", project_factory=project_factory
            )

    records, _ = anyio.run(go)
    return records
