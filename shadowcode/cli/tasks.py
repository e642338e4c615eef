"""``shadowcode run``, ``jobs``, ``approvals``, ``approve``, ``deny`` (ENG-07, ENG-08)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import EngineApi, EventRecord, JobDetail

__all__ = ["follow_job", "register"]

_FOLLOW_POLL_SECONDS = 0.2
"""How often ``--follow`` asks for new events (a display cadence, not a limit)."""

_EVENTS_SHOWN_MAX = 1000
"""Events ``jobs ID`` prints at most (a display bound, not a limit)."""


def register(app: typer.Typer) -> None:
    """Add the task verbs to the root app."""
    app.command("run")(run)
    app.command("jobs")(jobs)
    app.command("approvals")(approvals)
    app.command("approve")(approve)
    app.command("deny")(deny)


def run(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="What the task should do in the --workspace project.")],
    detach: Annotated[bool, typer.Option("--detach", help="Submit to the headless engine and return at once.")] = False,
    mode: Annotated[str, typer.Option("--mode", help="build, plan or review.")] = "build",
    model: Annotated[str | None, typer.Option("--model", help="Configured model name.")] = None,
    level: Annotated[
        str | None, typer.Option("--level", help="Permission ceiling (default: the project's configured level).")
    ] = None,
) -> None:
    """Run an agent task; without --detach, follow it until it finishes (ENG-08)."""
    from shadowcode.cli.render import visible
    from shadowcode.engine.api import TaskRequest
    from shadowcode.enums import EngineMode, PermissionLevel, TaskMode
    from shadowcode.errors import ConfigError, UsageError

    g = globals_of(ctx)
    if mode not in ("build", "plan", "review"):
        raise UsageError(f"--mode must be build, plan or review, not {mode!r}")
    if level is not None and level not in tuple(PermissionLevel):
        raise UsageError(f"--level must be read_only, workspace or elevated, not {level!r}")
    request = TaskRequest(prompt, TaskMode(mode), None if level is None else PermissionLevel(level), model)

    async def submit(api: EngineApi) -> str:
        from shadowcode.engine.wire import to_json

        if detach:
            if api.mode is not EngineMode.ATTACHED:
                raise ConfigError("--detach needs the headless engine: start it with `shadowcode engine &` first")
            job = await api.task_submit(request, g.caller())
            follow = f"shadowcode jobs {job.job_id} --follow"
            emit(g, to_json(job), f"{job.job_id} queued (detached); follow it with: {follow}")
            return "queued"
        owner = await api.open_owner("cli", g.caller())
        try:
            job = await api.task_submit(request, g.caller(owner=owner))
            if not g.json:
                sys.stdout.write(f"{job.job_id} started ({job.mode}, {job.permission_level})\n")
                for note in job.notes:
                    sys.stdout.write(f"note: {visible(note)}\n")
            final = await follow_job(g, api, job.job_id)
        finally:
            import anyio

            with anyio.CancelScope(shield=True):
                await api.close_owner(owner, "the command ended")
        if g.json:
            emit(g, to_json(final.job), "")
        return str(final.job.status)

    status = with_engine(g, submit)
    raise typer.Exit(0 if status in ("done", "queued") else 1)


async def follow_job(g: Globals, api: EngineApi, job_id: str) -> JobDetail:
    """Print the job's events as they come until it has finished and every event was shown.

    Each event is shown by :func:`~shadowcode.cli.render.event_line`, every string in it inert
    (CW-04).
    """
    import anyio

    from shadowcode.cli.render import event_line
    from shadowcode.engine.api import JobQuery

    caller = g.caller(project=False)
    cursor = 0
    while True:
        page = await api.job(JobQuery(job_id, cursor), caller)
        for event in page.events:
            cursor = event.id
            line = event_line(event)
            if line and not g.json:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
        if not page.job.status.active and not page.events:
            return page
        if page.next_cursor is None:
            await anyio.sleep(_FOLLOW_POLL_SECONDS)


def jobs(
    ctx: typer.Context,
    job_id: Annotated[str | None, typer.Argument(help="A job to show; omitted: list recent jobs.")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Stream the job's events until it finishes.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="Jobs to list.")] = 20,
) -> None:
    """List recent jobs, show one job's events, or follow it as it runs (ENG-08)."""
    from shadowcode.cli.render import event_line, job_line
    from shadowcode.engine.api import JobQuery, RecentJobs
    from shadowcode.engine.wire import to_json
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    caller = g.caller(project=False)
    if job_id is None:
        if follow:
            raise UsageError("--follow needs a job id")
        found = with_engine(g, lambda api: api.jobs_recent(RecentJobs(limit), caller))
        emit(g, {"jobs": to_json(found)}, "\n".join(job_line(j) for j in found) or "no jobs yet")
        return
    if follow:
        final = with_engine(g, lambda api: follow_job(g, api, job_id))
        if g.json:
            emit(g, to_json(final.job), "")
        raise typer.Exit(0 if final.job.status == "done" else 1)

    async def show(api: EngineApi) -> tuple[JobDetail, list[EventRecord]]:
        page = await api.job(JobQuery(job_id), caller)
        events = list(page.events)
        while page.next_cursor is not None and len(events) < _EVENTS_SHOWN_MAX:
            page = await api.job(JobQuery(job_id, page.next_cursor), caller)
            events.extend(page.events)
        return page, events[:_EVENTS_SHOWN_MAX]

    detail, events = with_engine(g, show)
    lines = [job_line(detail.job)] + [line for e in events if (line := event_line(e))]
    emit(g, {"job": to_json(detail.job), "events": to_json(events)}, "\n".join(lines))


def approvals(ctx: typer.Context) -> None:
    """List pending approvals: the exact action each one would allow (ENG-07)."""
    from shadowcode.cli.render import action_text
    from shadowcode.engine.api import Empty
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    pending = with_engine(g, lambda api: api.approvals(Empty(), g.caller(project=False)))
    lines = [f"{a.id}  {a.kind:<10} job {a.task_id}  {action_text(a)}" for a in pending]
    emit(g, {"approvals": to_json(pending)}, "\n".join(lines) or "no pending approvals")


def _resolve(ctx: typer.Context, approval_id: str, decision: Literal["approve", "deny"]) -> None:
    from shadowcode.cli.render import action_text
    from shadowcode.engine.api import ApprovalDecision
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    request = ApprovalDecision(approval_id, decision)
    done = with_engine(g, lambda api: api.approval_resolve(request, g.caller(project=False)))
    emit(g, to_json(done), f"{done.id} {done.status}: {action_text(done)}")


def approve(ctx: typer.Context, approval_id: Annotated[str, typer.Argument(help="Exact approval id.")]) -> None:
    """Approve one exact pending action (ENG-07)."""
    _resolve(ctx, approval_id, "approve")


def deny(ctx: typer.Context, approval_id: Annotated[str, typer.Argument(help="Exact approval id.")]) -> None:
    """Deny one exact pending action (ENG-07)."""
    _resolve(ctx, approval_id, "deny")
