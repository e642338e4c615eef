"""The engine API: delegated tasks, test jobs, their approvals (asked in the host too) and rollback.

Covers SRV-10, SRV-11, SRV-15, SRV-16, SRV-17, SRV-18, SRV-29, ENG-07, ENG-08.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.jobs` and handled in process in :mod:`shadowcode.engine.verbs.jobs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.tasks import EventRecord, TaskRecord

__all__ = [
    "ApprovalAnswer",
    "ApprovalAsk",
    "ApprovalAsked",
    "ApprovalDecision",
    "JobCancelled",
    "JobDetail",
    "JobQuery",
    "JobRef",
    "JobState",
    "JobSummary",
    "JobView",
    "RecentJobs",
    "Rollback",
    "RollbackPlan",
    "RollbackPreview",
    "RollbackResult",
    "TaskRequest",
    "TaskSubmitted",
    "TestRequest",
    "TestSubmitted",
    # the records its verbs return, re-exported so frontends never import the store
    "ApprovalRecord",
    "EventRecord",
    "TaskRecord",
]


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
class JobView(JobSummary):
    """A job's summary with its outcome: its answer and why it ended (SRV-16)."""

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
class JobState:
    """One job as a host follows it, read in one go (SRV-16, SRV-26).

    Attributes:
        id: the job id (``task_<hex>``).
        mode: build, plan, review or test.
        status: its engine status.
        created_at: Unix seconds it was recorded.
        updated_at: Unix seconds of its latest change: a status change or its newest event.
        finished_at: Unix seconds it finished; None while unfinished.
        step: what it is doing now (or how it ended), a short human phrase: at most
            JOB_STEP_MAX_CHARS characters, control characters made inert.
        answer: the answer of a finished job (``tests passed`` for a test job), else None.
        error: why a failed, cancelled or interrupted job ended, else None.
        pending_approvals: its approvals still waiting for a decision, oldest first.
    """

    id: str
    mode: TaskMode
    status: TaskStatus
    created_at: int
    updated_at: int
    finished_at: int | None
    step: str
    answer: str | None
    error: str | None
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
class ApprovalAsk:
    """Ask the host about one pending approval of the caller's own jobs (SRV-29)."""

    approval_id: str


@dataclass(frozen=True, slots=True)
class ApprovalAsked:
    """What a host is asked about one pending approval, and the state that answers it (SRV-29).

    Attributes:
        approval_id: the approval.
        task_id: its job.
        kind: ``command``, ``test``, ``background``, ``mcp_call``, ``mcp_read_resource`` or ``mcp_get_prompt``.
        action: the exact action (``{"argv": [...], "cwd": "/abs"}`` for a command).
        prompt: the job's prompt (a test job's: its command).
        project: the job's project folder.
        changed_files: project-relative paths the job has changed so far, in the order first written.
        state: the engine-signed state a host hands back with its answer; opaque, single-use.
        expires_at: the state's expiry, integer Unix seconds.
    """

    approval_id: str
    task_id: str
    kind: str
    action: dict[str, Any]
    prompt: str
    project: str
    changed_files: list[str]
    state: str
    expires_at: int


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """A host's answer to one approval, carried by the state it was handed (SRV-29).

    Attributes:
        state: the state from :class:`ApprovalAsked`, as the client handed it back.
        decision: ``approve`` or ``deny``.
        task_id: when given, the approval must be one of this job's.
        via: the way the answer came: ``host`` (an elicitation answered by the host) or
            ``page`` (the loopback approval page); recorded as the approval's ``resolved_by``.
        check_only: verify everything and decide nothing (so several answers can be checked
            before any is applied).
    """

    state: str
    decision: Literal["approve", "deny"]
    task_id: str | None = None
    via: Literal["host", "page"] = "host"
    check_only: bool = False


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


@dataclass(frozen=True, slots=True)
class RollbackPreview:
    """What undoing one task's changes would do, asked before doing it (ENG-06, SRV-18)."""

    task_id: str


@dataclass(frozen=True, slots=True)
class RollbackPlan:
    """A rollback's preview: paths it would restore and remove (files the task created), paths
    already back at their earlier content, and conflicts (paths changed after the task wrote
    them: with any, the rollback refuses and changes nothing); in the order first written (ENG-06).
    """

    task_id: str
    restore: list[str]
    remove: list[str]
    unchanged: list[str]
    conflicts: list[str]
