"""The engine API: delegated tasks, test jobs, their approvals (asked in the host too) and rollback.

Covers SRV-10, SRV-11, SRV-15, SRV-16, SRV-17, SRV-18, SRV-29, ENG-07, ENG-08.

The request and result types of this part, and its verbs as :class:`JobVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.jobs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus
from shadowcode.limits import (
    CLEANUP_DEADLINE_SECONDS,
)
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
    "JobVerbs",
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


class JobVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("task/create")
    async def task_submit(self, request: TaskRequest, caller: Caller = NOBODY) -> TaskSubmitted:
        """Queue an agent task for the caller's project and return its job at once (SRV-15).

        Owned by ``caller.owner``, or detached without one (ENG-08). The requested level is
        lowered to the project's ceiling, and to read_only for an untrusted project or a Plan
        or Review task; above read_only it needs write access (SRV-09, SRV-10).

        Raises:
            ToolError: an empty or oversized prompt. PolicyError: write access, owner limits
            (SRV-24). ConfigError: no usable model (ENG-05).
        """
        ...

    @verb("test/create")
    async def test_submit(self, request: TestRequest, caller: Caller = NOBODY) -> TestSubmitted:
        """Queue a test job that calls no model; it asks exact approval of its command (SRV-17).

        Raises:
            PolicyError: no write access. ToolError: no command given and not exactly one detected.
        """
        ...

    @verb("job/list")
    async def jobs(self, request: Empty, caller: Caller = NOBODY) -> list[JobSummary]:
        """The caller's owner's jobs, newest first; none before its first delegation (SRV-16)."""
        ...

    @verb("job/recent")
    async def jobs_recent(self, request: RecentJobs, caller: Caller = NOBODY) -> list[TaskRecord]:
        """The profile's newest jobs of every owner; unfinished jobs of a stopped engine read interrupted (ENG-08)."""
        ...

    @verb("job/get")
    async def job(self, request: JobQuery, caller: Caller = NOBODY) -> JobDetail:
        """One job, a page of its events after the cursor, its pending approvals (SRV-16).

        Raises:
            NotFound: not a job of this caller (its owner and project when confined).
        """
        ...

    @verb("job/state")
    async def job_state(self, request: JobRef, caller: Caller = NOBODY) -> JobState:
        """One job's status, times, current step, outcome and pending approvals, in one read (SRV-16, SRV-26).

        Raises:
            NotFound: not a job of this caller (its owner and project when confined).
        """
        ...

    @verb("job/cancel", deadline_seconds=CLEANUP_DEADLINE_SECONDS)
    async def job_cancel(self, request: JobRef, caller: Caller = NOBODY) -> JobCancelled:
        """Cancel one job and wait for its cleanup (SRV-16).

        Raises:
            NotFound: not a job of this caller. PolicyError: it runs in another engine process.
        """
        ...

    @verb("approval/list")
    async def approvals(self, request: Empty, caller: Caller = NOBODY) -> list[ApprovalRecord]:
        """Pending approvals, oldest first: the caller's owner's when confined, else the profile's (ENG-07)."""
        ...

    @verb("approval/resolve")
    async def approval_resolve(self, request: ApprovalDecision, caller: Caller = NOBODY) -> ApprovalRecord:
        """Approve or deny one exact pending approval (ENG-07, SRV-11).

        A confined caller reaches only approvals of its owner's jobs, and approving needs a
        frontend started with write and approval access; denying needs neither.

        Raises:
            NotFound: no such approval (of this owner). PolicyError: missing access, or it is
            no longer pending.
        """
        ...

    @verb("approval/ask")
    async def approval_ask(self, request: ApprovalAsk, caller: Caller = NOBODY) -> ApprovalAsked:
        """Sign a new single-use state for one pending approval of the caller's owner, to ask the host (SRV-29).

        Needs a frontend started with ``--approve-in-host``. Each call mints a new state with a new
        nonce, bound to the approval id, the SHA-256 of its exact action, the owner and an expiry
        APPROVAL_STATE_TTL_SECONDS ahead; the signing key lives only in the engine's memory.

        Raises:
            PolicyError: no ``--approve-in-host``, or it is no longer pending (naming by whom).
            NotFound: no such approval of this owner's jobs.
        """
        ...

    @verb("approval/answer")
    async def approval_answer(self, request: ApprovalAnswer, caller: Caller = NOBODY) -> ApprovalRecord:
        """Verify a state and approve or deny its approval exactly once (SRV-29).

        The first answer wins, whichever way it came (this verb, ``approval/resolve`` from the
        command line or ``shadow_approve``); a later one is refused naming who decided.

        Raises:
            PolicyError: no ``--approve-in-host``; a state that is too long, altered or from an
                engine since restarted, expired, another owner's, already used, for another job or
                for an action that is not the approval's; or the approval is no longer pending.
                Nothing changes.
            NotFound: the approval no longer exists.
        """
        ...

    @verb("task/preview")
    async def rollback_preview(self, request: RollbackPreview, caller: Caller = NOBODY) -> RollbackPlan:
        """What ``rollback`` would restore now and its conflict check's verdict; changes nothing (SRV-18).

        Needs write access like the rollback it previews, so a refusal comes before any question.

        Raises:
            PolicyError: no write access. NotFound: not a task of this project.
        """
        ...

    @verb("task/rollback")
    async def rollback(self, request: Rollback, caller: Caller = NOBODY) -> RollbackResult:
        """Restore the files a task changed, after conflict checks; needs write access and confirm (SRV-18).

        Raises:
            ToolError: confirm is not true. PolicyError: no write access. NotFound: not a task of
            this project. ConflictError: a file changed after the task wrote it (nothing changes).
        """
        ...
