"""The engine API: project and task notes, durable goals.

Covers SRV-12, SRV-14.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.notes` and handled in process in :mod:`shadowcode.engine.verbs.notes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shadowcode.store.goals import GoalRecord, GoalSummary, ProgressNote

__all__ = [
    "GoalAbandon",
    "GoalAdvance",
    "GoalCreate",
    "GoalRef",
    "MemoryAppend",
    "MemoryNote",
    "MemoryRef",
    "MemoryReplace",
    # the records its verbs return, re-exported so frontends never import the store
    "GoalRecord",
    "GoalSummary",
    "ProgressNote",
]


Scope = Literal["project", "task"]


@dataclass(frozen=True, slots=True)
class MemoryRef:
    """The project note, or one task's note by exact task id (SRV-12)."""

    scope: Scope = "project"
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryAppend:
    """Append a paragraph to a note (SRV-12)."""

    text: str
    scope: Scope = "project"
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryReplace:
    """Replace a note whose current hash is ``expected_hash`` (SRV-12)."""

    text: str
    expected_hash: str
    scope: Scope = "project"
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryNote:
    """A note, its content hash (pass it to replace), and when it last changed (None: never written)."""

    scope: Scope
    task_id: str | None
    content: str
    hash: str
    updated_at: int | None


@dataclass(frozen=True, slots=True)
class GoalRef:
    """One goal of the project by id (SRV-14)."""

    goal_id: str


@dataclass(frozen=True, slots=True)
class GoalCreate:
    """A new active goal (SRV-14)."""

    title: str


@dataclass(frozen=True, slots=True)
class GoalAdvance:
    """A progress note on an active goal; ``done`` also completes it (SRV-14)."""

    goal_id: str
    note: str
    done: bool = False


@dataclass(frozen=True, slots=True)
class GoalAbandon:
    """Abandon an active goal, with an optional reason (SRV-14)."""

    goal_id: str
    note: str | None = None
