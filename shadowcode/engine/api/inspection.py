"""The engine API: inspection of the caller's project and of the records about it.

Covers SRV-05, SRV-13, SRV-18, SRV-19, SRV-20.

The request and result types of this part, and its verbs as :class:`InspectionVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.inspection`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from shadowcode.engine.api._base import INSPECTION_DEADLINE_SECONDS, NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.enums import PermissionLevel
from shadowcode.limits import (
    SESSIONS_LIST_MAX,
)
from shadowcode.project.documents import ProjectMapDocument, Review, ReviewChange, SqliteRows, SqliteTable, SqliteTables
from shadowcode.store.checkpoints import ChangeRecord, CheckpointDetail, CheckpointSummary, WhyEntry
from shadowcode.store.projects import SavedMap
from shadowcode.store.tasks import SessionRecord

__all__ = [
    "Check",
    "CheckpointQuery",
    "CheckpointRef",
    "Diagnostics",
    "DoctorRequest",
    "InspectionVerbs",
    "ProjectMap",
    "SessionQuery",
    "SqliteQuery",
    "SqliteTablesRequest",
    "ToolInfo",
    "UnderstandRequest",
    "WhyQuery",
    # the records its verbs return, re-exported so frontends never import the store
    "ChangeRecord",
    "CheckpointDetail",
    "CheckpointSummary",
    "ProjectMapDocument",
    "Review",
    "ReviewChange",
    "SavedMap",
    "SessionRecord",
    "SqliteRows",
    "SqliteTable",
    "SqliteTables",
    "WhyEntry",
]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A native tool a delegated task can be given, and the permission level it needs (SRV-20)."""

    name: str
    level: PermissionLevel
    description: str


@dataclass(frozen=True, slots=True)
class UnderstandRequest:
    """Build the project map; ``save`` also records it as the project's map (SRV-19)."""

    save: bool = False


class ProjectMap(ProjectMapDocument):
    """``shadow_understand``: the map and whether it was saved as the project's map (SRV-19)."""

    saved: bool


CheckStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class DoctorRequest:
    """Run diagnostics; ``probe_model`` also sends one request to the default model (SRV-19)."""

    probe_model: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    """One diagnostic."""

    name: str
    status: CheckStatus
    detail: str


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """``shadow_doctor``: every check, and whether none failed (SRV-19)."""

    checks: list[Check]
    ok: bool


@dataclass(frozen=True, slots=True)
class SqliteTablesRequest:
    """List the tables of a database file inside the project (SRV-13)."""

    path: str


@dataclass(frozen=True, slots=True)
class SqliteQuery:
    """One bounded read-only statement with bound parameters (SRV-13)."""

    path: str
    sql: str
    params: list[JsonValue] | dict[str, JsonValue] | None = None


@dataclass(frozen=True, slots=True)
class WhyQuery:
    """The recorded change history of a path or of a task (SRV-19)."""

    path: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """The project's task sessions, newest first (SRV-08, SRV-20)."""

    limit: int = SESSIONS_LIST_MAX


@dataclass(frozen=True, slots=True)
class CheckpointQuery:
    """The project's checkpoints, optionally of one task (SRV-18)."""

    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """One checkpoint by id (SRV-18)."""

    checkpoint_id: str


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
