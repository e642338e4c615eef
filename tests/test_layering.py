"""Dependencies run one way: cli -> mcp.server -> engine -> (mcp.client, store) (STYLE 1)."""

from __future__ import annotations

import ast
from pathlib import Path

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
