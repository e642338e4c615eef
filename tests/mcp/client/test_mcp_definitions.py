"""Server definitions, grants and the catalog: validation, ids, hashes, limits, review of changes.

Covers CLI-01, CLI-02, CLI-03, CLI-04, CLI-05, CLI-06.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shadowcode.engine import Engine
from shadowcode.engine.mcp_servers import McpRegistry
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError
from shadowcode.limits import (
    MCP_DEFINITION_MAX_BYTES,
    MCP_ENABLED_SERVERS_MAX,
    MCP_TIMEOUT_MAX_SECONDS,
    MCP_TIMEOUT_MIN_SECONDS,
)
from shadowcode.mcp.client.definitions import (
    DefinitionProblem,
    ServerDefinition,
    parse_definition,
    project_definitions,
    read_project_definition,
    sha256_hex,
)
from shadowcode.mcp.client.redaction import REDACTED, Redactor

STDIO = {"name": "tools", "command": ["server", "--stdio"]}


def _parse(doc: object) -> object:
    return parse_definition(json.dumps(doc).encode(), "def.json", fmt="json")


def _problem(project: Path, def_id: str) -> str:
    found = {d.id: d for d in project_definitions(project)}
    item = found[def_id]
    assert isinstance(item, DefinitionProblem)
    return item.error


def test_a_shell_string_instead_of_an_argv_array_is_refused_naming_the_field_cli03() -> None:
    with pytest.raises(ConfigError, match=r"def.json: field 'command': must be an array of literal arguments"):
        _parse({"name": "tools", "command": "server --stdio | tee log"})


def test_env_or_env_refs_on_an_http_definition_are_refused_cli03() -> None:
    for field in ("env", "env_refs"):
        with pytest.raises(ConfigError, match=f"field '{field}' applies to stdio servers only"):
            _parse({"name": "remote", "url": "https://example.com/mcp", field: {"A": "B"}})


def test_unknown_fields_and_ambiguous_or_missing_transports_are_refused_cli03() -> None:
    with pytest.raises(ConfigError, match="field 'enabled': unknown field"):
        _parse(STDIO | {"enabled": True})
    with pytest.raises(ConfigError, match="'command' and 'url' both present"):
        _parse(STDIO | {"url": "https://example.com/mcp"})
    with pytest.raises(ConfigError, match="'command' \\(stdio\\) or 'url'"):
        _parse({"name": "tools"})
    with pytest.raises(ConfigError, match="field 'name'"):
        _parse(STDIO | {"name": "two__underscores"})


def test_timeouts_are_accepted_from_0_1_to_120_seconds_and_refused_outside_cli13() -> None:
    for ok in (MCP_TIMEOUT_MIN_SECONDS, MCP_TIMEOUT_MAX_SECONDS):
        assert _parse(STDIO | {"timeout_sec": ok}).timeout_sec == ok  # type: ignore[attr-defined]
    for bad in (0.09, 120.1):
        with pytest.raises(ConfigError, match="timeout_sec"):
            _parse(STDIO | {"timeout_sec": bad})


def test_a_definition_of_the_size_limit_is_read_and_one_byte_more_is_refused_cli03() -> None:
    base = json.dumps(STDIO | {"description": ""}).encode()
    at = json.dumps(STDIO | {"description": "x" * (MCP_DEFINITION_MAX_BYTES - len(base))}).encode()
    assert len(at) == MCP_DEFINITION_MAX_BYTES
    parse_definition(at, "def.json", fmt="json")
    with pytest.raises(ConfigError, match="the limit is"):
        parse_definition(at + b" ", "def.json", fmt="json")


def test_project_files_are_read_directly_in_both_folders_in_json_and_yaml_only_cli03(project_dir: Path) -> None:
    (project_dir / ".shadowcode/mcp/sub").mkdir(parents=True)
    (project_dir / ".shadow/mcp").mkdir(parents=True)
    (project_dir / ".shadowcode/mcp/a.json").write_text(json.dumps(STDIO | {"name": "a"}), encoding="utf-8")
    (project_dir / ".shadow/mcp/b.yaml").write_text("name: b\ncommand: [server]\n", encoding="utf-8")
    (project_dir / ".shadow/mcp/c.yml").write_text("name: c\ncommand: [server]\n", encoding="utf-8")
    (project_dir / ".shadowcode/mcp/sub/d.json").write_text(json.dumps(STDIO | {"name": "d"}), encoding="utf-8")
    (project_dir / ".shadowcode/mcp/notes.txt").write_text("ignored", encoding="utf-8")
    found = project_definitions(project_dir)
    assert [d.id for d in found] == [
        "project:.shadow/mcp/b.yaml",
        "project:.shadow/mcp/c.yml",
        "project:.shadowcode/mcp/a.json",
    ]
    first = found[2]
    assert isinstance(first, ServerDefinition)
    assert first.sha256 == sha256_hex((project_dir / ".shadowcode/mcp/a.json").read_bytes())


def test_a_symlinked_definition_pointing_outside_its_folder_is_refused_cli03(project_dir: Path, tmp_path: Path) -> None:
    folder = project_dir / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(STDIO), encoding="utf-8")
    (folder / "link.json").symlink_to(outside)
    (folder / "real.json").write_text(json.dumps(STDIO | {"name": "real"}), encoding="utf-8")
    (folder / "alias.json").symlink_to(folder / "real.json")
    assert "leading outside" in _problem(project_dir, "project:.shadowcode/mcp/link.json")
    assert isinstance(
        {d.id: d for d in project_definitions(project_dir)}["project:.shadowcode/mcp/alias.json"], ServerDefinition
    )
    with pytest.raises(ConfigError, match="leading outside"):
        read_project_definition(project_dir, "project:.shadowcode/mcp/link.json")


def test_a_definition_folder_that_leaves_the_project_is_ignored_cli03(project_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.json").write_text(json.dumps(STDIO), encoding="utf-8")
    (project_dir / ".shadowcode").mkdir()
    (project_dir / ".shadowcode/mcp").symlink_to(elsewhere)
    assert project_definitions(project_dir) == []


def test_a_fifo_named_like_a_definition_is_refused_without_blocking_cli03(project_dir: Path) -> None:
    folder = project_dir / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.json")
    assert "not a regular file" in _problem(project_dir, "project:.shadowcode/mcp/pipe.json")


def _registry(engine: Engine, project_dir: Path) -> tuple[McpRegistry, Path]:
    path = engine.project(project_dir).path
    engine.projects.trust(path, "workspace")
    return McpRegistry(engine.store), path


def _file(tmp_path: Path, doc: dict[str, object], name: str = "def.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_registering_reads_the_file_and_replacing_needs_the_current_hash_cli01_cli05(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry, _ = _registry(engine, project_dir)
    first = registry.add(_file(tmp_path, STDIO | {"env": {"TOKEN": "literal"}}))
    assert first.id == "config:tools"
    assert registry.add(_file(tmp_path, STDIO | {"env": {"TOKEN": "literal"}})).sha256 == first.sha256
    changed = _file(tmp_path, STDIO | {"description": "new"})
    with pytest.raises(ConflictError, match="--hash"):
        registry.add(changed)
    with pytest.raises(ConflictError):
        registry.add(changed, replace_hash="0" * 64)
    assert registry.add(changed, replace_hash=first.sha256).sha256 == sha256_hex(changed.read_bytes())


def test_the_catalog_shows_ids_hashes_states_and_variable_names_never_values_cli01_cli04(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(engine, project_dir)
    registry.add(_file(tmp_path, STDIO | {"env": {"LIT": "literal-secret"}, "env_refs": {"TOKEN": "MY_TOKEN"}}))
    doc = registry.catalog(path, trusted=True)
    assert "literal-secret" not in json.dumps(doc)
    (server,) = doc["servers"]
    assert server["env_names"] == ["LIT", "TOKEN"] and server["env_refs"] == {"TOKEN": "MY_TOKEN"}
    assert server["grant"] == {"state": "disabled", "hash": None}


def test_a_fifth_enabled_server_is_refused_and_a_stale_hash_cannot_enable_cli02_cli05(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(engine, project_dir)
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
    registry.enable(path, added[0].id, added[0].sha256, trusted=True)  # re-enabling one of the four is fine
    grants = registry.grants(path)
    assert len(grants) == MCP_ENABLED_SERVERS_MAX and grants[added[0].id] == added[0].sha256


def test_enabling_needs_a_trusted_project_and_an_existing_valid_definition_cli02(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry = McpRegistry(engine.store)
    path = engine.project(project_dir).path
    added = registry.add(_file(tmp_path, STDIO))
    with pytest.raises(PolicyError, match="trusted project"):
        registry.enable(path, added.id, added.sha256, trusted=False)
    with pytest.raises(NotFound):
        registry.enable(path, "config:nope", added.sha256, trusted=True)


def test_removal_revokes_grants_and_identical_reregistration_does_not_reactivate_cli05(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(engine, project_dir)
    definition = registry.add(_file(tmp_path, STDIO))
    registry.enable(path, definition.id, definition.sha256, trusted=True)
    with pytest.raises(ConflictError):
        registry.remove(definition.id, "0" * 64)
    assert registry.remove(definition.id, definition.sha256)["grants_revoked"] == 1
    again = registry.add(_file(tmp_path, STDIO))
    assert again.sha256 == definition.sha256
    assert registry.grants(path) == {}
    assert registry.snapshot(path).servers == ()


def test_changed_missing_and_invalid_project_definitions_need_review_before_new_tasks_cli06(
    engine: Engine, project_dir: Path
) -> None:
    registry, path = _registry(engine, project_dir)
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
    registry.disable(path, "project:.shadowcode/mcp/b.json")
    with pytest.raises(NotFound):
        registry.disable(path, "project:.shadowcode/mcp/b.json")


def test_a_project_file_cannot_grant_itself_or_borrow_a_global_grant_cli05(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    registry, path = _registry(engine, project_dir)
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


def test_redaction_replaces_every_configured_value_in_keys_and_strings_in_one_pass_cli04() -> None:
    redactor = Redactor(["abc", "abcdef", ""])
    doc = {"abc-key": ["xabcdefx", {"n": 1, "t": "abc abc"}], "none": None}
    assert redactor.redact(doc) == {
        f"{REDACTED}-key": [f"x{REDACTED}x", {"n": 1, "t": f"{REDACTED} {REDACTED}"}],
        "none": None,
    }
    assert Redactor().redact(doc) is doc
