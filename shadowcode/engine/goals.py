"""Durable goals of a project (SRV-14). Goals are records only: nothing here starts a task.

A goal is a :class:`~shadowcode.store.goals.GoalRecord` (``id``, ``title``, ``status``
``active``/``done``/``abandoned``, ``progress`` notes oldest first, ``created_at``,
``updated_at`` in Unix seconds); a listing gives :class:`~shadowcode.store.goals.GoalSummary`.
The rows live in :attr:`Store.goals <shadowcode.store.Store>`; this class adds the bounds, the
state rules and the errors.
"""

from __future__ import annotations

from pathlib import Path

from shadowcode.errors import NotFound, ToolError
from shadowcode.limits import GOAL_TEXT_MAX_BYTES, GOALS_LIST_MAX
from shadowcode.store import Store
from shadowcode.store.goals import GoalRecord, GoalSummary

__all__ = ["Goals"]


def _bounded(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        raise ToolError(f"{what} must be non-empty text")
    size = len(text.encode("utf-8"))
    if size > GOAL_TEXT_MAX_BYTES:
        raise ToolError(f"{what} is {size} bytes; the limit is {GOAL_TEXT_MAX_BYTES} bytes")
    return text


class Goals:
    """Creates, lists, inspects, advances and abandons goals, always within one project (SRV-08)."""

    def __init__(self, store: Store) -> None:
        self._rows = store.goals

    def create(self, project: Path, title: str) -> GoalRecord:
        """Create an active goal; returns it.

        Raises:
            ToolError: empty title or one over GOAL_TEXT_MAX_BYTES.
        """
        return self._rows.create(project, _bounded(title, "title"))

    def get(self, project: Path, goal_id: str) -> GoalRecord:
        """One goal with its progress notes, oldest first.

        Raises:
            NotFound: no such goal in this project (another project's goal is not found either).
        """
        goal = self._rows.get(project, goal_id)
        if goal is None:
            raise NotFound(f"no goal {goal_id!r} in this project", goal_id=goal_id)
        return goal

    def list(self, project: Path, limit: int = GOALS_LIST_MAX) -> list[GoalSummary]:
        """Up to ``limit`` goals of this project, newest first, without progress notes."""
        return self._rows.list(project, max(1, min(limit, GOALS_LIST_MAX)))

    def advance(self, project: Path, goal_id: str, note: str, done: bool = False) -> GoalRecord:
        """Record a progress note; ``done`` also marks the goal done. Returns the goal.

        Raises:
            NotFound: no such goal in this project.
            ToolError: empty or oversized note, or the goal is no longer active.
        """
        goal = self.get(project, goal_id)
        note = _bounded(note, "note")
        if goal.status != "active":
            raise ToolError(f"goal {goal_id} is {goal.status}; only active goals advance")
        self._rows.update(goal.id, "done" if done else "active", note)
        return self.get(project, goal_id)

    def abandon(self, project: Path, goal_id: str, note: str | None = None) -> GoalRecord:
        """Mark an active goal abandoned, with an optional note. Returns the goal.

        Raises:
            NotFound: no such goal in this project.
            ToolError: the goal is not active, or the note is oversized.
        """
        goal = self.get(project, goal_id)
        if goal.status != "active":
            raise ToolError(f"goal {goal_id} is {goal.status}; only active goals can be abandoned")
        self._rows.update(goal.id, "abandoned", _bounded(note, "note") if note else None)
        return self.get(project, goal_id)
