"""The policy every verb handler shares: the caller's project and the write rule (engine/state.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine.api import Access, Caller
from shadowcode.engine.projects import Project
from shadowcode.engine.state import EngineState, require_write
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError, PolicyError, ToolError


@pytest.mark.req("SRV-09")
def test_a_write_needs_the_flag_a_trusted_project_and_a_level_above_read_only(tmp_path: Path) -> None:
    trusted = Project(path=tmp_path, trusted=True, level=PermissionLevel.WORKSPACE)
    require_write(trusted, Access(allow_write=True), "a change")
    with pytest.raises(PolicyError, match="--allow-write"):
        require_write(trusted, Access(), "a change")
    with pytest.raises(PolicyError, match="shadowcode trust"):
        require_write(Project(path=tmp_path, trusted=False, level=PermissionLevel.WORKSPACE), Access(True), "a change")
    with pytest.raises(PolicyError, match="configured level read_only"):
        require_write(Project(path=tmp_path, trusted=True, level=PermissionLevel.READ_ONLY), Access(True), "a change")


@pytest.mark.req("ENG-02")
def test_the_callers_project_is_canonical_recorded_and_untrusted_when_new(
    state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project_dir)
    project = state.project(Caller(project=link))
    assert project.path == project_dir.resolve() and project.trusted is False
    assert state.projects.get(project.path).path == project.path


@pytest.mark.req("ENG-02")
def test_a_caller_without_a_usable_project_is_refused(state: EngineState, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="needs a project"):
        state.project(Caller())
    with pytest.raises(ConfigError, match="does not exist"):
        state.project(Caller(project=tmp_path / "missing"))
