"""Task records and their event log (ENG-04, SRV-15, SRV-16).

A task (job) is ``{"id", "project", "owner", "mode", "status", "prompt", "permission_level",
"model", "answer", "error", "created_at", "updated_at", "finished_at"}``. Status moves
``queued → running ⇄ waiting → done | failed | cancelled``; ``interrupted`` marks work whose
engine ended without finishing it. Events are ``{"id", "kind", "data", "at"}`` in id order.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from shadowcode.errors import NotFound
from shadowcode.store import Store

__all__ = ["ACTIVE", "FINISHED", "TaskRecords"]

ACTIVE = ("queued", "running", "waiting")
FINISHED = ("done", "failed", "cancelled", "interrupted")

_COLUMNS = (
    "id, project, owner, mode, status, prompt, permission_level, model, answer, error, engine_id, "
    "created_at, updated_at, finished_at"
)


class TaskRecords:
    """Creates tasks, moves their status, appends and pages their events."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def create(
        self,
        *,
        project: Path,
        owner: str | None,
        mode: str,
        prompt: str,
        permission_level: str,
        model: str | None,
        engine_id: str,
    ) -> dict[str, Any]:
        """Record a queued task and its ``task.queued`` event; returns the task."""
        task_id = "task_" + secrets.token_hex(8)
        now = int(time.time())
        with self._store.atomic():
            self._store.execute(
                "INSERT INTO tasks (id, project, owner, mode, status, prompt, permission_level, model, engine_id, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                (task_id, str(project), owner, mode, prompt, permission_level, model, engine_id, now, now),
            )
            self.event(task_id, "task.queued", {"mode": mode, "permission_level": permission_level, "model": model})
        return self.get(task_id)

    def get(self, task_id: str, project: Path | None = None) -> dict[str, Any]:
        """One task; with ``project``, only a task of that project.

        Raises:
            NotFound: no such task (in that project).
        """
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE id = ?"
        params: list[Any] = [task_id]
        if project is not None:
            sql += " AND project = ?"
            params.append(str(project))
        row = self._store.row(sql, params)
        if row is None:
            raise NotFound(f"no job {task_id!r}" + (" in this project" if project else ""), task_id=task_id)
        return row

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        """Move a task to ``status``; a finished status also records answer/error and finished_at."""
        now = int(time.time())
        if status in FINISHED:
            self._store.execute(
                "UPDATE tasks SET status = ?, answer = COALESCE(?, answer), error = COALESCE(?, error), "
                "updated_at = ?, finished_at = ? WHERE id = ?",
                (status, answer, error, now, now, task_id),
            )
        else:
            self._store.execute("UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?", (status, now, task_id))

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        """Append one event; returns its id."""
        return self._store.insert(
            "INSERT INTO events (task_id, kind, data, at) VALUES (?, ?, ?, ?)",
            (task_id, kind, json.dumps(data, ensure_ascii=False), int(time.time())),
        )

    def events(self, task_id: str, *, after: int = 0, limit: int = 50) -> list[dict[str, Any]]:
        """Up to ``limit`` events with id greater than ``after``, oldest first."""
        rows = self._store.rows(
            "SELECT id, kind, data, at FROM events WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?",
            (task_id, after, limit),
        )
        for row in rows:
            row["data"] = json.loads(row["data"])
        return rows

    def for_owner(self, owner: str, limit: int = 64) -> list[dict[str, Any]]:
        """The owner's tasks, newest first."""
        return self._store.rows(
            f"SELECT {_COLUMNS} FROM tasks WHERE owner = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (owner, limit),
        )

    def recent(self, limit: int = 50, project: Path | None = None) -> list[dict[str, Any]]:
        """Recent tasks of every owner (or one project), newest first."""
        if project is None:
            return self._store.rows(
                f"SELECT {_COLUMNS} FROM tasks ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            )
        return self._store.rows(
            f"SELECT {_COLUMNS} FROM tasks WHERE project = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (str(project), limit),
        )

    def sweep_orphans(self) -> int:
        """Mark unfinished tasks of engines that are no longer running as ``interrupted``.

        An engine counts as gone when it recorded a stop or its pid no longer exists.
        Returns the number of tasks marked.
        """
        engines = self._store.rows(
            "SELECT DISTINCT e.id, e.pid, e.stopped_at FROM tasks t JOIN engines e ON e.id = t.engine_id "
            "WHERE t.status IN ('queued', 'running', 'waiting')"
        )
        gone = [e["id"] for e in engines if e["stopped_at"] is not None or not _pid_alive(e["pid"])]
        marked = 0
        for engine_id in gone:
            for task in self._store.rows(
                "SELECT id FROM tasks WHERE engine_id = ? AND status IN ('queued', 'running', 'waiting')", (engine_id,)
            ):
                self.set_status(task["id"], "interrupted", error="the engine running this job stopped")
                self.event(task["id"], "task.interrupted", {"reason": "engine stopped"})
                marked += 1
        return marked


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
