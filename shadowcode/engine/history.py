"""Recorded history of a project: sessions (tasks), checkpoints, per-path changes, plans.

Every query filters by the canonical project first and limits after (SRV-08), so another
project's records are never counted, returned or reachable by id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shadowcode.errors import NotFound
from shadowcode.limits import SESSIONS_LIST_MAX, WHY_ENTRIES_MAX
from shadowcode.store import Store

__all__ = ["History"]


class History:
    """Read-only views of tasks, checkpoints, changes and plans."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def sessions(self, project: Path, limit: int = SESSIONS_LIST_MAX) -> list[dict[str, Any]]:
        """This project's tasks, newest first, at most ``limit`` (1..SESSIONS_LIST_MAX).

        Returns:
            ``[{"id", "mode", "status", "prompt", "owner", "created_at", "updated_at"}]``.
        """
        limit = max(1, min(limit, SESSIONS_LIST_MAX))
        return self._store.rows(
            "SELECT id, mode, status, prompt, owner, created_at, updated_at FROM tasks WHERE project = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (str(project), limit),
        )

    def checkpoints(self, project: Path, task_id: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints of this project (optionally of one task), newest first, each with its paths."""
        sql = "SELECT id, task_id, created_at FROM checkpoints WHERE project = ?"
        params: list[Any] = [str(project)]
        if task_id:
            sql += " AND task_id = ?"
            params.append(task_id)
        found = self._store.rows(sql + " ORDER BY created_at DESC, rowid DESC LIMIT 100", params)
        for cp in found:
            cp["paths"] = [
                r["path"]
                for r in self._store.rows(
                    "SELECT DISTINCT path FROM changes WHERE checkpoint_id = ? ORDER BY path", (cp["id"],)
                )
            ]
        return found

    def checkpoint(self, project: Path, checkpoint_id: str) -> dict[str, Any]:
        """One checkpoint with its changes.

        Raises:
            NotFound: no such checkpoint in this project.
        """
        row = self._store.row(
            "SELECT id, task_id, created_at FROM checkpoints WHERE id = ? AND project = ?",
            (checkpoint_id, str(project)),
        )
        if row is None:
            raise NotFound(f"no checkpoint {checkpoint_id!r} in this project", checkpoint_id=checkpoint_id)
        row["changes"] = self._store.rows(
            "SELECT path, kind, before_sha256, after_sha256, at FROM changes WHERE checkpoint_id = ? ORDER BY id",
            (checkpoint_id,),
        )
        return row

    def why(self, project: Path, path: str | None = None, task_id: str | None = None) -> list[dict[str, Any]]:
        """Recorded changes, newest first, at most WHY_ENTRIES_MAX; empty when nothing was recorded.

        Returns:
            ``[{"path", "kind" ("write" | "rollback"), "task_id", "checkpoint_id", "before_sha256",
            "after_sha256", "at", "prompt"}]``.
        """
        sql = (
            "SELECT c.path, c.kind, c.task_id, c.checkpoint_id, c.before_sha256, c.after_sha256, c.at, t.prompt "
            "FROM changes c LEFT JOIN tasks t ON t.id = c.task_id WHERE c.project = ?"
        )
        params: list[Any] = [str(project)]
        if path:
            sql += " AND c.path = ?"
            params.append(path)
        if task_id:
            sql += " AND c.task_id = ?"
            params.append(task_id)
        params.append(WHY_ENTRIES_MAX)
        return self._store.rows(sql + " ORDER BY c.id DESC LIMIT ?", params)

    def plan(self, project: Path) -> Any:
        """The newest recorded plan event's data for this project, or None when none was recorded (SRV-05)."""
        row = self._store.row(
            "SELECT e.data FROM events e JOIN tasks t ON t.id = e.task_id WHERE t.project = ? AND e.kind = 'plan' "
            "ORDER BY e.id DESC LIMIT 1",
            (str(project),),
        )
        return None if row is None else json.loads(row["data"])

    def saved_map(self, project: Path) -> dict[str, Any] | None:
        """The project map saved by shadow_understand, or None."""
        return self._store.row("SELECT map, saved_at FROM project_maps WHERE project = ?", (str(project),))

    def save_map(self, project: Path, text: str, at: int) -> None:
        """Save (replace) the project's map text."""
        self._store.execute(
            "INSERT INTO project_maps (project, map, saved_at) VALUES (?, ?, ?) "
            "ON CONFLICT (project) DO UPDATE SET map = excluded.map, saved_at = excluded.saved_at",
            (str(project), text, at),
        )

    def task_exists(self, project: Path, task_id: str) -> bool:
        """True when ``task_id`` is a task of this project."""
        return self._store.row("SELECT 1 FROM tasks WHERE id = ? AND project = ?", (task_id, str(project))) is not None
