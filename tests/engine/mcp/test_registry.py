"""The MCP server registry (engine/mcp/registry.py): registrations, grants, the catalog view and review of
changed definitions.

Covers CLI-01, CLI-02, CLI-04, CLI-05, CLI-06.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowcode.engine.api import McpRemoval
from shadowcode.engine.mcp.definition_files import project_definitions
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConflictError, NotFound, PolicyError
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX
from shadowcode.mcp.client.definitions import DefinitionProblem, ServerDefinition, sha256_hex

pytestmark = pytest.mark.req("CLI-01", "CLI-02", "CLI-04", "CLI-05", "CLI-06")

STDIO = {"name": "tools", "command": ["server", "--stdio"]}


def _problem(project: Path, def_id: str) -> str:
    found = {d.id: d for d in project_definitions(project)}
    item = found[def_id]
    assert isinstance(item, DefinitionProblem)
    return item.error


def _registry(state: EngineState, project_dir: Path) -> tuple[McpRegistry, Path]:
    path = state.project_at(project_dir).path
    state.projects.trust(path, PermissionLevel.WORKSPACE)
    return state.mcp_servers, path


def _file(tmp_path: Path, doc: dict[str, object], name: str = "def.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.req("CLI-01", "CLI-05")
def test_registering_reads_the_file_and_replacing_needs_the_current_hash(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry, _ = _registry(state, project_dir)
    first = registry.add(_file(tmp_path, STDIO | {"env": {"TOKEN": "literal"}}))
    assert first.id == "config:tools"
    assert registry.add(_file(tmp_path, STDIO | {"env": {"TOKEN": "literal"}})).sha256 == first.sha256
    changed = _file(tmp_path, STDIO | {"description": "new"})
    with pytest.raises(ConflictError, match="--hash"):
        registry.add(changed)
    with pytest.raises(ConflictError):
        registry.add(changed, replace_hash="0" * 64)
    assert registry.add(changed, replace_hash=first.sha256).sha256 == sha256_hex(changed.read_bytes())


@pytest.mark.req("CLI-01", "CLI-04")
def test_the_catalog_shows_ids_hashes_states_and_variable_names_never_values(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(state, project_dir)
    registry.add(_file(tmp_path, STDIO | {"env": {"LIT": "literal-secret"}, "env_refs": {"TOKEN": "MY_TOKEN"}}))
    doc = registry.catalog(path, trusted=True)
    assert "literal-secret" not in json.dumps(doc)
    (server,) = doc["servers"]
    assert server["env_names"] == ["LIT", "TOKEN"] and server["env_refs"] == {"TOKEN": "MY_TOKEN"}
    assert server["grant"] == {"state": "disabled", "hash": None}


@pytest.mark.req("CLI-02", "CLI-05")
def test_a_fifth_enabled_server_is_refused_and_a_stale_hash_cannot_enable(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(state, project_dir)
    added = [
        registry.add(_file(tmp_path, STDIO | {"name": f"s{i}"}, f"s{i}.json"))
        for i in range(MCP_ENABLED_SERVERS_MAX + 1)
    ]
    with pytest.raises(ConflictError, match="does not match"):
        registry.enable(path, added[0].id, "0" * 64, trusted=True)
    for definition in added[:MCP_ENABLED_SERVERS_MAX]:
        registry.enable(path, definition.id, definition.sha256, trusted=True)
    with pytest.raises(ConflictError, match=f"the limit is {MCP_ENABLED_SERVERS_MAX}"):
        registry.enable(path, added[-1].id, added[-1].sha256, trusted=True)
    again = registry.enable(path, added[0].id, added[0].sha256, trusted=True)  # re-enabling one of the four is fine
    assert again == {"id": added[0].id, "project": str(path), "hash": added[0].sha256, "state": "enabled"}
    grants = registry.grants(path)
    assert len(grants) == MCP_ENABLED_SERVERS_MAX and grants[added[0].id] == added[0].sha256


@pytest.mark.req("CLI-02")
def test_enabling_needs_a_trusted_project_and_an_existing_valid_definition(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry = state.mcp_servers
    path = state.project_at(project_dir).path
    added = registry.add(_file(tmp_path, STDIO))
    with pytest.raises(PolicyError, match="trusted project"):
        registry.enable(path, added.id, added.sha256, trusted=False)
    with pytest.raises(NotFound):
        registry.enable(path, "config:nope", added.sha256, trusted=True)


@pytest.mark.req("CLI-05")
def test_removal_revokes_grants_and_identical_reregistration_does_not_reactivate(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(state, project_dir)
    definition = registry.add(_file(tmp_path, STDIO))
    registry.enable(path, definition.id, definition.sha256, trusted=True)
    with pytest.raises(ConflictError):
        registry.remove(definition.id, "0" * 64)
    assert registry.remove(definition.id, definition.sha256) == McpRemoval(definition.id, True, 1)
    again = registry.add(_file(tmp_path, STDIO))
    assert again.sha256 == definition.sha256
    assert registry.grants(path) == {}
    assert registry.snapshot(path).servers == ()


@pytest.mark.req("CLI-06")
def test_changed_missing_and_invalid_project_definitions_need_review_before_new_tasks(
    state: EngineState, project_dir: Path
) -> None:
    registry, path = _registry(state, project_dir)
    folder = project_dir / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (folder / f"{name}.json").write_text(json.dumps(STDIO | {"name": name}), encoding="utf-8")
    for item in project_definitions(path):
        assert isinstance(item, ServerDefinition)
        registry.enable(path, item.id, item.sha256, trusted=True)
    assert [d.name for d in registry.snapshot(path).servers] == ["a", "b", "c"]
    (folder / "a.json").write_text(json.dumps(STDIO | {"name": "a", "description": "edited"}), encoding="utf-8")
    (folder / "b.json").unlink()
    (folder / "c.json").write_text("{not json", encoding="utf-8")
    snapshot = registry.snapshot(path)
    assert snapshot.servers == ()
    assert len(snapshot.notes) == 3
    states = {s["id"]: s["grant"]["state"] for s in registry.catalog(path, trusted=True)["servers"]}
    assert states == {
        "project:.shadowcode/mcp/a.json": "changed",
        "project:.shadowcode/mcp/b.json": "missing",
        "project:.shadowcode/mcp/c.json": "invalid",
    }
    missing = "project:.shadowcode/mcp/b.json"
    assert registry.disable(path, missing) == {"id": missing, "project": str(path), "state": "disabled"}
    with pytest.raises(NotFound):
        registry.disable(path, "project:.shadowcode/mcp/b.json")


@pytest.mark.req("CLI-05")
def test_a_project_file_cannot_grant_itself_or_borrow_a_global_grant(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(state, project_dir)
    definition = registry.add(_file(tmp_path, STDIO))
    registry.enable(path, definition.id, definition.sha256, trusted=True)
    folder = project_dir / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    (folder / "tools.json").write_text(json.dumps(STDIO | {"command": ["other"], "grant": True}), encoding="utf-8")
    (folder / "same.json").write_text(json.dumps(STDIO | {"command": ["other"]}), encoding="utf-8")
    assert "unknown field" in _problem(path, "project:.shadowcode/mcp/tools.json")
    snapshot = registry.snapshot(path)
    assert [(d.id, d.spec.command) for d in snapshot.servers] == [("config:tools", ("server", "--stdio"))]  # type: ignore[union-attr]
    same = next(d for d in project_definitions(path) if d.id == "project:.shadowcode/mcp/same.json")
    with pytest.raises(ConflictError, match="same name"):
        registry.enable(path, same.id, same.sha256 or "", trusted=True)
