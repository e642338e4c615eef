"""Project and task notes (SRV-12).

A note is UTF-8 text; its ``hash`` is the SHA-256 hex of that text (the empty note has
the hash of ``""``). Replace takes the hash the caller last read, so two writers cannot
silently overwrite each other. The rows live in :attr:`Store.memory <shadowcode.store.Store>`;
this class adds scopes, hashes, bounds and the errors.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from shadowcode.engine import api
from shadowcode.errors import ConflictError, NotFound, ToolError
from shadowcode.limits import MEMORY_NOTE_MAX_BYTES
from shadowcode.store import Store

__all__ = ["MemoryNotes", "Scope", "content_hash"]

Scope = Literal["project", "task"]


def content_hash(text: str) -> str:
    """SHA-256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()




class MemoryNotes:
    """Reads and writes notes; callers check write policy first."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows = store.memory

    def _key(self, project: Path, scope: Scope, task_id: str | None) -> str:
        if scope == "project":
            if task_id:
                raise ToolError("task_id is only valid with scope 'task'")
            return ""
        if scope != "task":
            raise ToolError(f"unknown scope {scope!r}; use 'project' or 'task'")
        if not task_id:
            raise ToolError("scope 'task' needs an exact task_id")
        if not self._store.tasks.exists(task_id, project):
            raise NotFound(f"no task {task_id!r} in this project", task_id=task_id)
        return task_id

    def read(self, project: Path, scope: Scope = "project", task_id: str | None = None) -> api.MemoryNote:
        """The note (empty when none).

        Raises:
            ToolError: bad scope or task_id combination.
            NotFound: the task id is not a task of this project.
        """
        key = self._key(project, scope, task_id)
        row = self._rows.get(project, key)
        if row is None:
            return api.MemoryNote(scope, key or None, "", content_hash(""), None)
        return api.MemoryNote(scope, key or None, row.content, row.hash, row.updated_at)

    def append(self, project: Path, text: str, scope: Scope = "project", task_id: str | None = None) -> api.MemoryNote:
        """Append ``text`` as a new paragraph and return the note as :meth:`read` does.

        Raises:
            ToolError: empty text, or the note would exceed MEMORY_NOTE_MAX_BYTES.
            NotFound: the task id is not a task of this project.
        """
        if not text.strip():
            raise ToolError("append needs non-empty text")
        with self._store.atomic():
            old = self.read(project, scope, task_id).content
            new = f"{old.rstrip(chr(10))}\n\n{text}" if old.strip() else text
            self._write(project, self._key(project, scope, task_id), new)
        return self.read(project, scope, task_id)

    def replace(
        self, project: Path, text: str, expected_hash: str, scope: Scope = "project", task_id: str | None = None
    ) -> api.MemoryNote:
        """Replace the note when ``expected_hash`` is its current hash; returns the new note.

        Raises:
            ConflictError: the hash is stale (someone changed the note since it was read).
            ToolError: the note would exceed MEMORY_NOTE_MAX_BYTES.
            NotFound: the task id is not a task of this project.
        """
        with self._store.atomic():
            current = self.read(project, scope, task_id)
            if expected_hash != current.hash:
                raise ConflictError(
                    "the note changed since it was read (stale expected_hash); read it again and retry",
                    current_hash=current.hash,
                )
            self._write(project, self._key(project, scope, task_id), text)
        return self.read(project, scope, task_id)

    def _write(self, project: Path, key: str, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > MEMORY_NOTE_MAX_BYTES:
            raise ToolError(f"the note would be {size} bytes; the limit is {MEMORY_NOTE_MAX_BYTES} bytes")
        self._rows.put(project, key, text, content_hash(text))
