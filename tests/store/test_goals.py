"""The goals repository: goals and their progress notes, always read within one project (store/goals.py)."""

from __future__ import annotations

import pytest

from shadowcode.store import Store
from shadowcode.store.goals import GoalSummary, ProgressNote

from .conftest import OTHER, PROJECT

pytestmark = pytest.mark.req("ENG-03", "SRV-14")


def test_a_created_goal_is_active_without_notes(store: Store) -> None:
    goal = store.goals.create(PROJECT, "ship it")
    assert goal.id.startswith("goal_") and goal.title == "ship it" and goal.status == "active"
    assert goal.progress == () and goal.created_at == goal.updated_at
    assert store.goals.get(PROJECT, goal.id) == goal
    assert goal.as_dict() == {
        "id": goal.id,
        "title": "ship it",
        "status": "active",
        "progress": [],
        "created_at": goal.created_at,
        "updated_at": goal.updated_at,
    }


@pytest.mark.req("SRV-08")
def test_a_missing_goal_or_one_of_another_project_is_none(store: Store) -> None:
    theirs = store.goals.create(OTHER, "theirs")
    assert store.goals.get(PROJECT, "goal_missing") is None
    assert store.goals.get(PROJECT, theirs.id) is None
    assert store.goals.list(PROJECT, 10) == []


def test_update_adds_the_note_and_sets_the_status_together(store: Store) -> None:
    goal = store.goals.create(PROJECT, "ship it")
    store.goals.update(goal.id, "active", "half way")
    store.goals.update(goal.id, "done", "finished")
    store.goals.update(goal.id, "done")
    done = store.goals.get(PROJECT, goal.id)
    assert done is not None and done.status == "done"
    assert [n.note for n in done.progress] == ["half way", "finished"]
    assert isinstance(done.progress[0], ProgressNote)
    assert done.as_dict()["progress"] == [{"note": "half way", "at": done.progress[0].at}, done.progress[1].as_dict()]


def test_list_is_newest_first_without_notes_and_bounded(store: Store) -> None:
    first = store.goals.create(PROJECT, "one")
    second = store.goals.create(PROJECT, "two")
    listed = store.goals.list(PROJECT, 10)
    assert [g.id for g in listed] == [second.id, first.id]
    assert isinstance(listed[0], GoalSummary)
    assert list(listed[0].as_dict()) == ["id", "title", "status", "created_at", "updated_at"]
    assert [g.id for g in store.goals.list(PROJECT, 1)] == [second.id]
