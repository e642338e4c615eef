"""Durable goals (SRV-14), confined to their project (SRV-08)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine.state import EngineState
from shadowcode.errors import NotFound, ToolError
from shadowcode.limits import GOAL_TEXT_MAX_BYTES


@pytest.fixture
def root(state: EngineState, project_dir: Path) -> Path:
    return state.project_at(project_dir).path


@pytest.mark.req("SRV-14")
def test_create_advance_and_finish_a_goal(state: EngineState, root: Path) -> None:
    goal = state.goals.create(root, "ship it")
    assert goal.status == "active" and goal.progress == ()
    step = state.goals.advance(root, goal.id, "half way")
    assert [p.note for p in step.progress] == ["half way"]
    done = state.goals.advance(root, goal.id, "finished", done=True)
    assert done.status == "done"
    with pytest.raises(ToolError, match="only active"):
        state.goals.advance(root, goal.id, "more")
    assert [g.id for g in state.goals.list(root)] == [goal.id]


@pytest.mark.req("SRV-14")
def test_abandon_marks_the_goal_abandoned(state: EngineState, root: Path) -> None:
    goal = state.goals.create(root, "maybe")
    assert state.goals.abandon(root, goal.id, "not needed").status == "abandoned"


@pytest.mark.req("SRV-08")
def test_another_projects_goal_is_not_found(state: EngineState, root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    foreign = state.goals.create(state.project_at(other).path, "theirs")
    with pytest.raises(NotFound):
        state.goals.get(root, foreign.id)
    with pytest.raises(NotFound):
        state.goals.abandon(root, foreign.id)
    assert state.goals.list(root) == []


@pytest.mark.req("SRV-14")
def test_goal_title_at_the_limit_is_accepted_and_one_past_refused(state: EngineState, root: Path) -> None:
    state.goals.create(root, "t" * GOAL_TEXT_MAX_BYTES)
    with pytest.raises(ToolError, match="limit"):
        state.goals.create(root, "t" * (GOAL_TEXT_MAX_BYTES + 1))
    assert len(state.goals.list(root)) == 1
