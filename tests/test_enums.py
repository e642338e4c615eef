"""The shared vocabularies: levels are ordered, modes know whether they write, states whether they are active."""

from __future__ import annotations

import pytest

from shadowcode.cli.mcp_import import _label
from shadowcode.enums import ImportHost, PermissionLevel, TaskMode, TaskStatus
from shadowcode.mcp.client.imports import HOSTS


@pytest.mark.req("SRV-10")
def test_a_level_is_within_a_ceiling_at_or_above_it() -> None:
    assert PermissionLevel.READ_ONLY.within(PermissionLevel.WORKSPACE)
    assert PermissionLevel.WORKSPACE.within(PermissionLevel.WORKSPACE)
    assert not PermissionLevel.ELEVATED.within(PermissionLevel.WORKSPACE)
    assert PermissionLevel("workspace") == "workspace"


@pytest.mark.req("ENG-04")
def test_only_build_tasks_and_test_jobs_write() -> None:
    assert [m for m in TaskMode if m.writes] == [TaskMode.BUILD, TaskMode.TEST]


@pytest.mark.req("SRV-16")
def test_queued_running_and_waiting_jobs_are_the_active_ones() -> None:
    assert {s for s in TaskStatus if s.active} == {TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.WAITING}


@pytest.mark.req("CW-01")
def test_every_import_host_has_one_label_for_the_parser_and_the_report() -> None:
    assert HOSTS == tuple(h.value for h in ImportHost) and HOSTS[-1] == "generic"
    assert [_label(h) for h in HOSTS][:4] == ["Claude Code", "Cursor", "Codex", "VS Code"]
    assert _label("generic") == "mcp.json" and _label("elsewhere") == "elsewhere"
    assert all(h.label for h in ImportHost)
