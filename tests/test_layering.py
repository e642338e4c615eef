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


# The layer order of ARCH.md for the agent (L3) and the MCP client (L2): what each may import
# of ours, function-level and TYPE_CHECKING imports included.
_BOTTOM = ("errors", "limits", "enums", "profile_paths", "ndjson", "process_group", "blocking")
_MAY_IMPORT = {
    "agent": ("agent", "mcp.client", "project", "store", "profile", "secrets", *_BOTTOM),
    "mcp/client": ("mcp.client", *_BOTTOM),
}
# Back-arrows whose removal is under way elsewhere: (importing module, imported module).
_PENDING = {
    ("mcp/client/stdio.py", "shadowcode.engine.processes"),  # GroupChild moves to process_group.py
    ("mcp/client/grants.py", "shadowcode.store"),  # the registry splits into store/ and engine/
    ("mcp/client/grants.py", "shadowcode.agent.mcp_definitions"),
}


def _ours(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("shadowcode"):
            base = node.module
            found.extend(f"{base}.{a.name}" if base == "shadowcode" else base for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.startswith("shadowcode"))
    return found


def test_the_agent_and_the_mcp_client_import_nothing_against_the_layer_order() -> None:
    bad = []
    for folder, allowed in _MAY_IMPORT.items():
        prefixes = tuple(f"shadowcode.{a}" for a in allowed)
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            where = str(path.relative_to(PACKAGE))
            for module in _ours(path):
                ok = module == "shadowcode" or any(module == p or module.startswith(p + ".") for p in prefixes)
                if not ok and (where, module) not in _PENDING:
                    bad.append((where, module))
    assert bad == []


def test_the_agent_and_the_mcp_client_have_no_import_cycle() -> None:
    def name(path: Path) -> str:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    graph = {
        name(p): {m for m in _ours(p) if m.startswith(("shadowcode.agent", "shadowcode.mcp.client"))}
        for folder in _MAY_IMPORT
        for p in (PACKAGE / folder).rglob("*.py")
    }
    graph = {k: {d for d in deps if d in graph and d != k} for k, deps in graph.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(graph[start])
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph[node])
        return False

    assert [m for m in sorted(graph) if reaches(m, m)] == []
