"""Reading definition files from the project's definition folders: ids, hashes, links, FIFOs.

Covers CLI-03.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shadowcode.engine.mcp.definition_files import project_definitions, read_project_definition
from shadowcode.errors import ConfigError
from shadowcode.mcp.client.definitions import DefinitionProblem, ServerDefinition, sha256_hex

pytestmark = pytest.mark.req("CLI-03")

STDIO = {"name": "tools", "command": ["server", "--stdio"]}


def _problem(project: Path, def_id: str) -> str:
    found = {d.id: d for d in project_definitions(project)}
    item = found[def_id]
    assert isinstance(item, DefinitionProblem)
    return item.error


@pytest.mark.req("CLI-03")
def test_project_files_are_read_directly_in_both_folders_in_json_and_yaml_only(project_dir: Path) -> None:
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


@pytest.mark.req("CLI-03")
def test_a_symlinked_definition_pointing_outside_its_folder_is_refused(project_dir: Path, tmp_path: Path) -> None:
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


@pytest.mark.req("CLI-03")
def test_a_definition_folder_that_leaves_the_project_is_ignored(project_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.json").write_text(json.dumps(STDIO), encoding="utf-8")
    (project_dir / ".shadowcode").mkdir()
    (project_dir / ".shadowcode/mcp").symlink_to(elsewhere)
    assert project_definitions(project_dir) == []


@pytest.mark.req("CLI-03")
def test_a_fifo_named_like_a_definition_is_refused_without_blocking(project_dir: Path) -> None:
    folder = project_dir / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.json")
    assert "not a regular file" in _problem(project_dir, "project:.shadowcode/mcp/pipe.json")
