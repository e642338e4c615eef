"""Task records and their event log, as the engine keeps them (ENG-04, SRV-15, SRV-16).

A task (job) is a :class:`~shadowcode.store.tasks.TaskRecord`; its events are
:class:`~shadowcode.store.tasks.EventRecord` in id order. Status moves
``queued → running ⇄ waiting → done | failed | cancelled``; ``interrupted`` marks work whose
engine ended without finishing it (:class:`~shadowcode.enums.TaskStatus`). The rows live in
:attr:`Store.tasks <shadowcode.store.Store>`; this class adds the ``task.queued`` event, the
not-found errors and the sweep of orphaned work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus
from shadowcode.errors import NotFound
from shadowcode.store import Store
from shadowcode.store.tasks import EventRecord, TaskRecord

__all__ = ["ORPHAN_REASON", "TaskRecords"]

ORPHAN_REASON = "the engine running its job stopped"
"""Why a job of a dead engine is ``interrupted`` and its pending approvals expired (ENG-07, ENG-08)."""


class TaskRecords:
    """Creates tasks, moves their status, appends and pages their events."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._tasks = store.tasks

    def create(
        self,
        *,
        project: Path,
        owner: str | None,
        mode: TaskMode | str,
        prompt: str,
        permission_level: PermissionLevel | str,
        model: str | None,
        engine_id: str,
    ) -> TaskRecord:
        """Record a queued task and its ``task.queued`` event; returns the task."""
        mode, level = TaskMode(mode), PermissionLevel(permission_level)
        with self._store.atomic():
            task = self._tasks.create(
                project=project,
                owner=owner,
                mode=mode,
                prompt=prompt,
                permission_level=level,
                model=model,
                engine_id=engine_id,
            )
            self.event(task.id, "task.queued", {"mode": mode.value, "permission_level": level.value, "model": model})
        return task

    def get(self, task_id: str, project: Path | None = None) -> TaskRecord:
        """One task; with ``project``, only a task of that project.

        Raises:
            NotFound: no such task (in that project).
        """
        task = self._tasks.get(task_id, project)
        if task is None:
            raise NotFound(f"no job {task_id!r}" + (" in this project" if project else ""), task_id=task_id)
        return task

    def set_status(
        self, task_id: str, status: TaskStatus | str, *, answer: str | None = None, error: str | None = None
    ) -> None:
        """Move a task to ``status``; a finished status also records answer/error and finished_at."""
        self._tasks.set_status(task_id, TaskStatus(status), answer=answer, error=error)

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        """Append one event; returns its id."""
        return self._tasks.add_event(task_id, kind, data)

    def events(self, task_id: str, *, after: int = 0, limit: int = 50) -> list[EventRecord]:
        """Up to ``limit`` events with id greater than ``after``, oldest first."""
        return self._tasks.events(task_id, after=after, limit=limit)

    def last_event(self, task_id: str) -> EventRecord | None:
        """The task's newest event, or None."""
        return self._tasks.last_event(task_id)

    def for_owner(self, owner: str, limit: int = 64) -> list[TaskRecord]:
        """The owner's tasks, newest first."""
        return self._tasks.for_owner(owner, limit)

    def recent(self, limit: int = 50, project: Path | None = None) -> list[TaskRecord]:
        """Recent tasks of every owner (or one project), newest first."""
        return self._tasks.recent(limit, project)

    def sweep_orphans(self) -> int:
        """Mark unfinished tasks of engines that are no longer running as ``interrupted`` (ENG-08).

        An engine counts as gone when it recorded a stop or its pid no longer exists. In the
        same transaction as each task's status, its pending approvals expire with the reason
        ``the engine running its job stopped`` (ENG-07): nothing will ever run them. Pending
        approvals of tasks that already finished (an older engine's leftovers) expire too.
        Returns the number of tasks marked.
        """
        engines = self._store.owners.engines_with_unfinished_tasks()
        gone = [e.id for e in engines if e.stopped_at is not None or not _pid_alive(e.pid)]
        marked = 0
        with self._store.atomic():
            for engine_id in gone:
                for task_id in self._tasks.unfinished(engine_id):
                    self.set_status(task_id, TaskStatus.INTERRUPTED, error=ORPHAN_REASON)
                    self.event(task_id, "task.interrupted", {"reason": "engine stopped"})
                    self._store.approvals.expire(task_id, ORPHAN_REASON)
                    marked += 1
            self._store.approvals.expire_of_finished_tasks(ORPHAN_REASON)
        return marked


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
