"""Recorded history of a project: sessions (tasks), checkpoints, per-path changes, plans, the saved map.

Every query filters by the canonical project first and limits after (SRV-08), so another
project's records are never counted, returned or reachable by id. The rows come from the
store's repositories (:mod:`shadowcode.store.tasks`, :mod:`shadowcode.store.checkpoints`,
:mod:`shadowcode.store.projects`); this class adds the bounds and the not-found errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shadowcode.errors import NotFound
from shadowcode.limits import SESSIONS_LIST_MAX, WHY_ENTRIES_MAX
from shadowcode.store import Store
from shadowcode.store.checkpoints import CheckpointDetail, CheckpointSummary, WhyEntry
from shadowcode.store.projects import SavedMap
from shadowcode.store.tasks import SessionRecord

__all__ = ["History"]


class History:
    """Read-only views of tasks, checkpoints, changes and plans (and the saved map's one write)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def sessions(self, project: Path, limit: int = SESSIONS_LIST_MAX) -> list[SessionRecord]:
        """This project's tasks, newest first, at most ``limit`` (1..SESSIONS_LIST_MAX)."""
        return self._store.tasks.sessions(project, max(1, min(limit, SESSIONS_LIST_MAX)))

    def checkpoints(self, project: Path, task_id: str | None = None) -> list[CheckpointSummary]:
        """Checkpoints of this project (optionally of one task), newest first, each with its paths."""
        return self._store.checkpoints.list(project, task_id)

    def checkpoint(self, project: Path, checkpoint_id: str) -> CheckpointDetail:
        """One checkpoint with its changes.

        Raises:
            NotFound: no such checkpoint in this project.
        """
        found = self._store.checkpoints.get(project, checkpoint_id)
        if found is None:
            raise NotFound(f"no checkpoint {checkpoint_id!r} in this project", checkpoint_id=checkpoint_id)
        return found

    def why(self, project: Path, path: str | None = None, task_id: str | None = None) -> list[WhyEntry]:
        """Recorded changes, newest first, at most WHY_ENTRIES_MAX; empty when nothing was recorded."""
        return self._store.checkpoints.why(project, path=path, task_id=task_id, limit=WHY_ENTRIES_MAX)

    def plan(self, project: Path) -> Any:
        """The newest recorded plan event's data for this project, or None when none was recorded (SRV-05)."""
        event = self._store.tasks.latest_event(project, "plan")
        return None if event is None else event.data

    def saved_map(self, project: Path) -> SavedMap | None:
        """The project map saved by shadow_understand, or None."""
        return self._store.projects.saved_map(project)

    def save_map(self, project: Path, text: str, at: int) -> None:
        """Save (replace) the project's map text."""
        self._store.projects.save_map(project, text, at)

    def task_exists(self, project: Path, task_id: str) -> bool:
        """True when ``task_id`` is a task of this project."""
        return self._store.tasks.exists(task_id, project)
