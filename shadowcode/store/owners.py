"""Engine instances and the owners they served: tables ``engines`` and ``owners``
(ENG-03, SRV-21, SRV-22, SRV-24).

An engine row records one engine process (its pid and :class:`EngineMode`), started and
stopped; an owner row records one connection that delegated work, its lifetime job count and
why it closed. Owners' live state (open, closing, their task ids) is the engine's, not kept here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.enums import EngineMode, TaskStatus
from shadowcode.store.database import Database
from shadowcode.store.records import Record, vocabulary

__all__ = ["EngineRecord", "OwnerRecord", "OwnerRepository"]

_ACTIVE = tuple(s.value for s in TaskStatus if s.active)


@dataclass(frozen=True, slots=True)
class EngineRecord(Record):
    """One engine instance: ``stopped_at`` is None until it recorded its stop."""

    id: str
    pid: int
    mode: EngineMode
    started_at: int
    stopped_at: int | None


@dataclass(frozen=True, slots=True)
class OwnerRecord(Record):
    """One owner row.

    Attributes:
        id: ``own_<hex>``.
        engine_id: the engine it connected to.
        kind: ``stdio``, ``gateway``, ``relay`` or ``cli``.
        project: the canonical project its jobs are confined to.
        jobs: jobs submitted over its lifetime.
        closed_at: None while open.
        close_reason: why it closed (``EOF``, ``engine closed``, ...).
    """

    id: str
    engine_id: str
    kind: str
    project: str
    jobs: int
    opened_at: int
    closed_at: int | None
    close_reason: str | None


def _engine(row: dict[str, Any]) -> EngineRecord:
    typed: dict[str, Any] = {"mode": vocabulary(EngineMode, row["mode"], "engine mode")}
    return EngineRecord(**(row | typed))


class OwnerRepository:
    """Rows of ``engines`` and ``owners``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- engines ------------------------------------------------------------------------

    def engine_started(self, engine_id: str, pid: int, mode: EngineMode) -> None:
        """Record an engine instance starting now."""
        self._db.execute(
            "INSERT INTO engines (id, pid, mode, started_at) VALUES (?, ?, ?, ?)",
            (engine_id, pid, EngineMode(mode).value, int(time.time())),
        )

    def engine_stopped(self, engine_id: str) -> None:
        """Record that the engine instance stopped now."""
        self._db.execute("UPDATE engines SET stopped_at = ? WHERE id = ?", (int(time.time()), engine_id))

    def engine(self, engine_id: str) -> EngineRecord | None:
        """One engine instance, or None."""
        row = self._db.row("SELECT id, pid, mode, started_at, stopped_at FROM engines WHERE id = ?", (engine_id,))
        return None if row is None else _engine(row)

    def engines_with_unfinished_tasks(self) -> list[EngineRecord]:
        """The engines that have a queued, running or waiting task recorded against them."""
        marks = ", ".join("?" * len(_ACTIVE))
        rows = self._db.rows(
            "SELECT DISTINCT e.id, e.pid, e.mode, e.started_at, e.stopped_at FROM tasks t "
            f"JOIN engines e ON e.id = t.engine_id WHERE t.status IN ({marks})",
            _ACTIVE,
        )
        return [_engine(r) for r in rows]

    # -- owners -------------------------------------------------------------------------

    def opened(self, owner_id: str, *, engine_id: str, kind: str, project: Path | str) -> None:
        """Record an owner opened now."""
        self._db.execute(
            "INSERT INTO owners (id, engine_id, kind, project, opened_at) VALUES (?, ?, ?, ?, ?)",
            (owner_id, engine_id, kind, str(project), int(time.time())),
        )

    def set_jobs(self, owner_id: str, jobs: int) -> None:
        """Record the owner's lifetime job count."""
        self._db.execute("UPDATE owners SET jobs = ? WHERE id = ?", (jobs, owner_id))

    def closed(self, owner_id: str, reason: str) -> None:
        """Record that the owner closed now, and why."""
        self._db.execute(
            "UPDATE owners SET closed_at = ?, close_reason = ? WHERE id = ?", (int(time.time()), reason, owner_id)
        )

    def get(self, owner_id: str) -> OwnerRecord | None:
        """One owner row, or None."""
        row = self._db.row(
            "SELECT id, engine_id, kind, project, jobs, opened_at, closed_at, close_reason FROM owners WHERE id = ?",
            (owner_id,),
        )
        return None if row is None else OwnerRecord(**row)
