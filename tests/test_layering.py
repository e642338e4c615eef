"""Dependencies run one way: cli -> mcp.server -> engine -> (mcp.client, store) (STYLE 1)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "shadowcode"


def _imports(folder: Path) -> list[tuple[Path, str]]:
    found = []
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.append((path, node.module))
            elif isinstance(node, ast.Import):
                found.extend((path, alias.name) for alias in node.names)
    return found


def test_engine_never_imports_the_server_or_the_cli() -> None:
    bad = [
        (p.name, m)
        for p, m in _imports(PACKAGE / "engine")
        if m.startswith(("shadowcode.mcp.server", "shadowcode.cli"))
    ]
    assert bad == []


def test_only_store_and_the_inspection_edge_import_sqlite3() -> None:
    allowed = {PACKAGE / "store", PACKAGE / "project"}
    bad = [
        str(p.relative_to(PACKAGE))
        for p, m in _imports(PACKAGE)
        if m == "sqlite3" and not any(a in p.parents for a in allowed)
    ]
    assert bad == []


def test_package_top_level_does_not_import_the_sdk() -> None:
    top = [m for p, m in _imports(PACKAGE) if p.parent == PACKAGE and p.name in ("__init__.py", "__main__.py")]
    assert not any(m.startswith(("mcp", "shadowcode.engine", "shadowcode.store")) for m in top)


# -- the store owns the profile database (ENG-03) -------------------------------------------------

_SQL_EDGES = ("store/", "project/sqlite_inspect")
"""Where SQL may be written: the store, and the read-only inspection of the user's own databases."""

_SQL_TEXT = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)"
    r"|ALTER\s+TABLE|BEGIN\s+IMMEDIATE|PRAGMA\s)",
    re.S,
)
_STATEMENT_CALLS = {"execute", "executemany", "executescript", "insert", "row", "rows"}


def _receiver(node: ast.expr) -> str:
    """The dotted text of an attribute chain's receiver (``engine.store`` for ``engine.store.rows``)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _sql_outside_the_store(package: Path) -> list[str]:
    """Places outside the store that write SQL text, run a statement on a store, or reach into its connection."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith(_SQL_EDGES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL_TEXT.search(node.value):
                found.append(f"{rel}:{node.lineno}: SQL text")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                receiver = _receiver(node.func.value).lower()
                if node.func.attr in _STATEMENT_CALLS and ("store" in receiver or "conn" in receiver):
                    found.append(f"{rel}:{node.lineno}: {receiver}.{node.func.attr}()")
            elif isinstance(node, ast.Attribute) and node.attr == "_conn":
                found.append(f"{rel}:{node.lineno}: ._conn")
    return found


@pytest.mark.req("ENG-03")
def test_only_the_store_runs_sql_against_the_profile_database() -> None:
    assert _sql_outside_the_store(PACKAGE) == []


@pytest.mark.req("ENG-03")
def test_the_sql_check_finds_a_statement_run_on_a_store_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "tasks.py").write_text('def f(db):\n    db.row("SELECT 1 FROM tasks")\n', encoding="utf-8")
    (tmp_path / "engine.py").write_text(
        "def f(engine, store):\n"
        '    engine.store.rows("SELECT id FROM tasks")\n'
        "    store.execute(q)\n"
        "    engine.store._conn.cursor()\n"
        '    SQL = "DELETE FROM events"\n',
        encoding="utf-8",
    )
    assert sorted(_sql_outside_the_store(tmp_path)) == [
        "engine.py:2: SQL text",
        "engine.py:2: engine.store.rows()",
        "engine.py:3: store.execute()",
        "engine.py:4: ._conn",
        "engine.py:5: SQL text",
    ]
