"""Durable goals of a project (SRV-14). Goals are records only: nothing here starts a task.

A goal is ``{"id", "title", "status": "active"|"done"|"abandoned", "progress": [{"note", "at"}],
"created_at", "updated_at"}`` with times in Unix seconds.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from shadowcode.errors import NotFound, ToolError
from shadowcode.limits import GOAL_TEXT_MAX_BYTES, GOALS_LIST_MAX
from shadowcode.store import Store

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
        self._store = store

    def create(self, project: Path, title: str) -> dict[str, Any]:
        """Create an active goal; returns it.

        Raises:
            ToolError: empty title or one over GOAL_TEXT_MAX_BYTES.
        """
        title = _bounded(title, "title")
        goal_id = "goal_" + secrets.token_hex(6)
        now = int(time.time())
        self._store.execute(
            "INSERT INTO goals (id, project, title, status, created_at, updated_at) VALUES (?, ?, ?, 'active', ?, ?)",
            (goal_id, str(project), title, now, now),
        )
        return self.get(project, goal_id)

    def get(self, project: Path, goal_id: str | None) -> dict[str, Any]:
        """One goal with its progress notes, oldest first.

        Raises:
            NotFound: no such goal in this project (another project's goal is not found either).
        """
        if not goal_id:
            raise ToolError("goal_id is required")
        row = self._store.row("SELECT * FROM goals WHERE id = ? AND project = ?", (goal_id, str(project)))
        if row is None:
            raise NotFound(f"no goal {goal_id!r} in this project", goal_id=goal_id)
        progress = self._store.rows("SELECT note, at FROM goal_progress WHERE goal_id = ? ORDER BY id", (goal_id,))
        return {
            "id": row["id"],
            "title": row["title"],
            "status": row["status"],
            "progress": progress,
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
        }

    def list(self, project: Path, limit: int = GOALS_LIST_MAX) -> list[dict[str, Any]]:
        """Up to ``limit`` goals of this project, newest first, without progress notes."""
        limit = max(1, min(limit, GOALS_LIST_MAX))
        return self._store.rows(
            "SELECT id, title, status, created_at, updated_at FROM goals WHERE project = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (str(project), limit),
        )

    def advance(self, project: Path, goal_id: str | None, note: str, done: bool = False) -> dict[str, Any]:
        """Record a progress note; ``done`` also marks the goal done. Returns the goal.

        Raises:
            NotFound: no such goal in this project.
            ToolError: empty or oversized note, or the goal is no longer active.
        """
        goal = self.get(project, goal_id)
        note = _bounded(note, "note")
        if goal["status"] != "active":
            raise ToolError(f"goal {goal_id} is {goal['status']}; only active goals advance")
        now = int(time.time())
        with self._store.atomic():
            self._store.execute("INSERT INTO goal_progress (goal_id, note, at) VALUES (?, ?, ?)", (goal_id, note, now))
            self._store.execute(
                "UPDATE goals SET status = ?, updated_at = ? WHERE id = ?", ("done" if done else "active", now, goal_id)
            )
        return self.get(project, goal_id)

    def abandon(self, project: Path, goal_id: str | None, note: str | None = None) -> dict[str, Any]:
        """Mark an active goal abandoned, with an optional note. Returns the goal.

        Raises:
            NotFound: no such goal in this project.
            ToolError: the goal is not active.
        """
        goal = self.get(project, goal_id)
        if goal["status"] != "active":
            raise ToolError(f"goal {goal_id} is {goal['status']}; only active goals can be abandoned")
        now = int(time.time())
        with self._store.atomic():
            if note:
                self._store.execute(
                    "INSERT INTO goal_progress (goal_id, note, at) VALUES (?, ?, ?)",
                    (goal_id, _bounded(note, "note"), now),
                )
            self._store.execute("UPDATE goals SET status = 'abandoned', updated_at = ? WHERE id = ?", (now, goal_id))
        return self.get(project, goal_id)
