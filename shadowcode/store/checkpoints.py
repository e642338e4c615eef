"""Checkpoints, recorded changes and content blobs: tables ``checkpoints``, ``changes``, ``blobs``
(ENG-03, ENG-06, SRV-18, SRV-19).

A task has one checkpoint; each recorded change names a project-relative path, the content
hash before (None: the file did not exist) and after (None: the file was deleted), and its
``kind`` (``write`` or ``rollback``). Blobs are keyed by the SHA-256 hex the caller computed and
stored once. Rows of the change history are never removed, except a ``write`` whose file write
then failed (:meth:`CheckpointRepository.delete_write`). Every read names the project (SRV-08).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from shadowcode.store.database import Database
from shadowcode.store.records import Record

__all__ = [
    "ChangeKind",
    "ChangeRecord",
    "CheckpointDetail",
    "CheckpointRepository",
    "CheckpointSummary",
    "TaskChange",
    "WhyEntry",
]

ChangeKind = Literal["write", "rollback"]


@dataclass(frozen=True, slots=True)
class CheckpointSummary(Record):
    """A checkpoint as a listing shows it: the distinct paths it touched, sorted."""

    id: str
    task_id: str
    created_at: int
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ChangeRecord(Record):
    """One change of a checkpoint, as shadow_checkpoint shows it."""

    path: str
    kind: ChangeKind
    before_sha256: str | None
    after_sha256: str | None
    at: int


@dataclass(frozen=True, slots=True)
class CheckpointDetail(Record):
    """One checkpoint with its changes in the order they were recorded."""

    id: str
    task_id: str
    created_at: int
    changes: tuple[ChangeRecord, ...]


@dataclass(frozen=True, slots=True)
class WhyEntry(Record):
    """One recorded change as shadow_why shows it, with the prompt of its task (None when unknown)."""

    path: str
    kind: ChangeKind
    task_id: str
    checkpoint_id: str
    before_sha256: str | None
    after_sha256: str | None
    at: int
    prompt: str | None


@dataclass(frozen=True, slots=True)
class TaskChange(Record):
    """One change of a task, as a rollback reads them (in recorded order)."""

    checkpoint_id: str
    path: str
    before_sha256: str | None
    after_sha256: str | None


class CheckpointRepository:
    """Rows of ``checkpoints``, ``changes`` and ``blobs``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- writing ------------------------------------------------------------------------

    def ensure_for_task(self, project: Path | str, task_id: str) -> str:
        """The task's checkpoint id (``cp_<hex>``), created on first use; one transaction."""
        with self._db.atomic():
            found = self._db.row(
                "SELECT id FROM checkpoints WHERE task_id = ? AND project = ? ORDER BY created_at, rowid LIMIT 1",
                (task_id, str(project)),
            )
            if found is not None:
                return str(found["id"])
            checkpoint_id = f"cp_{secrets.token_hex(8)}"
            self._db.execute(
                "INSERT INTO checkpoints (id, project, task_id, created_at) VALUES (?, ?, ?, ?)",
                (checkpoint_id, str(project), task_id, int(time.time())),
            )
            return checkpoint_id

    def put_blob(self, sha256: str, data: bytes) -> None:
        """Store ``data`` under its SHA-256 hex ``sha256`` unless already stored."""
        self._db.execute("INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)", (sha256, data))

    def blob(self, sha256: str) -> bytes | None:
        """The stored content of ``sha256``, or None."""
        row = self._db.row("SELECT data FROM blobs WHERE sha256 = ?", (sha256,))
        return None if row is None else bytes(row["data"])

    def add_change(
        self,
        checkpoint_id: str,
        *,
        project: Path | str,
        task_id: str,
        path: str,
        before_sha256: str | None,
        after_sha256: str | None,
        kind: ChangeKind,
        at: int | None = None,
    ) -> int:
        """Record one change; returns its id."""
        return self._db.insert(
            "INSERT INTO changes (checkpoint_id, project, task_id, path, before_sha256, after_sha256, at, kind) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                checkpoint_id,
                str(project),
                task_id,
                path,
                before_sha256,
                after_sha256,
                int(time.time()) if at is None else at,
                kind,
            ),
        )

    def delete_write(self, change_id: int) -> None:
        """Remove one ``write`` change (its file write failed); a ``rollback`` row is never removed."""
        self._db.execute("DELETE FROM changes WHERE id = ? AND kind = 'write'", (change_id,))

    # -- reading ------------------------------------------------------------------------

    def task_changes(self, project: Path | str, task_id: str) -> list[TaskChange]:
        """Every change the task recorded in ``project``, in recorded order."""
        rows = self._db.rows(
            "SELECT checkpoint_id, path, before_sha256, after_sha256 FROM changes "
            "WHERE project = ? AND task_id = ? ORDER BY id",
            (str(project), task_id),
        )
        return [TaskChange(**r) for r in rows]

    def list(self, project: Path | str, task_id: str | None = None, limit: int = 100) -> list[CheckpointSummary]:
        """Checkpoints of ``project`` (optionally of one task), newest first, each with its paths."""
        sql = "SELECT id, task_id, created_at FROM checkpoints WHERE project = ?"
        params: list[Any] = [str(project)]
        if task_id:
            sql += " AND task_id = ?"
            params.append(task_id)
        params.append(limit)
        found: list[CheckpointSummary] = []
        for cp in self._db.rows(sql + " ORDER BY created_at DESC, rowid DESC LIMIT ?", params):
            paths = self._db.rows(
                "SELECT DISTINCT path FROM changes WHERE checkpoint_id = ? ORDER BY path", (cp["id"],)
            )
            found.append(CheckpointSummary(**cp, paths=tuple(r["path"] for r in paths)))
        return found

    def get(self, project: Path | str, checkpoint_id: str) -> CheckpointDetail | None:
        """One checkpoint of ``project`` with its changes, or None (also for another project's)."""
        row = self._db.row(
            "SELECT id, task_id, created_at FROM checkpoints WHERE id = ? AND project = ?",
            (checkpoint_id, str(project)),
        )
        if row is None:
            return None
        changes = self._db.rows(
            "SELECT path, kind, before_sha256, after_sha256, at FROM changes WHERE checkpoint_id = ? ORDER BY id",
            (checkpoint_id,),
        )
        return CheckpointDetail(**row, changes=tuple(ChangeRecord(**c) for c in changes))

    def why(
        self, project: Path | str, *, path: str | None = None, task_id: str | None = None, limit: int
    ) -> list[WhyEntry]:
        """Recorded changes of ``project`` (optionally of one path and/or task), newest first, at most ``limit``."""
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
        params.append(limit)
        return [WhyEntry(**r) for r in self._db.rows(sql + " ORDER BY c.id DESC LIMIT ?", params)]
