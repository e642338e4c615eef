"""``mcp import`` in the engine (engine/mcp/config_import.py and the mcp_import verb).

Covers CW-01: each server becomes a config: definition that still needs review; nothing is
enabled, started or contacted; the same file twice changes nothing; a bad file imports nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from shadowcode.engine.api import Access, Caller, McpImport
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.config_import import import_configs
from shadowcode.engine.state import EngineState
from shadowcode.errors import ConfigError, PolicyError
from shadowcode.limits import MCP_IMPORT_FILE_MAX_BYTES, MCP_IMPORT_SERVERS_MAX

pytestmark = pytest.mark.req("CW-01")

CONFIGS = Path(__file__).resolve().parents[3] / "conformance/shadowcode_conformance/fixtures" / "configs"


def _copy(name: str, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIGS / name, to)
    return to


def _rows(state: EngineState) -> dict[str, str]:
    return {d.id: d.sha256 for d in state.mcp_servers.globals()}


def test_import_registers_disabled_definitions_and_a_second_import_changes_nothing(
    state: EngineState, tmp_path: Path, project_dir: Path
) -> None:
    path = _copy("claude.mcp.json", tmp_path / ".mcp.json")
    dry = import_configs(state.mcp_servers, McpImport(str(path), dry_run=True), None)
    assert [(e.source_name, e.outcome) for e in dry.servers] == [
        ("everything", "would_import"),
        ("fetch", "would_import"),
        ("remote", "would_import"),
        ("legacy", "skipped"),
    ]
    assert _rows(state) == {}

    done = import_configs(state.mcp_servers, McpImport(str(path)), None)
    assert [e.outcome for e in done.servers] == ["imported", "imported", "imported", "skipped"]
    assert [e.hash for e in done.servers] == [e.hash for e in dry.servers]
    rows = _rows(state)
    assert rows == {e.id: e.hash for e in done.servers if e.id}
    assert done.files[0].host == "claude" and done.files[0].servers == 4

    again = import_configs(state.mcp_servers, McpImport(str(path)), None)
    assert [e.outcome for e in again.servers] == ["unchanged", "unchanged", "unchanged", "skipped"]
    assert _rows(state) == rows
    assert state.mcp_servers.grants(project_dir) == {}
    catalog = state.mcp_servers.catalog(project_dir, trusted=False)
    assert {s["grant"]["state"] for s in catalog["servers"]} == {"disabled"}


def test_a_name_registered_with_other_content_is_kept(state: EngineState, tmp_path: Path) -> None:
    claude = _copy("claude.mcp.json", tmp_path / ".mcp.json")
    codex = _copy("codex.config.toml", tmp_path / "config.toml")
    cursor = _copy("cursor.mcp.json", tmp_path / ".cursor" / "mcp.json")
    import_configs(state.mcp_servers, McpImport(str(claude)), None)
    before = _rows(state)
    same = import_configs(state.mcp_servers, McpImport(str(cursor)), None)
    assert [e.outcome for e in same.servers] == ["unchanged", "unchanged"]  # configured alike in both hosts
    report = import_configs(state.mcp_servers, McpImport(str(codex)), None)
    assert [e.outcome for e in report.servers] == ["skipped", "imported", "unchanged"]
    assert "already registered with other content" in (report.servers[0].reason or "")
    assert {k: v for k, v in _rows(state).items() if k != "config:tools"} == before


def test_a_dry_run_over_two_files_sees_its_own_names(state: EngineState, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _copy("claude.mcp.json", home / ".claude.json")
    _copy("codex.config.toml", home / ".codex" / "config.toml")
    report = import_configs(state.mcp_servers, McpImport(dry_run=True, home=str(home)), None)
    assert [(f.host, f.scope) for f in report.files] == [("claude", "user"), ("codex", "user")]
    outcomes = {(e.host, e.source_name): e.outcome for e in report.servers}
    assert outcomes[("claude", "everything")] == "would_import"
    assert outcomes[("codex", "everything")] == "skipped"  # other content under a name this run takes
    assert outcomes[("codex", "tools")] == "would_import"
    only_codex = import_configs(state.mcp_servers, McpImport(dry_run=True, home=str(home), host="codex"), None)
    assert [f.host for f in only_codex.files] == ["codex"]


def test_a_toml_syntax_error_imports_nothing_from_any_file(state: EngineState, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _copy("claude.mcp.json", home / ".claude.json")
    bad = home / ".codex" / "config.toml"
    bad.parent.mkdir(parents=True)
    bad.write_text('[mcp_servers.a]\ncommand = "npx"\nargs = [\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line \d+, column \d+"):
        import_configs(state.mcp_servers, McpImport(home=str(home)), None)
    assert _rows(state) == {}


def test_unreadable_paths_are_refused(state: EngineState, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        import_configs(state.mcp_servers, McpImport(str(tmp_path / "missing.json")), None)
    with pytest.raises(ConfigError, match="absolute"):
        import_configs(state.mcp_servers, McpImport("relative.json"), None)
    with pytest.raises(ConfigError, match="--from 'emacs'"):
        import_configs(state.mcp_servers, McpImport(str(tmp_path), host="emacs"), None)
    with pytest.raises(ConfigError):
        import_configs(state.mcp_servers, McpImport(str(tmp_path)), None)


def test_the_file_size_limit(state: EngineState, tmp_path: Path) -> None:
    text = json.dumps({"mcpServers": {"a": {"command": "a"}}})
    path = tmp_path / "mcp.json"
    path.write_text(text + " " * (MCP_IMPORT_FILE_MAX_BYTES - len(text)), encoding="utf-8")
    assert import_configs(state.mcp_servers, McpImport(str(path), dry_run=True), None).servers
    path.write_text(text + " " * (MCP_IMPORT_FILE_MAX_BYTES - len(text) + 1), encoding="utf-8")
    with pytest.raises(ConfigError, match="nothing was imported"):
        import_configs(state.mcp_servers, McpImport(str(path)), None)
    assert _rows(state) == {}


def test_the_server_count_limit(state: EngineState, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"

    def write(count: int) -> None:
        servers = {f"s{i}": {"command": "x"} for i in range(count)}
        path.write_text(json.dumps({"servers": servers}), encoding="utf-8")

    write(MCP_IMPORT_SERVERS_MAX)
    assert len(import_configs(state.mcp_servers, McpImport(str(path), dry_run=True), None).servers) == 100
    write(MCP_IMPORT_SERVERS_MAX + 1)
    with pytest.raises(ConfigError, match=f"at most {MCP_IMPORT_SERVERS_MAX}"):
        import_configs(state.mcp_servers, McpImport(str(path)), None)
    assert _rows(state) == {}


@pytest.mark.anyio
async def test_the_verb_needs_write_access_and_finds_the_project_files(api: LocalEngine, project_dir: Path) -> None:
    _copy("vscode.mcp.json", project_dir / ".vscode" / "mcp.json")
    request = McpImport(home=str(project_dir / "no-home"))
    with pytest.raises(PolicyError):
        await api.mcp_import(request, Caller(project=project_dir, access=Access()))
    report = await api.mcp_import(request, Caller(project=project_dir, access=Access(True, True)))
    assert [(f.host, f.scope) for f in report.files] == [("vscode", "project")]
    assert [e.id for e in report.servers] == ["config:perplexity", "config:github"]
