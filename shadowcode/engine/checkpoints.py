"""Checkpoints of task writes and their rollback (ENG-06, SRV-18, SRV-19).

Every write a task makes to a project file is recorded *before* the file changes: the
current content is stored as a blob (keyed and deduplicated by SHA-256) and a ``changes``
row names the path, the content hash before (NULL: the file did not exist) and the hash the
write is about to produce (NULL: the file is deleted). A task has one checkpoint; all its
changes hang off it.

Rollback puts every path the task touched back to its content from before the task's first
write (removing files the task created). It first checks that each path still holds what the
task last left there; if any path differs, nothing is changed and :class:`ConflictError`
lists the paths.

A rollback is recorded in two places: one ``changes`` row per restored path with
``kind = 'rollback'`` (hash before = the task's content, hash after = the restored one), so
the per-path history that shadow_why reads shows the restore next to the writes it undid;
and one ``rollback`` event on the task, so the job's timeline shows it too. Rows of the
change history are never removed. The rows live in
:attr:`Store.checkpoints <shadowcode.store.Store>` (checkpoints, changes, blobs) and the rollback
event in :attr:`Store.tasks <shadowcode.store.Store>`.

The file primitives (confinement, the non-blocking bounded read, the atomic replace and the
current-content hash) live in :mod:`shadowcode.project.files`.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from shadowcode.engine import api
from shadowcode.errors import ConflictError, NotFound, StoreError, ToolError
from shadowcode.limits import FILE_WRITE_MAX_BYTES
from shadowcode.project.files import (
    canonical_root,
    confine,
    current_sha256,
    read_regular,
    refuse_git_path,
    relative_posix,
    replace_atomically,
)
from shadowcode.store import Store
from shadowcode.store.checkpoints import TaskChange

__all__ = ["Checkpoints", "content_sha256"]


def content_sha256(data: bytes) -> str:
    """The lowercase hex SHA-256 of ``data``: the blob key used by checkpoints (ENG-06)."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class _Step:
    """One path a rollback changes: its current hash and content, and the hash it returns to."""

    rel: str
    target: Path
    current: str | None
    original: str | None
    content: bytes | None = None


class Checkpoints:
    """Per-task checkpoints in the store: record before writing, roll back after checking (ENG-06).

    Args:
        store: the profile's store (tables ``checkpoints``, ``changes``, ``blobs``, ``tasks``).
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows = store.checkpoints

    def begin(self, project: Path, task_id: str) -> str:
        """Return the task's checkpoint id, creating the checkpoint on first use.

        Args:
            project: the canonical project root.
            task_id: a task of that project.

        Returns:
            ``"cp_<hex>"``; the same id on every call for the same task.

        Raises:
            NotFound: the task does not exist in this project.
        """
        root = canonical_root(project)
        with self._store.atomic():
            if not self._store.tasks.exists(task_id, root):
                raise NotFound(f"no task {task_id!r} in this project", task_id=task_id)
            return self._rows.ensure_for_task(root, task_id)

    def record_write(self, project: Path, task_id: str, rel_path: str, new_content: bytes | None) -> int:
        """Record a write the caller is about to make; call it before touching the file (ENG-06).

        The file's current content is stored as a blob (deduplicated by SHA-256). Everything
        is written in one transaction.

        Args:
            project: the canonical project root.
            task_id: the writing task (of that project).
            rel_path: the file's path relative to the root (resolved and confined here; the
                change is recorded under the resolved path).
            new_content: the bytes about to be written, or None for a deletion.

        Returns:
            The id of the recorded change (for :meth:`forget_write` if the write then fails).

        Raises:
            ToolError: the path leaves the project, is the root, lies under ``.git``, is not a
                regular file, or either version exceeds ``FILE_WRITE_MAX_BYTES``.
            NotFound: the task does not exist in this project.
        """
        root = canonical_root(project)
        target = confine(root, rel_path, must_exist=False)
        rel = relative_posix(root, target)
        refuse_git_path(rel)
        if new_content is not None and len(new_content) > FILE_WRITE_MAX_BYTES:
            raise ToolError(
                f"the new content is larger than {FILE_WRITE_MAX_BYTES} bytes", path=rel, limit=FILE_WRITE_MAX_BYTES
            )
        found = read_regular(target, max_bytes=FILE_WRITE_MAX_BYTES, label=rel)
        with self._store.atomic():
            checkpoint_id = self.begin(root, task_id)
            before_sha = self._put_blob(found.data) if found is not None else None
            after_sha = content_sha256(new_content) if new_content is not None else None
            return self._rows.add_change(
                checkpoint_id,
                project=root,
                task_id=task_id,
                path=rel,
                before_sha256=before_sha,
                after_sha256=after_sha,
                kind="write",
            )

    def forget_write(self, change_id: int) -> None:
        """Drop a change recorded by :meth:`record_write` whose write then failed (the file is unchanged)."""
        self._rows.delete_write(change_id)

    def rollback(self, project: Path, task_id: str) -> api.RollbackResult:
        """Restore every file the task changed to its content from before the task (ENG-06, SRV-18).

        Each path must still hold the content the task last left there (or still be absent
        when the task deleted it); otherwise nothing is changed. Paths already back at their
        earlier content are left alone and not listed.

        Args:
            project: the canonical project root.
            task_id: a task of that project.

        Returns:
            ``{"task_id": str, "restored": [path], "removed": [path]}``; paths relative to the
            root, in the order the task first wrote them. ``removed`` are files the task created.

        Raises:
            NotFound: the task does not exist in this project.
            ConflictError: a path changed after the task wrote it; ``fields["paths"]`` lists them.
            ToolError: a restore failed part-way (the paths already restored are recorded).
        """
        root = canonical_root(project)
        rows, plan, conflicts, _unchanged = self._plan(root, task_id)
        if conflicts:
            raise ConflictError(
                "files changed after the task wrote them; nothing was rolled back: " + ", ".join(conflicts),
                task_id=task_id,
                paths=conflicts,
            )
        blobs = {step.original: self._blob(step.original) for step in plan if step.original is not None}
        for step in plan:  # keep what the task left, so the rollback's own record has its blob
            kept = read_regular(step.target, max_bytes=FILE_WRITE_MAX_BYTES, label=step.rel) if step.current else None
            step.content = kept.data if kept is not None else None
        restored: list[str] = []
        removed: list[str] = []
        done: list[_Step] = []
        failure: ToolError | None = None
        for step in plan:
            try:
                if step.original is None:
                    step.target.unlink()
                    removed.append(step.rel)
                else:
                    step.target.parent.mkdir(parents=True, exist_ok=True)
                    replace_atomically(step.target, blobs[step.original])
                    restored.append(step.rel)
            except (OSError, ToolError) as exc:
                failure = ToolError(f"rollback stopped at {step.rel}: {exc}", task_id=task_id, path=step.rel)
                break
            done.append(step)
        self._record(root, task_id, rows[0].checkpoint_id if rows else None, done, restored, removed)
        if failure is not None:
            raise failure
        return api.RollbackResult(task_id, restored, removed)

    def preview(self, project: Path, task_id: str) -> api.RollbackPlan:
        """What :meth:`rollback` would do now, changing nothing (ENG-06, SRV-18).

        Returns:
            The paths it would restore and remove, those already back at their earlier
            content, and the conflicts (paths changed after the task wrote them) that would
            make it refuse; paths relative to the root, in the order the task first wrote them.

        Raises:
            NotFound: the task does not exist in this project.
        """
        _rows, plan, conflicts, unchanged = self._plan(canonical_root(project), task_id)
        restore = [step.rel for step in plan if step.original is not None]
        remove = [step.rel for step in plan if step.original is None]
        return api.RollbackPlan(task_id, restore, remove, unchanged, conflicts)

    def _plan(self, root: Path, task_id: str) -> tuple[list[TaskChange], list[_Step], list[str], list[str]]:
        """The task's changes, the steps a rollback takes, the conflicting paths and the unchanged ones."""
        if not self._store.tasks.exists(task_id, root):
            raise NotFound(f"no task {task_id!r} in this project", task_id=task_id)
        rows = self._rows.task_changes(root, task_id)
        first_before: dict[str, str | None] = {}
        last_after: dict[str, str | None] = {}
        for r in rows:
            first_before.setdefault(r.path, r.before_sha256)
            last_after[r.path] = r.after_sha256
        plan: list[_Step] = []
        conflicts: list[str] = []
        unchanged: list[str] = []
        for rel, original in first_before.items():
            try:
                target = confine(root, rel, must_exist=False)
                refuse_git_path(relative_posix(root, target))
            except ToolError:
                conflicts.append(rel)
                continue
            ok, current = current_sha256(target, max_bytes=FILE_WRITE_MAX_BYTES)
            if not ok or current != last_after[rel]:
                conflicts.append(rel)
            elif current != original:
                plan.append(_Step(rel, target, current, original))
            else:
                unchanged.append(rel)
        return rows, plan, conflicts, unchanged

    def _record(
        self,
        root: Path,
        task_id: str,
        checkpoint_id: str | None,
        done: list[_Step],
        restored: list[str],
        removed: list[str],
    ) -> None:
        if not done or checkpoint_id is None:
            return
        now = int(time.time())
        with self._store.atomic():
            for step in done:
                before_sha = self._put_blob(step.content) if step.content is not None else None
                self._rows.add_change(
                    checkpoint_id,
                    project=root,
                    task_id=task_id,
                    path=step.rel,
                    before_sha256=before_sha,
                    after_sha256=step.original,
                    kind="rollback",
                    at=now,
                )
            self._store.tasks.add_event(
                task_id,
                "rollback",
                {"checkpoint_id": checkpoint_id, "restored": restored, "removed": removed},
                at=now,
            )

    def _put_blob(self, data: bytes) -> str:
        sha = content_sha256(data)
        self._rows.put_blob(sha, data)
        return sha

    def _blob(self, sha: str) -> bytes:
        data = self._rows.blob(sha)
        if data is None:
            raise StoreError(f"the checkpoint content {sha} is missing from the store", sha256=sha)
        return data
