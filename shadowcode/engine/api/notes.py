"""The engine API: project and task notes, durable goals.

Covers SRV-12, SRV-14.

The request and result types of this part, and its verbs as :class:`NoteVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.notes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
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
    "NoteVerbs",
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


class NoteVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("memory/read")
    async def memory_read(self, request: MemoryRef, caller: Caller = NOBODY) -> MemoryNote:
        """The project note or an exact task's note (SRV-12).

        Raises:
            ToolError: a bad scope and task id combination.
            NotFound: the task is not one of this project.
        """
        ...

    @verb("memory/append")
    async def memory_append(self, request: MemoryAppend, caller: Caller = NOBODY) -> MemoryNote:
        """Append a paragraph to a note; needs write access (SRV-12).

        Raises:
            PolicyError: no write access. ToolError: empty text, the note's size bound.
        """
        ...

    @verb("memory/replace")
    async def memory_replace(self, request: MemoryReplace, caller: Caller = NOBODY) -> MemoryNote:
        """Replace a note at its current hash; needs write access (SRV-12).

        Raises:
            PolicyError: no write access. ConflictError: a stale hash (nothing changes).
        """
        ...

    @verb("goal/list")
    async def goal_list(self, request: Empty, caller: Caller = NOBODY) -> list[GoalSummary]:
        """The project's goals, newest first (SRV-14)."""
        ...

    @verb("goal/get")
    async def goal_get(self, request: GoalRef, caller: Caller = NOBODY) -> GoalRecord:
        """One goal of the project with its progress notes (SRV-14).

        Raises:
            NotFound: no such goal in this project.
        """
        ...

    @verb("goal/create")
    async def goal_create(self, request: GoalCreate, caller: Caller = NOBODY) -> GoalRecord:
        """Create an active goal; never starts a task; needs write access (SRV-14)."""
        ...

    @verb("goal/advance")
    async def goal_advance(self, request: GoalAdvance, caller: Caller = NOBODY) -> GoalRecord:
        """Record progress on an active goal, optionally completing it; needs write access (SRV-14)."""
        ...

    @verb("goal/abandon")
    async def goal_abandon(self, request: GoalAbandon, caller: Caller = NOBODY) -> GoalRecord:
        """Abandon an active goal; needs write access (SRV-14)."""
        ...
