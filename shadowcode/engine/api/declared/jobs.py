"""The verbs of the engine API's jobs part, as :class:`JobVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.jobs`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.jobs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS

if TYPE_CHECKING:
    from shadowcode.engine.api.jobs import (
        ApprovalAnswer,
        ApprovalAsk,
        ApprovalAsked,
        ApprovalDecision,
        ApprovalRecord,
        JobCancelled,
        JobDetail,
        JobQuery,
        JobRef,
        JobState,
        JobSummary,
        RecentJobs,
        Rollback,
        RollbackPlan,
        RollbackPreview,
        RollbackResult,
        TaskRecord,
        TaskRequest,
        TaskSubmitted,
        TestRequest,
        TestSubmitted,
    )

__all__ = ["JobVerbs"]


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
