"""The shared vocabularies: levels are ordered, modes know whether they write, states whether they are active."""

from __future__ import annotations

import pytest

from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus


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
