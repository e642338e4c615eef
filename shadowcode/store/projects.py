"""Projects, their trust and saved maps: tables ``projects`` and ``project_maps`` (ENG-02, ENG-03, SRV-19).

A project row is keyed by its canonical path (the engine canonicalizes; this module stores the
string it is given). A project is untrusted until trusted at a :class:`PermissionLevel`;
untrusting resets the level to ``read_only`` and keeps every other record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.enums import PermissionLevel
from shadowcode.store.database import Database
from shadowcode.store.records import Record, vocabulary

__all__ = ["SavedMap", "ProjectRecord", "ProjectRepository"]


@dataclass(frozen=True, slots=True)
class ProjectRecord(Record):
    """One project row.

    Attributes:
        path: the canonical project path.
        trusted: True once trusted.
        level: the configured permission level (``read_only`` while untrusted).
        trusted_at: Unix seconds of the last trust, None when never trusted.
        created_at: Unix seconds of the first record.
    """

    path: str
    trusted: bool
    level: PermissionLevel
    trusted_at: int | None
    created_at: int


@dataclass(frozen=True, slots=True)
class SavedMap(Record):
    """The project map saved by shadow_understand: its text and when it was saved (Unix seconds)."""

    map: str
    saved_at: int


def _record(row: dict[str, Any]) -> ProjectRecord:
    typed: dict[str, Any] = {
        "trusted": bool(row["trusted"]),
        "level": vocabulary(PermissionLevel, row["level"], "permission level"),
    }
    return ProjectRecord(**(row | typed))


class ProjectRepository:
    """Rows of ``projects`` and ``project_maps``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._last: tuple[tuple[int, int], str, ProjectRecord | None] | None = None

    def get(self, path: Path | str) -> ProjectRecord | None:
        """The project row, or None when the path was never recorded (ENG-02).

        Every tool call asks for its project's row, so the last answer is kept until the
        database's :meth:`~shadowcode.store.database.Database.change_stamp` moves; the stamp is
        taken before the row is read, so a kept row is never older than its stamp.
        """
        key = str(path)
        stamp = self._db.change_stamp()
        last = self._last
        if stamp is not None and last is not None and last[0] == stamp and last[1] == key:
            return last[2]
        row = self._db.row("SELECT path, trusted, level, trusted_at, created_at FROM projects WHERE path = ?", (key,))
        record = None if row is None else _record(row)
        if stamp is not None:
            self._last = (stamp, key, record)
        return record

    def ensure(self, path: Path | str) -> None:
        """Insert the project row (untrusted) when missing, so other rows can reference it."""
        self._db.execute(
            "INSERT OR IGNORE INTO projects (path, created_at) VALUES (?, ?)", (str(path), int(time.time()))
        )

    def trust(self, path: Path | str, level: PermissionLevel) -> None:
        """Record the project (if new) as trusted at ``level``, in one transaction."""
        with self._db.atomic():
            self.ensure(path)
            self._db.execute(
                "UPDATE projects SET trusted = 1, level = ?, trusted_at = ? WHERE path = ?",
                (PermissionLevel(level).value, int(time.time()), str(path)),
            )

    def untrust(self, path: Path | str) -> None:
        """Remove trust (the level returns to ``read_only``); a missing row stays missing."""
        self._db.execute(
            "UPDATE projects SET trusted = 0, level = ? WHERE path = ?", (PermissionLevel.READ_ONLY.value, str(path))
        )

    def trusted(self) -> list[ProjectRecord]:
        """Every trusted project, by path."""
        rows = self._db.rows(
            "SELECT path, trusted, level, trusted_at, created_at FROM projects WHERE trusted = 1 ORDER BY path"
        )
        return [_record(r) for r in rows]

    def saved_map(self, project: Path | str) -> SavedMap | None:
        """The saved project map, or None."""
        row = self._db.row("SELECT map, saved_at FROM project_maps WHERE project = ?", (str(project),))
        return None if row is None else SavedMap(**row)

    def save_map(self, project: Path | str, text: str, at: int) -> None:
        """Save (replace) the project's map text, saved at ``at`` (Unix seconds)."""
        self._db.execute(
            "INSERT INTO project_maps (project, map, saved_at) VALUES (?, ?, ?) "
            "ON CONFLICT (project) DO UPDATE SET map = excluded.map, saved_at = excluded.saved_at",
            (str(project), text, at),
        )
