"""The verbs of the engine API's notes part, as :class:`NoteVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.notes`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.notes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

if TYPE_CHECKING:
    from shadowcode.engine.api.notes import (
        GoalAbandon,
        GoalAdvance,
        GoalCreate,
        GoalRecord,
        GoalRef,
        GoalSummary,
        MemoryAppend,
        MemoryNote,
        MemoryRef,
        MemoryReplace,
    )

__all__ = ["NoteVerbs"]


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
