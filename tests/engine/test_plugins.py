"""Plugin bundles (engine/plugins.py, engine/mcp/bundles.py): review, trust, enable, disable, revoke,
drift, the bundle's limits and name-collision precedence.

Covers CW-12.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.mcp.bundles import bundle_digest, read_bundle
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.engine.plugins import PluginRegistry
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX, PLUGIN_BUNDLE_BYTES_MAX, PLUGIN_BUNDLE_FILES_MAX
from shadowcode.mcp.client.definitions import ServerDefinition

pytestmark = pytest.mark.req("CW-12")

ECHO_ID = "plugin:plugin-5-notes-echo"


def _bundle(folder: Path, servers: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    servers = servers or {
        "echo": {
            "command": ["python3", "${PLUGIN_ROOT}/server.py"],
            "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"},
            "enabled_tools": ["echo"],
        },
        "remote": {
            "url": "https://api.example.com/mcp",
            "network_hosts": ["api.example.com"],
            "bearer_token_env_var": "NOTES_KEY",
            "env_headers": {"X-Team": "NOTES_TEAM"},
        },
    }
    (folder / "plugin.json").write_text(json.dumps({"name": "notes", "mcp_servers": servers}), encoding="utf-8")
    (folder / "server.py").write_text("print('server')\n", encoding="utf-8")
    return folder


def _setup(state: EngineState, project_dir: Path, tmp_path: Path) -> tuple[PluginRegistry, McpRegistry, Path, Path]:
    project = state.project_at(project_dir).path
    state.projects.trust(project, PermissionLevel.WORKSPACE)
    return PluginRegistry(state.store), state.mcp_servers, project, _bundle(tmp_path / "notes")


def _trusted(plugins: PluginRegistry, bundle: Path) -> str:
    digest = plugins.review(bundle)["digest"]
    plugins.trust(bundle, digest)
    return digest


def test_review_discloses_argv_environment_endpoint_auth_and_filters_but_no_secret(
    state: EngineState, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "s3cret-token")
    monkeypatch.setenv("NOTES_KEY", "s3cret-key")
    plugins, _, _, bundle = _setup(state, project_dir, tmp_path)
    review = plugins.review(bundle)
    echo, remote = review["servers"]
    assert echo["argv"] == ["python3", f"{bundle.resolve()}/server.py"]
    assert echo["env"] == [{"variable": "NOTES_TOKEN", "source": "NOTES_TOKEN"}]
    assert echo["enabled_tools"] == ["echo"] and echo["identity"] == "plugin-5-notes-echo"
    assert remote["url"] == "https://api.example.com/mcp" and remote["network_hosts"] == ["api.example.com"]
    assert remote["auth"] == {"bearer_token_env_var": "NOTES_KEY", "env_headers": {"X-Team": "NOTES_TEAM"}}
    assert review["trusted_digest"] is None and review["files"] == 2 and "your user" in review["authority"]
    assert "s3cret" not in json.dumps(review)


def test_trust_stages_the_snapshot_without_enabling(state: EngineState, project_dir: Path, tmp_path: Path) -> None:
    plugins, mcp, project, bundle = _setup(state, project_dir, tmp_path)
    with pytest.raises(ConflictError, match="review it again"):
        plugins.trust(bundle, "0" * 64)
    assert plugins.list(project) == []
    digest = _trusted(plugins, bundle)
    assert [p["state"] for p in plugins.list(project)] == ["trusted"]
    catalog = {s["id"]: s for s in mcp.catalog(project, trusted=True)["servers"]}
    assert catalog[ECHO_ID]["grant"] == {"state": "disabled", "hash": None}
    assert catalog[ECHO_ID]["hash"] == digest and catalog[ECHO_ID]["plugin"] == "notes"
    assert mcp.snapshot(project).servers == ()


def test_enable_attaches_the_snapshot_and_drift_fails_closed(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    plugins, mcp, project, bundle = _setup(state, project_dir, tmp_path)
    digest = _trusted(plugins, bundle)
    with pytest.raises(PolicyError, match="trusted project"):
        plugins.enable(project, "notes", trusted=False)
    with pytest.raises(ConfigError, match="plugin enable"):
        mcp.enable(project, ECHO_ID, digest, trusted=True)
    done = plugins.enable(project, "notes", trusted=True)
    assert done["servers"] == [ECHO_ID, "plugin:plugin-5-notes-remote"] and done["state"] == "enabled"
    assert mcp.grants(project) == {ECHO_ID: digest, "plugin:plugin-5-notes-remote": digest}
    snapshot = mcp.snapshot(project)
    echo = next(d for d in snapshot.servers if d.id == ECHO_ID)
    assert echo.name == "plugin-5-notes-echo" and echo.sha256 == digest
    assert mcp.plugin_problem(project, echo) is None
    # Editing any file of the bundle after trust is drift.
    with (bundle / "server.py").open("a", encoding="utf-8") as handle:
        handle.write("# edited\n")
    assert mcp.plugin_problem(project, echo) == "the bundle of plugin notes changed since it was trusted (drift)"
    assert mcp.plugin_problem(project, echo, check_bundle=False) is None
    drifted = mcp.snapshot(project)
    assert drifted.servers == () and len(drifted.notes) == 2
    assert all("left out: plugin notes: its bundle changed since it was trusted (drift)" in n for n in drifted.notes)
    assert [p["state"] for p in plugins.list(project)] == ["drifted"]
    with pytest.raises(ConflictError, match="drift"):
        plugins.enable(project, "notes", trusted=True)


def test_disable_and_revoke_remove_the_grants(state: EngineState, project_dir: Path, tmp_path: Path) -> None:
    plugins, mcp, project, bundle = _setup(state, project_dir, tmp_path)
    (tmp_path / "other").mkdir()
    other = state.project_at(tmp_path / "other").path
    state.projects.trust(other, PermissionLevel.WORKSPACE)
    _trusted(plugins, bundle)
    plugins.enable(project, "notes", trusted=True)
    plugins.enable(other, "notes", trusted=True)
    echo = next(d for d in mcp.snapshot(project).servers if d.id == ECHO_ID)
    assert plugins.disable(project, "notes")["grants_revoked"] == 2
    assert mcp.grants(project) == {} and len(mcp.grants(other)) == 2
    assert mcp.plugin_problem(project, echo) == "the plugin notes was disabled for this project"
    with pytest.raises(NotFound, match="not enabled"):
        plugins.disable(project, "notes")
    assert plugins.revoke("notes")["grants_revoked"] == 2
    assert mcp.grants(other) == {} and plugins.list(other) == []
    assert mcp.plugin_problem(other, echo) == "the plugin notes was revoked"
    assert not any(s["id"].startswith("plugin:") for s in mcp.catalog(project, trusted=True)["servers"])
    with pytest.raises(NotFound, match="no trusted plugin"):
        plugins.revoke("notes")


def test_trusting_other_content_revokes_the_old_grants(state: EngineState, project_dir: Path, tmp_path: Path) -> None:
    plugins, mcp, project, bundle = _setup(state, project_dir, tmp_path)
    _trusted(plugins, bundle)
    plugins.enable(project, "notes", trusted=True)
    (bundle / "README").write_text("more\n", encoding="utf-8")
    changed = plugins.trust(bundle, plugins.review(bundle)["digest"])
    assert changed["grants_revoked"] == 2 and mcp.grants(project) == {}


def test_global_and_project_entries_win_a_name_collision(state: EngineState, project_dir: Path, tmp_path: Path) -> None:
    plugins, mcp, project, bundle = _setup(state, project_dir, tmp_path)
    _trusted(plugins, bundle)
    plugins.enable(project, "notes", trusted=True)
    # A global definition with the plugin server's very name: it can still be enabled, and it wins.
    user_file = tmp_path / "user.json"
    user_file.write_text(json.dumps({"name": "plugin-5-notes-echo", "command": ["mine"]}), encoding="utf-8")
    mine = mcp.add(user_file)
    mcp.enable(project, mine.id, mine.sha256, trusted=True)
    snapshot = mcp.snapshot(project)
    names = {d.id: d.name for d in snapshot.servers}
    assert names == {"config:plugin-5-notes-echo": "plugin-5-notes-echo", "plugin:plugin-5-notes-remote":
                     "plugin-5-notes-remote"}  # fmt: skip
    assert any(ECHO_ID in n and "wins" in n for n in snapshot.notes)
    catalog = {s["id"]: s for s in mcp.catalog(project, trusted=True)["servers"]}
    assert catalog[ECHO_ID]["shadowed_by"] == "config:plugin-5-notes-echo"
    # A project file with that name wins the same way.
    mcp.disable(project, mine.id)
    folder = project / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    (folder / "echo.json").write_text(json.dumps({"name": "plugin-5-notes-echo", "command": ["p"]}), encoding="utf-8")
    local = next(d for d in mcp.definitions(project) if d.id == "project:.shadowcode/mcp/echo.json")
    assert isinstance(local, ServerDefinition)
    mcp.enable(project, local.id, local.sha256, trusted=True)
    assert {d.id for d in mcp.snapshot(project).servers} == {local.id, "plugin:plugin-5-notes-remote"}
    # Enabling the plugin again reports what it loses.
    assert plugins.enable(project, "notes", trusted=True)["shadowed"] == {ECHO_ID: local.id}


def test_enabling_stays_within_the_grant_limit(state: EngineState, project_dir: Path, tmp_path: Path) -> None:
    plugins, mcp, project, _ = _setup(state, project_dir, tmp_path)
    servers = {f"s{i}": {"command": ["x"]} for i in range(MCP_ENABLED_SERVERS_MAX + 1)}
    bundle = _bundle(tmp_path / "many", servers)
    _trusted(plugins, bundle)
    with pytest.raises(ConflictError, match=f"the limit is {MCP_ENABLED_SERVERS_MAX}"):
        plugins.enable(project, "notes", trusted=True)
    assert mcp.grants(project) == {}
    at = _bundle(tmp_path / "at", {f"s{i}": {"command": ["x"]} for i in range(MCP_ENABLED_SERVERS_MAX)})
    _trusted(plugins, at)
    assert len(plugins.enable(project, "notes", trusted=True)["servers"]) == MCP_ENABLED_SERVERS_MAX


def test_bundle_file_count_limit(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b")
    sub = bundle / "data"
    sub.mkdir()
    for i in range(PLUGIN_BUNDLE_FILES_MAX - 2):
        (sub / f"f{i}").write_bytes(b"x")
    assert read_bundle(bundle).files == PLUGIN_BUNDLE_FILES_MAX
    (sub / "one-more").write_bytes(b"x")
    with pytest.raises(ConfigError, match=f"more than {PLUGIN_BUNDLE_FILES_MAX} files"):
        read_bundle(bundle)


def test_bundle_folder_count_limit(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b")
    for i in range(PLUGIN_BUNDLE_FILES_MAX):
        (bundle / f"d{i}").mkdir()
    assert read_bundle(bundle).files == 2
    (bundle / "d0" / "one-more").mkdir()
    with pytest.raises(ConfigError, match=f"more than {PLUGIN_BUNDLE_FILES_MAX} folders"):
        read_bundle(bundle)


def test_bundle_byte_limit(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b")
    used = sum(p.stat().st_size for p in bundle.iterdir())
    (bundle / "blob").write_bytes(b"\0" * (PLUGIN_BUNDLE_BYTES_MAX - used))
    digest = bundle_digest(bundle)[0]
    assert len(digest) == 64
    (bundle / "z").write_bytes(b"x")
    with pytest.raises(ConfigError, match=f"the limit is {PLUGIN_BUNDLE_BYTES_MAX}"):
        bundle_digest(bundle)


def test_links_and_special_files_are_refused(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b")
    (bundle / "link").symlink_to(bundle / "server.py")
    with pytest.raises(ConfigError, match="symbolic link"):
        read_bundle(bundle)
    (bundle / "link").unlink()
    os.mkfifo(bundle / "pipe")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_bundle(bundle)
    (bundle / "pipe").unlink()
    (bundle / "plugin.json").unlink()
    with pytest.raises(ConfigError, match="no plugin.json"):
        read_bundle(bundle)
    with pytest.raises(ConfigError, match="no such plugin bundle"):
        read_bundle(tmp_path / "missing")


def test_the_digest_covers_names_and_contents(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b")
    first = bundle_digest(bundle)[0]
    assert bundle_digest(bundle)[0] == first
    (bundle / "server.py").rename(bundle / "server2.py")
    assert bundle_digest(bundle)[0] != first
