"""Handlers: delegated tasks, test jobs, their approvals and rollback (SRV-09, SRV-10, SRV-11, SRV-15, SRV-16,
SRV-17, SRV-18, SRV-24, SRV-29, ENG-04, ENG-05, ENG-07, ENG-08).

A confined caller (an MCP connection) reaches only its own owner's jobs and approvals, in its
own project; the CLI acts for the whole profile. Submitting records the job and queues it at
once: the returned id is not a claim of completion (SRV-15).
"""

from __future__ import annotations

from typing import cast

from shadowcode.blocking import run_blocking
from shadowcode.engine.api import (
    ApprovalAnswer,
    ApprovalAsk,
    ApprovalAsked,
    ApprovalDecision,
    ApprovalRecord,
    Caller,
    Empty,
    EngineApi,
    JobCancelled,
    JobDetail,
    JobQuery,
    JobRef,
    JobState,
    JobSummary,
    JobView,
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
from shadowcode.engine.approval_states import action_sha256
from shadowcode.engine.approvals import already_decided
from shadowcode.engine.job_steps import job_step
from shadowcode.engine.owners import Owner
from shadowcode.engine.projects import Project
from shadowcode.engine.state import EngineState, require_write
from shadowcode.engine.verbs._registry import handles
from shadowcode.enums import ApprovalStatus, PermissionLevel, TaskMode, TaskStatus
from shadowcode.errors import ConfigError, NotFound, PolicyError, ProtocolError, ToolError
from shadowcode.limits import JOB_EVENTS_PAGE_MAX, PROMPT_MAX_BYTES
from shadowcode.settings import ModelSettings

__all__: list[str] = []


def _owner(caller: Caller) -> Owner | None:
    if caller.owner is not None and not isinstance(caller.owner, Owner):
        raise ProtocolError("this owner does not belong to this engine")
    return caller.owner


def _effective_level(project: Project, mode: TaskMode, requested: PermissionLevel) -> tuple[PermissionLevel, list[str]]:
    """The level a task runs at: lowered to the project's ceiling, read_only for Plan and Review (SRV-10)."""
    notes: list[str] = []
    ceiling = PermissionLevel(project.level) if project.trusted else PermissionLevel.READ_ONLY
    effective = requested
    if not requested.within(ceiling):
        effective = ceiling
        why = "configured level" if project.trusted else "untrusted project's level"
        notes.append(f"permission level lowered from {requested} to {ceiling}, the project's {why}")
    if not mode.writes and effective is not PermissionLevel.READ_ONLY:
        notes.append(f"{mode} tasks never write: running at read_only")
        effective = PermissionLevel.READ_ONLY
    return effective, notes


def _model(state: EngineState, name: str | None) -> ModelSettings:
    """The configured model called ``name``, or the default one (ENG-05).

    Raises:
        ConfigError: no model is configured, or none has that name.
    """
    settings = state.settings()
    if not settings.models:
        raise ConfigError(
            f"no model is configured: add one with `shadowcode models add` or in {state.profile.settings_path}"
        )
    wanted = name or settings.default_model or settings.models[0].name
    for entry in settings.models:
        if entry.name == wanted:
            return entry
    known = ", ".join(m.name for m in settings.models)
    raise ConfigError(f"no model named {wanted!r} is configured (configured: {known})")


def _record(
    state: EngineState,
    owner: Owner | None,
    project: Project,
    mode: TaskMode,
    prompt: str,
    level: PermissionLevel,
    model: str | None,
) -> TaskRecord:
    """Charge the owner one job of its lifetime (SRV-24), record the queued job and give it to the owner."""
    if owner is not None:
        state.owners.charge(owner, project.path)
    task = state.records.create(
        project=project.path,
        owner=owner.id if owner else None,
        mode=mode,
        prompt=prompt,
        permission_level=level,
        model=model,
        engine_id=state.id,
    )
    if owner is not None:
        owner.task_ids.add(task.id)
    return task


@handles(EngineApi.task_submit)
async def task_submit(state: EngineState, request: TaskRequest, caller: Caller) -> TaskSubmitted:
    owner = _owner(caller)
    if request.mode is TaskMode.TEST:
        raise ToolError("unknown mode 'test'; use build, plan or review")
    if not request.prompt.strip():
        raise ToolError("the prompt is empty")
    size = len(request.prompt.encode("utf-8"))
    if size > PROMPT_MAX_BYTES:
        raise ToolError(f"the prompt is {size} bytes; the limit is {PROMPT_MAX_BYTES} bytes")
    project = state.project(caller)
    requested = request.level
    if requested is None:
        requested = PermissionLevel(project.level) if project.trusted else PermissionLevel.READ_ONLY
    effective, notes = _effective_level(project, request.mode, requested)
    if effective is not PermissionLevel.READ_ONLY:
        require_write(project, caller.access, f"a {effective} task")
    model = _model(state, request.model)
    task = _record(state, owner, project, request.mode, request.prompt, effective, model.name)
    for note in notes:
        state.records.event(task.id, "task.note", {"note": note})
    servers = None
    if request.mode is TaskMode.BUILD and effective is not PermissionLevel.READ_ONLY and project.trusted:
        servers = state.mcp_servers.snapshot(project.path)  # CLI-06, CLI-09
        for note in servers.notes:
            state.records.event(task.id, "task.note", {"note": note})
    state.runner.queue_agent(task, model, servers)
    return TaskSubmitted(task.id, TaskStatus.QUEUED, request.mode, effective, requested, model.name, notes)


@handles(EngineApi.test_submit)
async def test_submit(state: EngineState, request: TestRequest, caller: Caller) -> TestSubmitted:
    owner = _owner(caller)
    project = state.project(caller)
    require_write(project, caller.access, "a test job")
    command = request.command
    # The wire decoder checks the list, not its items: each is checked here.
    items = cast("list[object] | None", command)
    if items is not None and (not items or not all(isinstance(a, str) and a for a in items)):
        raise ToolError("command must be a non-empty array of non-empty strings")
    from shadowcode.agent.toolbox import detect_single_test_command

    argv = list(command) if command else await run_blocking(detect_single_test_command, project.path)
    task = _record(state, owner, project, TaskMode.TEST, " ".join(argv), PermissionLevel.WORKSPACE, None)
    state.runner.queue_test(task, argv)
    return TestSubmitted(task.id, TaskStatus.QUEUED, argv)


def job_summary(task: TaskRecord) -> JobSummary:
    """A job as its owner's listing shows it (SRV-16)."""
    return JobSummary(task.id, task.mode, task.status, task.prompt, task.permission_level, task.model,
                      task.created_at, task.finished_at)  # fmt: skip


def job_view(task: TaskRecord) -> JobView:
    """A job's summary with its outcome (SRV-16)."""
    return JobView(task.id, task.mode, task.status, task.prompt, task.permission_level, task.model,
                   task.created_at, task.finished_at, task.answer, task.error)  # fmt: skip


def _visible(state: EngineState, job_id: str, caller: Caller) -> TaskRecord:
    """The job ``job_id`` as the caller may see it: confined callers only their owner's, in their project.

    Raises:
        NotFound: no such job for this caller (another owner's job is not revealed).
    """
    if caller.confined:
        owner = _owner(caller)
        if owner is None:
            raise NotFound(f"no job {job_id!r} created by this connection", task_id=job_id)
        task = state.records.get(job_id, state.project(caller).path)
        if task.owner != owner.id:
            raise NotFound(f"no job {job_id!r} created by this connection", task_id=job_id)
    else:
        task = state.records.get(job_id)
    return task


@handles(EngineApi.jobs)
async def jobs(state: EngineState, request: Empty, caller: Caller) -> list[JobSummary]:
    owner = _owner(caller)
    if owner is None:
        return []
    return [job_summary(task) for task in state.records.for_owner(owner.id)]


@handles(EngineApi.jobs_recent)
async def jobs_recent(state: EngineState, request: RecentJobs, caller: Caller) -> list[TaskRecord]:
    state.records.sweep_orphans()
    project = state.project(caller).path if caller.confined else None
    return state.records.recent(request.limit, project)


@handles(EngineApi.job)
async def job(state: EngineState, request: JobQuery, caller: Caller) -> JobDetail:
    if not caller.confined:
        state.records.sweep_orphans()
    task = _visible(state, request.job_id, caller)
    events = state.records.events(task.id, after=request.cursor, limit=JOB_EVENTS_PAGE_MAX)
    return JobDetail(
        job=job_view(task),
        events=events,
        next_cursor=events[-1].id if len(events) == JOB_EVENTS_PAGE_MAX else None,
        pending_approvals=state.approvals.pending(task_id=task.id),
    )


@handles(EngineApi.job_state)
async def job_state(state: EngineState, request: JobRef, caller: Caller) -> JobState:
    task = _visible(state, request.job_id, caller)
    last = state.records.last_event(task.id)
    pending = state.approvals.pending(task_id=task.id)
    updated = max(task.updated_at, last.at) if last is not None else task.updated_at
    return JobState(
        id=task.id,
        mode=task.mode,
        status=task.status,
        created_at=task.created_at,
        updated_at=updated,
        finished_at=task.finished_at,
        step=job_step(task, last, pending),
        answer=task.answer,
        error=task.error,
        pending_approvals=pending,
    )


@handles(EngineApi.job_cancel)
async def job_cancel(state: EngineState, request: JobRef, caller: Caller) -> JobCancelled:
    task = _visible(state, request.job_id, caller)
    if not task.status.active:
        return JobCancelled(task.id, task.status, False)
    if task.engine_id != state.id:
        raise PolicyError(f"job {task.id} runs in another engine; cancel it there")
    who = "its owner" if caller.confined else "the command line"
    await state.runner.cancel(task.id, f"cancelled by {who}")
    return JobCancelled(task.id, state.records.get(task.id).status, True)


@handles(EngineApi.approvals)
async def approvals(state: EngineState, request: Empty, caller: Caller) -> list[ApprovalRecord]:
    if caller.confined:
        owner = _owner(caller)
        return [] if owner is None else state.approvals.pending(owner=owner.id)
    state.records.sweep_orphans()
    return state.approvals.pending()


@handles(EngineApi.approval_resolve)
async def approval_resolve(state: EngineState, request: ApprovalDecision, caller: Caller) -> ApprovalRecord:
    if not caller.confined:
        state.records.sweep_orphans()
        return state.approvals.resolve(request.approval_id, request.decision, by="cli")
    if request.decision == "approve" and not (caller.access.allow_write and caller.access.allow_approvals):
        raise PolicyError(
            "approving needs a server started with --allow-write --allow-approvals; approve it with "
            f"`shadowcode approve {request.approval_id}` instead"
        )
    owner = _owner(caller)
    if owner is None:
        raise NotFound(f"no approval {request.approval_id!r} of a job this connection created")
    return state.approvals.resolve(request.approval_id, request.decision, by=f"mcp:{owner.id}", owner=owner.id)


def _host_owner(caller: Caller, what: str) -> Owner:
    """The owner of a frontend that may ask its host (``--approve-in-host``) about its own approvals (SRV-29).

    Raises:
        PolicyError: not started with --approve-in-host, or not an MCP connection with an owner.
    """
    if not caller.access.approve_in_host:
        raise PolicyError(f"{what} needs a server started with --approve-in-host")
    owner = _owner(caller)
    if not caller.confined or owner is None:
        raise PolicyError(f"{what} is for an MCP connection's own jobs")
    return owner


@handles(EngineApi.approval_ask)
async def approval_ask(state: EngineState, request: ApprovalAsk, caller: Caller) -> ApprovalAsked:
    owner = _host_owner(caller, "asking the host about an approval")
    record = state.approvals.get(request.approval_id)
    if record.owner != owner.id:
        raise NotFound(f"no approval {request.approval_id!r} of a job this connection created")
    if record.status is not ApprovalStatus.PENDING:
        raise PolicyError(already_decided(record, "there is nothing to ask"))
    task = state.records.get(record.task_id)
    changed = list(dict.fromkeys(c.path for c in state.store.checkpoints.task_changes(task.project, task.id)))
    token, expires_at = state.approval_states.mint(record.id, record.action, owner.id)
    return ApprovalAsked(
        record.id, task.id, record.kind, record.action, task.prompt, str(task.project), changed, token, expires_at
    )


@handles(EngineApi.approval_answer)
async def approval_answer(state: EngineState, request: ApprovalAnswer, caller: Caller) -> ApprovalRecord:
    owner = _host_owner(caller, "answering an approval from the host")
    states = state.approval_states
    claims = states.check(request.state, owner.id)
    record = state.approvals.get(claims.approval_id)
    if record.owner != owner.id:  # signed for this owner, so never in practice
        raise PolicyError("this approval state was issued to another connection; nothing was decided")
    if request.task_id is not None and record.task_id != request.task_id:
        raise PolicyError(f"approval {record.id} belongs to another job, not {request.task_id}; nothing was decided")
    if action_sha256(record.action) != claims.action_sha256:
        raise PolicyError(f"approval {record.id} is not for the action this state was issued for; nothing was decided")
    verb_done = "approved" if request.decision == "approve" else "denied"
    if record.status is not ApprovalStatus.PENDING:
        raise PolicyError(already_decided(record, f"nothing was {verb_done}"))
    if request.check_only:
        return record
    states.spend(claims)  # before the write: no await lies between the checks and here
    return state.approvals.resolve(record.id, request.decision, by=f"{request.via}:{owner.id}", owner=owner.id)


@handles(EngineApi.rollback_preview)
async def rollback_preview(state: EngineState, request: RollbackPreview, caller: Caller) -> RollbackPlan:
    project = state.project(caller)
    require_write(project, caller.access, "a rollback")
    plan: RollbackPlan = await run_blocking(state.checkpoints.preview, project.path, request.task_id)
    return plan


@handles(EngineApi.rollback)
async def rollback(state: EngineState, request: Rollback, caller: Caller) -> RollbackResult:
    if request.confirm is not True:
        raise ToolError("rollback needs confirm: true")
    project = state.project(caller)
    require_write(project, caller.access, "a rollback")
    state.records.get(request.task_id, project.path)
    result: RollbackResult = await run_blocking(state.checkpoints.rollback, project.path, request.task_id)
    return result
