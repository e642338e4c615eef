"""Durable goals and their progress notes: tables ``goals`` and ``goal_progress`` (ENG-03, SRV-14).

Every read names the project, so another project's goal is never found by id (SRV-08).
A goal's ``status`` is ``active``, ``done`` or ``abandoned`` (the table's CHECK).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from shadowcode.store.database import Database
from shadowcode.store.records import Record

__all__ = ["GoalRecord", "GoalRepository", "GoalState", "GoalSummary", "ProgressNote"]

GoalState = Literal["active", "done", "abandoned"]


@dataclass(frozen=True, slots=True)
class ProgressNote(Record):
    """One progress note of a goal."""

    note: str
    at: int


@dataclass(frozen=True, slots=True)
class GoalSummary(Record):
    """A goal as a listing shows it: no progress notes."""

    id: str
    title: str
    status: GoalState
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class GoalRecord(Record):
    """One goal with its progress notes, oldest first."""

    id: str
    title: str
    status: GoalState
    progress: tuple[ProgressNote, ...]
    created_at: int
    updated_at: int


class GoalRepository:
    """Rows of ``goals`` and ``goal_progress``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, project: Path | str, title: str) -> GoalRecord:
        """Insert an active goal with a new id; returns it."""
        goal_id = "goal_" + secrets.token_hex(6)
        now = int(time.time())
        self._db.execute(
            "INSERT INTO goals (id, project, title, status, created_at, updated_at) VALUES (?, ?, ?, 'active', ?, ?)",
            (goal_id, str(project), title, now, now),
        )
        found = self.get(project, goal_id)
        assert found is not None
        return found

    def get(self, project: Path | str, goal_id: str) -> GoalRecord | None:
        """One goal of ``project`` with its notes, or None (also for another project's goal)."""
        row = self._db.row(
            "SELECT id, title, status, created_at, updated_at FROM goals WHERE id = ? AND project = ?",
            (goal_id, str(project)),
        )
        if row is None:
            return None
        notes = self._db.rows("SELECT note, at FROM goal_progress WHERE goal_id = ? ORDER BY id", (goal_id,))
        return GoalRecord(
            id=row["id"],
            title=row["title"],
            status=row["status"],
            progress=tuple(ProgressNote(**n) for n in notes),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def list(self, project: Path | str, limit: int) -> list[GoalSummary]:
        """Up to ``limit`` goals of ``project``, newest first."""
        rows = self._db.rows(
            "SELECT id, title, status, created_at, updated_at FROM goals WHERE project = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (str(project), limit),
        )
        return [GoalSummary(**r) for r in rows]

    def update(self, goal_id: str, status: GoalState, note: str | None = None) -> None:
        """Set the goal's status (and ``updated_at``), adding ``note`` first when given; one transaction."""
        now = int(time.time())
        params: tuple[Any, ...] = (status, now, goal_id)
        with self._db.atomic():
            if note is not None:
                self._db.execute("INSERT INTO goal_progress (goal_id, note, at) VALUES (?, ?, ?)", (goal_id, note, now))
            self._db.execute("UPDATE goals SET status = ?, updated_at = ? WHERE id = ?", params)
