"""The verbs of the engine API's inspection part, as :class:`InspectionVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.inspection`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.inspection`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import INSPECTION_DEADLINE_SECONDS, NOBODY, ApiBase, Caller, Empty, verb

if TYPE_CHECKING:
    from pydantic import JsonValue

    from shadowcode.engine.api.inspection import (
        CheckpointDetail,
        CheckpointQuery,
        CheckpointRef,
        CheckpointSummary,
        Diagnostics,
        DoctorRequest,
        ProjectMap,
        Review,
        SavedMap,
        SessionQuery,
        SessionRecord,
        SqliteQuery,
        SqliteRows,
        SqliteTables,
        SqliteTablesRequest,
        ToolInfo,
        UnderstandRequest,
        WhyEntry,
        WhyQuery,
    )

__all__ = ["InspectionVerbs"]


class InspectionVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("tool/list")
    async def tool_list(self, request: Empty, caller: Caller = NOBODY) -> list[ToolInfo]:
        """The native tools a delegated task can be given, and the level each needs (SRV-20)."""
        ...

    @verb("project/review", deadline_seconds=INSPECTION_DEADLINE_SECONDS)
    async def review(self, request: Empty, caller: Caller = NOBODY) -> Review:
        """The uncommitted changes of the project's git working tree; runs no repository program (SRV-20).

        Raises:
            ToolError: git failed or overran its deadline.
        """
        ...

    @verb("project/understand", deadline_seconds=INSPECTION_DEADLINE_SECONDS)
    async def understand(self, request: UnderstandRequest, caller: Caller = NOBODY) -> ProjectMap:
        """A bounded map of the project, saved only when asked (SRV-19).

        Raises:
            PolicyError: ``save`` without write access.
        """
        ...

    @verb("project/doctor", deadline_seconds=INSPECTION_DEADLINE_SECONDS)
    async def doctor(self, request: DoctorRequest, caller: Caller = NOBODY) -> Diagnostics:
        """Diagnostics of the project, profile and engine; never repairs; probes the model only when asked (SRV-19)."""
        ...

    @verb("sqlite/tables", deadline_seconds=INSPECTION_DEADLINE_SECONDS)
    async def sqlite_tables(self, request: SqliteTablesRequest, caller: Caller = NOBODY) -> SqliteTables:
        """The tables and views of a database file inside the project (SRV-13).

        Raises:
            ToolError: a path outside the project, a file that is not a database.
        """
        ...

    @verb("sqlite/query", deadline_seconds=INSPECTION_DEADLINE_SECONDS)
    async def sqlite_query(self, request: SqliteQuery, caller: Caller = NOBODY) -> SqliteRows:
        """One bounded read-only query on a database file inside the project (SRV-13).

        Raises:
            ToolError: anything that is not one read, bad parameters, the row, byte or time bound.
        """
        ...

    @verb("change/why")
    async def why(self, request: WhyQuery, caller: Caller = NOBODY) -> list[WhyEntry]:
        """Recorded changes of a path or a task, newest first (SRV-19)."""
        ...

    @verb("session/list")
    async def sessions(self, request: SessionQuery, caller: Caller = NOBODY) -> list[SessionRecord]:
        """The project's task sessions, newest first, filtered by project before the limit (SRV-08)."""
        ...

    @verb("checkpoint/list")
    async def checkpoints(self, request: CheckpointQuery, caller: Caller = NOBODY) -> list[CheckpointSummary]:
        """The project's checkpoints, newest first (SRV-18)."""
        ...

    @verb("checkpoint/get")
    async def checkpoint(self, request: CheckpointRef, caller: Caller = NOBODY) -> CheckpointDetail:
        """One checkpoint of the project with its changes (SRV-18).

        Raises:
            NotFound: no such checkpoint in this project.
        """
        ...

    @verb("plan/get")
    async def plan(self, request: Empty, caller: Caller = NOBODY) -> JsonValue:
        """The newest recorded plan of the project, or None (SRV-05)."""
        ...

    @verb("map/get")
    async def saved_map(self, request: Empty, caller: Caller = NOBODY) -> SavedMap | None:
        """The project map saved by ``shadow_understand``, or None (SRV-05)."""
        ...
