"""Tasks and their event log: tables ``tasks`` and ``events`` (ENG-03, ENG-04, SRV-15, SRV-16).

A task is a :class:`TaskRecord`; its events are :class:`EventRecord` in id order, each with its
``data`` JSON object decoded. Timestamps are integer Unix seconds. Moving a task to a finished
status (not :attr:`TaskStatus.active`) also records ``finished_at`` and keeps an answer or
error given with it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus
from shadowcode.store.database import Database
from shadowcode.store.records import Record, decode_json, encode_json, vocabulary

__all__ = ["EventRecord", "SessionRecord", "TaskRecord", "TaskRepository"]

_COLUMNS = (
    "id, project, owner, mode, status, prompt, permission_level, model, answer, error, engine_id, "
    "created_at, updated_at, finished_at"
)
_ACTIVE = tuple(s.value for s in TaskStatus if s.active)
_NEWEST = " ORDER BY created_at DESC, rowid DESC LIMIT ?"


@dataclass(frozen=True, slots=True)
class TaskRecord(Record):
    """One task (job) row.

    Attributes:
        id: ``task_<hex>``.
        project: the canonical project path.
        owner: the owner id, None for a detached CLI job.
        engine_id: the engine that ran (or runs) it.
        finished_at: set when the status became a finished one.
    """

    id: str
    project: str
    owner: str | None
    mode: TaskMode
    status: TaskStatus
    prompt: str
    permission_level: PermissionLevel
    model: str | None
    answer: str | None
    error: str | None
    engine_id: str | None
    created_at: int
    updated_at: int
    finished_at: int | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TaskRecord:
        """Map a ``tasks`` row (the columns of this record).

        Raises:
            StoreError: a stored mode, status or level is not a known value.
        """
        typed: dict[str, Any] = {
            "mode": vocabulary(TaskMode, row["mode"], "task mode"),
            "status": vocabulary(TaskStatus, row["status"], "task status"),
            "permission_level": vocabulary(PermissionLevel, row["permission_level"], "permission level"),
        }
        return cls(**(row | typed))


@dataclass(frozen=True, slots=True)
class SessionRecord(Record):
    """A task as a session listing shows it (SRV-20): no answer, error or level."""

    id: str
    mode: TaskMode
    status: TaskStatus
    prompt: str
    owner: str | None
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class EventRecord(Record):
    """One event of a task's timeline; ``data`` is the decoded JSON object."""

    id: int
    kind: str
    data: dict[str, Any]
    at: int


class TaskRepository:
    """Rows of ``tasks`` and ``events``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        *,
        project: Path | str,
        owner: str | None,
        mode: TaskMode,
        prompt: str,
        permission_level: PermissionLevel,
        model: str | None,
        engine_id: str,
    ) -> TaskRecord:
        """Insert a ``queued`` task with a new id; returns it."""
        task_id = "task_" + secrets.token_hex(8)
        now = int(time.time())
        self._db.execute(
            "INSERT INTO tasks (id, project, owner, mode, status, prompt, permission_level, model, engine_id, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task_id,
                str(project),
                owner,
                TaskMode(mode).value,
                TaskStatus.QUEUED.value,
                prompt,
                PermissionLevel(permission_level).value,
                model,
                engine_id,
                now,
                now,
            ),
        )
        found = self.get(task_id)
        assert found is not None
        return found

    def get(self, task_id: str, project: Path | str | None = None) -> TaskRecord | None:
        """One task, or None; with ``project``, only a task of that project."""
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE id = ?"
        params: list[Any] = [task_id]
        if project is not None:
            sql += " AND project = ?"
            params.append(str(project))
        row = self._db.row(sql, params)
        return None if row is None else TaskRecord.from_row(row)

    def exists(self, task_id: str, project: Path | str) -> bool:
        """True when ``task_id`` is a task of ``project``."""
        return self._db.row("SELECT 1 FROM tasks WHERE id = ? AND project = ?", (task_id, str(project))) is not None

    def set_status(
        self, task_id: str, status: TaskStatus, *, answer: str | None = None, error: str | None = None
    ) -> None:
        """Move a task to ``status``; a finished status also records answer/error and ``finished_at``."""
        status = TaskStatus(status)
        now = int(time.time())
        if status.active:
            self._db.execute("UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?", (status.value, now, task_id))
            return
        self._db.execute(
            "UPDATE tasks SET status = ?, answer = COALESCE(?, answer), error = COALESCE(?, error), "
            "updated_at = ?, finished_at = ? WHERE id = ?",
            (status.value, answer, error, now, now, task_id),
        )

    def for_owner(self, owner: str, limit: int = 64) -> list[TaskRecord]:
        """The owner's tasks, newest first."""
        rows = self._db.rows(f"SELECT {_COLUMNS} FROM tasks WHERE owner = ?" + _NEWEST, (owner, limit))
        return [TaskRecord.from_row(r) for r in rows]

    def recent(self, limit: int = 50, project: Path | str | None = None) -> list[TaskRecord]:
        """Recent tasks of every owner (or of one project), newest first."""
        if project is None:
            rows = self._db.rows(f"SELECT {_COLUMNS} FROM tasks" + _NEWEST, (limit,))
        else:
            rows = self._db.rows(f"SELECT {_COLUMNS} FROM tasks WHERE project = ?" + _NEWEST, (str(project), limit))
        return [TaskRecord.from_row(r) for r in rows]

    def sessions(self, project: Path | str, limit: int) -> list[SessionRecord]:
        """The project's tasks as sessions, newest first; filtered by project before the limit (SRV-08)."""
        rows = self._db.rows(
            "SELECT id, mode, status, prompt, owner, created_at, updated_at FROM tasks WHERE project = ?" + _NEWEST,
            (str(project), limit),
        )
        return [SessionRecord(**(r | _session_vocabulary(r))) for r in rows]

    def unfinished(self, engine_id: str) -> list[str]:
        """Ids of the tasks of ``engine_id`` that are still queued, running or waiting."""
        marks = ", ".join("?" * len(_ACTIVE))
        rows = self._db.rows(
            f"SELECT id FROM tasks WHERE engine_id = ? AND status IN ({marks}) ORDER BY rowid", (engine_id, *_ACTIVE)
        )
        return [str(r["id"]) for r in rows]

    # -- events -------------------------------------------------------------------------

    def add_event(self, task_id: str, kind: str, data: dict[str, Any], *, at: int | None = None) -> int:
        """Append one event (``data`` stored as JSON); returns its id."""
        return self._db.insert(
            "INSERT INTO events (task_id, kind, data, at) VALUES (?, ?, ?, ?)",
            (task_id, kind, encode_json(data), int(time.time()) if at is None else at),
        )

    def events(self, task_id: str, *, after: int = 0, limit: int = 50) -> list[EventRecord]:
        """Up to ``limit`` events with id greater than ``after``, oldest first."""
        rows = self._db.rows(
            "SELECT id, kind, data, at FROM events WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?",
            (task_id, after, limit),
        )
        return [_event(r) for r in rows]

    def last_event(self, task_id: str) -> EventRecord | None:
        """The task's newest event, or None when it has none."""
        row = self._db.row(
            "SELECT id, kind, data, at FROM events WHERE task_id = ? ORDER BY id DESC LIMIT 1", (task_id,)
        )
        return None if row is None else _event(row)

    def latest_event(self, project: Path | str, kind: str) -> EventRecord | None:
        """The newest event of ``kind`` among the project's tasks, or None."""
        row = self._db.row(
            "SELECT e.id, e.kind, e.data, e.at FROM events e JOIN tasks t ON t.id = e.task_id "
            "WHERE t.project = ? AND e.kind = ? ORDER BY e.id DESC LIMIT 1",
            (str(project), kind),
        )
        return None if row is None else _event(row)


def _event(row: dict[str, Any]) -> EventRecord:
    return EventRecord(id=row["id"], kind=row["kind"], data=decode_json(row["data"], "event data"), at=row["at"])


def _session_vocabulary(row: dict[str, Any]) -> dict[str, Any]:
    """A session row's mode and status as their enums."""
    return {
        "mode": vocabulary(TaskMode, row["mode"], "task mode"),
        "status": vocabulary(TaskStatus, row["status"], "task status"),
    }
