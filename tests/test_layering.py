"""Layers point one way and no module cycle exists (docs/architecture.md).

The import graph of ``shadowcode/`` is read from the source: module-level, function-level and
``TYPE_CHECKING`` imports alike. Each module belongs to a part of the table below; a part may
import only the parts its row names (and itself, without a cycle between its modules).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "shadowcode"

BOTTOM = {"errors", "limits", "enums", "version", "parent_death", "inert_text", "json_values", "control_methods"}
"""Everyone may import these; they import nothing of ours but each other."""

ALLOWED: dict[str, set[str]] = {
    # part: the parts it may import (BOTTOM is always allowed)
    "entry": {"cli", "mcp.server", "mcp.relay", "profile_paths"},  # mcp.server: the front's child
    "cli": {"mcp.server", "mcp.register", "engine.api", "engine.front", "profile", "profile_paths", "secrets"},
    "mcp.register": {"project", "profile", "profile_paths"},
    "mcp.server": {"mcp.relay", "engine.api", "engine.front", "profile", "profile_paths", "secrets", "ndjson"},
    "mcp.relay": set(),
    "engine.front": {"engine.api", "engine", "profile"},
    "engine.api": {"profile", "project.documents", "store"},
    "engine": {"engine.api", "agent", "mcp.client", "project", "project.documents", "store", "profile",
               "profile_paths", "secrets", "ndjson", "process_group", "blocking"},  # fmt: skip
    "agent": {"mcp.client", "project", "project.documents", "store", "profile", "profile_paths", "secrets",
              "process_group", "blocking"},  # fmt: skip
    "mcp.client": {"ndjson", "process_group"},
    "project": {"project.documents", "profile_paths", "process_group", "blocking"},
    "project.documents": set(),
    "store": set(),
    "secrets": {"profile", "profile_paths"},
    "profile": {"profile_paths"},
    "profile_paths": set(),
    "ndjson": set(),
    "process_group": set(),
    "blocking": set(),
}

_PARTS_BY_PREFIX: tuple[tuple[str, str], ...] = (
    # longest prefix first
    ("shadowcode.mcp.server.relay", "mcp.relay"),
    ("shadowcode.mcp.server.front", "mcp.relay"),
    ("shadowcode.mcp.server.discovery", "mcp.relay"),
    ("shadowcode.mcp.server.early_answers", "mcp.relay"),
    ("shadowcode.mcp.server.stdio_pipes", "mcp.relay"),
    ("shadowcode.mcp.server.handover", "mcp.relay"),
    ("shadowcode.engine.api", "engine.api"),
    ("shadowcode.engine.wire", "engine.api"),
    ("shadowcode.engine", "engine"),
    ("shadowcode.project.documents", "project.documents"),
    ("shadowcode.mcp.server", "mcp.server"),
    ("shadowcode.mcp.register", "mcp.register"),
    ("shadowcode.mcp.host_entries", "mcp.register"),
    ("shadowcode.mcp.client", "mcp.client"),
    ("shadowcode.cli", "cli"),
    ("shadowcode.agent", "agent"),
    ("shadowcode.project", "project"),
    ("shadowcode.store", "store"),
    ("shadowcode.profile_paths", "profile_paths"),
    ("shadowcode.profile", "profile"),
    ("shadowcode.settings", "profile"),
    ("shadowcode.secrets", "secrets"),
    ("shadowcode.ndjson", "ndjson"),
    ("shadowcode.process_group", "process_group"),
    ("shadowcode.blocking", "blocking"),
    ("shadowcode.errors", "errors"),
    ("shadowcode.limits", "limits"),
    ("shadowcode.enums", "enums"),
    ("shadowcode.parent_death", "parent_death"),
    ("shadowcode.inert_text", "inert_text"),
    ("shadowcode.json_values", "json_values"),
    ("shadowcode.control_methods", "control_methods"),
    ("shadowcode.__main__", "entry"),
)

FRONT_MODULES = {"shadowcode.engine"}
"""``shadowcode.engine`` itself (``open_engine``) is the frontends' door; its own imports are the engine's."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _part(module: str) -> str:
    if module in ("shadowcode", "shadowcode.mcp", "shadowcode.mcp.server"):
        return "version"  # the package roots: the version, a namespace, the server's start-up constant
    for prefix, part in _PARTS_BY_PREFIX:
        if module == prefix or module.startswith(prefix + "."):
            return part
    raise AssertionError(f"{module} belongs to no part of the layer table: add it to _PARTS_BY_PREFIX")


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every shadowcode module ``module`` imports, wherever the import stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith("shadowcode"):
                while name not in known and "." in name:
                    name = name.rpartition(".")[0]
                if name in known and name != module:
                    yield name


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: set(_imports(m, p, known)) for m, p in modules.items()}


def _front_part(importer: str, imported: str) -> str:
    part = _part(imported)
    if imported in FRONT_MODULES and _part(importer) not in ("engine", "engine.api"):
        return "engine.front"
    return part


def test_every_import_follows_the_layer_table() -> None:
    bad = []
    for module, imported in sorted(_graph().items()):
        mine = _part(module)
        allowed = ALLOWED.get(mine, set()) | BOTTOM | {mine}
        if mine in BOTTOM:
            allowed = BOTTOM
        for target in sorted(imported):
            theirs = _front_part(module, target)
            if theirs not in allowed:
                bad.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert bad == [], "imports against the layer table:\n" + "\n".join(bad)


def test_no_module_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == [], f"import cycles: {cycles}"


def test_every_part_of_the_table_is_a_real_part() -> None:
    parts = {_part(m) for m in _modules()}
    named = set(ALLOWED) | {p for row in ALLOWED.values() for p in row}
    assert named - parts - {"engine.front"} == set()


@pytest.mark.parametrize("frontend", ["shadowcode.cli", "shadowcode.mcp.server"])
def test_frontends_reach_no_store_sqlite_or_policy(frontend: str) -> None:
    forbidden = ("shadowcode.store", "sqlite3", "shadowcode.engine.state", "shadowcode.engine.verbs")
    bad = []
    for module, path in _modules().items():
        if not module.startswith(frontend):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad += [f"{module} imports {n}" for n in names if n.startswith(forbidden)]
    assert bad == []


def test_only_store_and_the_inspection_edge_import_sqlite3() -> None:
    bad = []
    for module, path in _modules().items():
        if module.startswith(("shadowcode.store", "shadowcode.project.sqlite_")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names):
                bad.append(module)
            if isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
                bad.append(module)
    assert bad == []


def test_package_top_level_does_not_import_the_sdk() -> None:
    for name in ("__init__.py", "__main__.py"):
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        imported = [
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [None])  # type: ignore[list-item]
        ]
        assert not any(str(m).startswith(("mcp", "shadowcode.engine", "shadowcode.store")) for m in imported)


# -- the store owns the profile database (ENG-03) -------------------------------------------------

_SQL_EDGES = ("store/", "project/sqlite_inspect", "project/sqlite_worker")
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
