"""Write policy and the checks of a requested task (engine/policy.py): SRV-09, SRV-10, ENG-04."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine.policy import Access, agent_request, require_write, within_ceiling
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.errors import PolicyError, ToolError


@pytest.mark.req("ENG-04", "SRV-10")
@pytest.mark.parametrize("mode", ["build", "plan", "review", TaskMode.PLAN])
@pytest.mark.parametrize("level", ["read_only", "workspace", "elevated", PermissionLevel.ELEVATED])
def test_an_agent_request_in_words_becomes_the_enums(mode: str, level: str) -> None:
    assert agent_request(mode, level) == (TaskMode(mode), PermissionLevel(level))
    assert isinstance(agent_request(mode, level)[1], PermissionLevel)


@pytest.mark.req("ENG-04")
@pytest.mark.parametrize("mode", ["test", "Build", "", None, ["build"]])
def test_an_agent_request_for_a_mode_that_is_no_agent_mode_is_refused(mode: object) -> None:
    with pytest.raises(ToolError, match="use build, plan or review"):
        agent_request(mode, "read_only")  # type: ignore[arg-type]


@pytest.mark.req("SRV-10")
@pytest.mark.parametrize("level", ["root", "READ_ONLY", "", None, ["workspace"]])
def test_an_agent_request_for_an_unknown_level_is_refused_naming_the_levels(level: object) -> None:
    with pytest.raises(ToolError, match="use one of read_only, workspace, elevated"):
        agent_request("build", level)  # type: ignore[arg-type]


@pytest.mark.req("SRV-10")
def test_a_level_is_within_a_ceiling_at_or_above_it() -> None:
    assert within_ceiling("read_only", PermissionLevel.WORKSPACE)
    assert within_ceiling(PermissionLevel.WORKSPACE, "workspace")
    assert not within_ceiling("elevated", "workspace")
    with pytest.raises(ValueError):
        within_ceiling("root", "elevated")


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
