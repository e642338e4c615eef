"""Where each host keeps its MCP config (shadowcode/mcp/client/imports/locations.py). Covers CW-01."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.mcp.client.imports import well_known

pytestmark = pytest.mark.req("CW-01")


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}", encoding="utf-8")
    return path


def test_existing_files_only_project_ones_first(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    found_paths = [
        _touch(project / ".mcp.json"),
        _touch(project / ".cursor" / "mcp.json"),
        _touch(project / ".vscode" / "mcp.json"),
        _touch(home / ".claude.json"),
        _touch(home / ".cursor" / "mcp.json"),
    ]
    (project / ".codex" / "config.toml").mkdir(parents=True)  # a folder is no config file
    found = well_known(home, project)
    assert [loc.path for loc in found] == found_paths
    assert [(loc.host, loc.scope) for loc in found] == [
        ("claude", "project"),
        ("cursor", "project"),
        ("vscode", "project"),
        ("claude", "user"),
        ("cursor", "user"),
    ]
    assert [loc.host for loc in well_known(home, None)] == ["claude", "cursor"]


def test_codex_home_is_honoured(tmp_path: Path) -> None:
    home, codex_home = tmp_path / "home", tmp_path / "elsewhere"
    _touch(home / ".codex" / "config.toml")
    moved = _touch(codex_home / "config.toml")
    assert [loc.path for loc in well_known(home, None, codex_home)] == [moved]
    assert [loc.path for loc in well_known(home, None)] == [home / ".codex" / "config.toml"]
