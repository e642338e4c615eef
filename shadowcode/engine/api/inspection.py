"""The engine API: inspection of the caller's project and of the records about it.

Covers SRV-05, SRV-13, SRV-18, SRV-19, SRV-20.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.inspection` and handled in process in :mod:`shadowcode.engine.verbs.inspection`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

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
