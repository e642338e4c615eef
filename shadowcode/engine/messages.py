"""The request and result types of the engine API (:mod:`shadowcode.engine.api`).

Requests and fixed-shape results are frozen dataclasses: the ones defined here, and the store's
own records where the API shows a record as it is stored (a task, an event, an approval, a goal,
a checkpoint: re-exported here, so frontends import them from the API, never from the store).
Documents whose keys depend on what was found (a review, a project map, a SQLite answer, an
MCP catalog) are ``TypedDict``s. Every type here crosses the control socket as JSON and back unchanged
(:mod:`shadowcode.engine.wire`), and MCP tools return them as their structured content, so a
field's name is also its JSON key. Timestamps are integer Unix seconds named ``*_at``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired

from pydantic import JsonValue
from typing_extensions import TypedDict

from shadowcode.enums import EngineMode, PermissionLevel, TaskMode, TaskStatus
from shadowcode.limits import SESSIONS_LIST_MAX
from shadowcode.profile import ModelSettings
from shadowcode.project.documents import ProjectMapDocument, Review, ReviewChange, SqliteRows, SqliteTable, SqliteTables
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.checkpoints import ChangeRecord, CheckpointDetail, CheckpointSummary, WhyEntry
from shadowcode.store.goals import GoalRecord, GoalSummary, ProgressNote
from shadowcode.store.projects import SavedMap
from shadowcode.store.tasks import EventRecord, SessionRecord, TaskRecord

__all__ = [
    "ApprovalDecision",
    "ApprovalRecord",
    "BackgroundProcess",
    "BackgroundRef",
    "BackgroundStopped",
    "ChangeRecord",
    "Check",
    "CheckpointDetail",
    "CheckpointQuery",
    "CheckpointRef",
    "CheckpointSummary",
    "Diagnostics",
    "DoctorRequest",
    "Empty",
    "EngineStatus",
    "EngineStopping",
    "EventRecord",
    "GoalAbandon",
    "GoalAdvance",
    "GoalCreate",
    "GoalRecord",
    "GoalRef",
    "GoalSummary",
    "JobCancelled",
    "JobDetail",
    "JobQuery",
    "JobRef",
    "JobSummary",
    "JobView",
    "McpAdd",
    "McpCatalog",
    "McpEnable",
    "McpGrantChange",
    "McpGrantState",
    "McpRef",
    "McpRemoval",
    "McpRemove",
    "McpServerInfo",
    "MemoryAppend",
    "MemoryNote",
    "MemoryRef",
    "MemoryReplace",
    "ModelAdd",
    "ModelList",
    "OwnerClosed",
    "ProgressNote",
    "ProjectInfo",
    "ProjectMap",
    "ProjectMapDocument",
    "ProjectRef",
    "ProjectTrust",
    "RecentJobs",
    "Review",
    "ReviewChange",
    "Rollback",
    "RollbackResult",
    "SavedMap",
    "SessionQuery",
    "SessionRecord",
    "SqliteQuery",
    "SqliteRows",
    "SqliteTable",
    "SqliteTables",
    "SqliteTablesRequest",
    "Status",
    "TaskRecord",
    "TaskRequest",
    "TaskSubmitted",
    "TestRequest",
    "TestSubmitted",
    "ToolInfo",
    "UnderstandRequest",
    "WhyEntry",
    "WhyQuery",
]

Scope = Literal["project", "task"]
CheckStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Empty:
    """A request without arguments."""


# -- the engine, its background processes (ENG-03, SRV-23) ---------------------------------


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """What ``engine/status`` reports: the engine's id and pid, and its owners and jobs (ENG-03)."""

    id: str
    pid: int
    mode: EngineMode
    profile: str
    owners: int
    running_jobs: list[str]
    queued_jobs: list[str]


@dataclass(frozen=True, slots=True)
class EngineStopping:
    """The engine accepted a stop; it stops after owned cleanup (ENG-03)."""

    stopping: bool = True


@dataclass(frozen=True, slots=True)
class BackgroundRef:
    """One background process by id (SRV-23)."""

    id: str


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    """A background process started by an approved tool (SRV-23)."""

    id: str
    pid: int | None
    argv: list[str]
    cwd: str
    project: str
    started_at: int
    running: bool
    exit_code: int | None
    signal: int | None


@dataclass(frozen=True, slots=True)
class BackgroundStopped:
    """A stopped background process: how it ended and the last of its output (SRV-23)."""

    id: str
    pid: int | None
    exit_code: int | None
    signal: int | None
    output: str
    truncated: bool


@dataclass(frozen=True, slots=True)
class OwnerClosed:
    """An owner's close: the jobs its close cancelled, after their cleanup (SRV-21)."""

    owner: str
    reason: str
    cancelled: list[str]


# -- projects, status, models (ENG-01, ENG-02, ENG-05, SRV-20) -----------------------------


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    """A canonical project and its trust; ``level`` is None while the project is untrusted (ENG-02)."""

    path: str
    trusted: bool
    level: PermissionLevel | None


@dataclass(frozen=True, slots=True)
class ProjectRef:
    """A project folder as given; the engine canonicalizes it (ENG-02)."""

    path: str


@dataclass(frozen=True, slots=True)
class ProjectTrust:
    """Trust a project folder at a permission level (ENG-02)."""

    path: str
    level: PermissionLevel


@dataclass(frozen=True, slots=True)
class Status:
    """The caller's project, the profile, the engine and its models in one answer (SRV-20).

    Attributes:
        profile: the profile's name.
        profile_root: the profile's folder.
        engine_mode: how the caller reaches the engine.
        project: the caller's project.
        models_configured: configured models.
        default_model: the default model's name, or None.
    """

    profile: str
    profile_root: str
    engine_mode: EngineMode
    project: ProjectInfo
    models_configured: int
    default_model: str | None


@dataclass(frozen=True, slots=True)
class ModelList:
    """The profile's configured models and its default (ENG-05)."""

    models: list[ModelSettings]
    default: str | None


@dataclass(frozen=True, slots=True)
class ModelAdd:
    """Add or replace a model in the profile's settings; ``make_default`` also makes it the default (ENG-05)."""

    model: ModelSettings
    make_default: bool = False


# -- inspection (SRV-13, SRV-19, SRV-20) ----------------------------------------------------


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


# -- memory and goals (SRV-12, SRV-14) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryRef:
    """The project note, or one task's note by exact task id (SRV-12)."""

    scope: Scope = "project"
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryAppend:
    """Append a paragraph to a note (SRV-12)."""

    text: str | None
    scope: Scope = "project"
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryReplace:
    """Replace a note whose current hash is ``expected_hash`` (SRV-12)."""

    text: str | None
    expected_hash: str | None
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

    goal_id: str | None


@dataclass(frozen=True, slots=True)
class GoalCreate:
    """A new active goal (SRV-14)."""

    title: str | None


@dataclass(frozen=True, slots=True)
class GoalAdvance:
    """A progress note on an active goal; ``done`` also completes it (SRV-14)."""

    goal_id: str | None
    note: str | None
    done: bool = False


@dataclass(frozen=True, slots=True)
class GoalAbandon:
    """Abandon an active goal, with an optional reason (SRV-14)."""

    goal_id: str | None
    note: str | None = None


# -- delegated work (SRV-10, SRV-15, SRV-16, SRV-17, SRV-18, ENG-07, ENG-08) ---------------


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """An agent task for the caller's project (SRV-10).

    ``level`` is a ceiling the engine may lower, never raise; None asks for the project's
    configured level. ``model`` None means the profile's default model.
    """

    prompt: str
    mode: TaskMode = TaskMode.BUILD
    level: PermissionLevel | None = PermissionLevel.READ_ONLY
    model: str | None = None


@dataclass(frozen=True, slots=True)
class TaskSubmitted:
    """A queued task: its job id is not a claim of completion (SRV-15)."""

    job_id: str
    status: TaskStatus
    mode: TaskMode
    permission_level: PermissionLevel
    requested_level: PermissionLevel
    model: str
    notes: list[str]


@dataclass(frozen=True, slots=True)
class TestRequest:
    """A test job; without ``command``, the one detected test command (SRV-17)."""

    __test__ = False  # not a pytest class

    command: list[str] | None = None


@dataclass(frozen=True, slots=True)
class TestSubmitted:
    """A queued test job and the exact command it will ask approval for (SRV-17)."""

    __test__ = False  # not a pytest class

    job_id: str
    status: TaskStatus
    command: list[str]


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A job as an owner's listing shows it (SRV-16)."""

    id: str
    mode: TaskMode
    status: TaskStatus
    prompt: str
    permission_level: PermissionLevel
    model: str | None
    created_at: int
    finished_at: int | None


@dataclass(frozen=True, slots=True)
class RecentJobs:
    """The profile's newest jobs of every owner and project (ENG-08)."""

    limit: int = 20


@dataclass(frozen=True, slots=True)
class JobRef:
    """One job by exact id (SRV-16)."""

    job_id: str


@dataclass(frozen=True, slots=True)
class JobQuery:
    """One job and the page of its events after ``cursor`` (an event id; 0 for the first page) (SRV-16)."""

    job_id: str
    cursor: int = 0


@dataclass(frozen=True, slots=True)
class JobView:
    """A job's summary with its outcome (SRV-16)."""

    id: str
    mode: TaskMode
    status: TaskStatus
    prompt: str
    permission_level: PermissionLevel
    model: str | None
    created_at: int
    finished_at: int | None
    answer: str | None
    error: str | None


@dataclass(frozen=True, slots=True)
class JobDetail:
    """One job, a page of its events, the cursor of the next page (None: no more yet) and its pending approvals."""

    job: JobView
    events: list[EventRecord]
    next_cursor: int | None
    pending_approvals: list[ApprovalRecord]


@dataclass(frozen=True, slots=True)
class JobCancelled:
    """A cancel's outcome: ``cancelled`` is False when the job had already finished (SRV-16)."""

    job_id: str
    status: TaskStatus
    cancelled: bool


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """Approve or deny one exact pending approval (ENG-07, SRV-11)."""

    approval_id: str
    decision: Literal["approve", "deny"]


@dataclass(frozen=True, slots=True)
class Rollback:
    """Undo one task's changes; ``confirm`` must be true (SRV-18)."""

    task_id: str
    confirm: bool = False


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """The paths restored and the files removed (those the task created), in the order first written (ENG-06)."""

    task_id: str
    restored: list[str]
    removed: list[str]


# -- external MCP servers (CLI-01, CLI-02, CLI-05) ------------------------------------------


class McpGrantState(TypedDict):
    """A definition's grant in the caller's project."""

    state: str
    hash: str | None


class McpServerInfo(TypedDict):
    """A definition as the catalog shows it: everything but environment values (CLI-01, CLI-04).

    Transport-specific keys appear where they apply; ``grant`` only in a catalog; ``error``
    for a project file that is not a usable definition.
    """

    id: str
    name: NotRequired[str]
    scope: NotRequired[str]
    path: NotRequired[str | None]
    hash: str | None
    transport: NotRequired[str]
    description: NotRequired[str | None]
    timeout_sec: NotRequired[float | None]
    command: NotRequired[list[str]]
    env_names: NotRequired[list[str]]
    env_refs: NotRequired[dict[str, str]]
    url: NotRequired[str]
    api_key_env: NotRequired[str | None]
    error: NotRequired[str]
    grant: NotRequired[McpGrantState]


class McpCatalog(TypedDict):
    """The ``--json mcp`` document: definitions with hashes and grant states; nothing is started (CLI-01)."""

    project: str
    trusted: bool
    enabled_max: int
    servers: list[McpServerInfo]


@dataclass(frozen=True, slots=True)
class McpAdd:
    """Register the definition file at ``path`` globally; replacing one needs its current hash (CLI-05)."""

    path: str
    replace_hash: str | None = None


@dataclass(frozen=True, slots=True)
class McpRef:
    """One definition by id: ``config:NAME`` or ``project:PATH`` (CLI-05)."""

    server_id: str


@dataclass(frozen=True, slots=True)
class McpEnable:
    """Enable a definition for the caller's project at its reviewed hash (CLI-02)."""

    server_id: str
    hash: str


@dataclass(frozen=True, slots=True)
class McpRemove:
    """Remove a global definition at its current hash, revoking its grants (CLI-05)."""

    server_id: str
    hash: str


class McpGrantChange(TypedDict):
    """An enable or disable: the definition, the project, the new state, and the granted hash when enabled."""

    id: str
    project: str
    state: Literal["enabled", "disabled"]
    hash: NotRequired[str]


@dataclass(frozen=True, slots=True)
class McpRemoval:
    """A removed global definition and how many project grants its removal revoked (CLI-05)."""

    id: str
    removed: bool
    grants_revoked: int
