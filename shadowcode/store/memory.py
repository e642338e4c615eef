"""Project and task notes: table ``memory`` (ENG-03, SRV-12).

One row per ``(project, task_id)``; the project note has ``task_id = ''``. ``hash`` is the
content hash the engine computed when it wrote the note; this module stores it, never checks it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from shadowcode.store.database import Database
from shadowcode.store.records import Record

__all__ = ["MemoryRecord", "MemoryRepository"]


@dataclass(frozen=True, slots=True)
class MemoryRecord(Record):
    """One stored note.

    Attributes:
        project: the canonical project path.
        task_id: the task of a task note, ``""`` for the project note.
        content: UTF-8 text.
        hash: the content hash stored with it.
        updated_at: Unix seconds of the last write.
    """

    project: str
    task_id: str
    content: str
    hash: str
    updated_at: int


class MemoryRepository:
    """Rows of ``memory``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, project: Path | str, task_id: str = "") -> MemoryRecord | None:
        """The note of ``project`` (``task_id`` ``""``) or of one of its tasks, or None when never written."""
        row = self._db.row(
            "SELECT project, task_id, content, hash, updated_at FROM memory WHERE project = ? AND task_id = ?",
            (str(project), task_id),
        )
        return None if row is None else MemoryRecord(**row)

    def put(self, project: Path | str, task_id: str, content: str, content_hash: str) -> None:
        """Write (insert or replace) one note, stamping ``updated_at``."""
        self._db.execute(
            "INSERT INTO memory (project, task_id, content, hash, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET content = excluded.content, hash = excluded.hash, "
            "updated_at = excluded.updated_at",
            (str(project), task_id, content, content_hash, int(time.time())),
        )
