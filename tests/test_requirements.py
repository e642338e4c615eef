"""Every requirement id is proven somewhere, and every id a test or check names exists.

Tests name the ids they prove with ``@pytest.mark.req("GW-04")`` (or a module's ``pytestmark``);
conformance checks with ``covers=``. Both are read here without running anything. Ids whose
feature is not built yet are listed in :data:`NOT_BUILT` with the issue that builds them: such
an id may not be named anywhere (the list would be stale), and every other id must be.
"""

from __future__ import annotations

import ast
from pathlib import Path

from shadowcode_conformance.registry import load_checks
from shadowcode_conformance.requirements import requirement_ids

TESTS = Path(__file__).resolve().parent
TEST_FOLDERS = (TESTS, TESTS.parent / "conformance" / "tests")
"""The product's tests and the conformance distribution's own."""

NOT_BUILT: dict[str, str] = {}
"""Ids of features not built in this version, each with what builds it."""


def _marker_ids(node: ast.AST) -> list[str]:
    """Ids in ``pytest.mark.req("A-01", ...)`` calls anywhere under ``node``."""
    found = []
    for call in ast.walk(node):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "req"
            and "mark" in ast.unparse(call.func.value)
        ):
            found += [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return found


def named_by_tests() -> dict[str, list[str]]:
    """Each id named by a ``req`` marker in tests/ or conformance/tests/, with the files naming it."""
    named: dict[str, list[str]] = {}
    for path in sorted(p for folder in TEST_FOLDERS for p in folder.rglob("test_*.py")):
        for requirement in _marker_ids(ast.parse(path.read_text(encoding="utf-8"))):
            named.setdefault(requirement, []).append(str(path.relative_to(TESTS.parent)))
    return named


def named_by_checks() -> set[str]:
    """Every id a registered conformance check covers."""
    return {requirement for check in load_checks().values() for requirement in check.covers}


def test_every_id_named_by_a_test_or_a_check_exists() -> None:
    known = set(requirement_ids())
    unknown = {i: files for i, files in named_by_tests().items() if i not in known}
    assert unknown == {}, f"tests name ids that REQUIREMENTS.md does not have: {unknown}"
    assert named_by_checks() - known == set()


def test_every_built_requirement_is_proven_by_a_test_or_a_check() -> None:
    named = set(named_by_tests()) | named_by_checks()
    unproven = [i for i in requirement_ids() if i not in named and i not in NOT_BUILT]
    assert unproven == [], f"ids no test or conformance check names: {unproven}"


def test_the_not_built_list_is_not_stale() -> None:
    named = set(named_by_tests()) | named_by_checks()
    stale = sorted(set(NOT_BUILT) & named)
    assert stale == [], f"built now (named by a test or check): remove from NOT_BUILT: {stale}"
    assert set(NOT_BUILT) <= set(requirement_ids())


def test_the_marker_reader_finds_ids_in_decorators_and_pytestmark() -> None:
    tree = ast.parse(
        "import pytest\n"
        'pytestmark = [pytest.mark.anyio, pytest.mark.req("GW-04", "GW-07")]\n'
        '@pytest.mark.req("SRV-25")\n'
        "def test_x(): pass\n"
    )
    assert sorted(_marker_ids(tree)) == ["GW-04", "GW-07", "SRV-25"]
