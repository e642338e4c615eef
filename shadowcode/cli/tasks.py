"""``shadowcode run``, ``jobs``, ``approvals``, ``approve``, ``deny`` (ENG-07, ENG-08)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from shadowcode.cli.context import Globals, emit, globals_of

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the task verbs to the root app."""
    app.command("run")(run)
    app.command("jobs")(jobs)
    app.command("approvals")(approvals)
    app.command("approve")(approve)
    app.command("deny")(deny)


def _engine(g: Globals) -> Any:
    from shadowcode.engine import Engine
    from shadowcode.profile import Profile

    return Engine.open(Profile.select(g.profile))


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
    import anyio

    from shadowcode.enums import PermissionLevel
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    if mode not in ("build", "plan", "review"):
        raise UsageError(f"--mode must be build, plan or review, not {mode!r}")
    if level is not None and level not in tuple(PermissionLevel):
        raise UsageError(f"--level must be read_only, workspace or elevated, not {level!r}")
    with _engine(g) as engine:
        project = engine.project(g.workspace_path())
        chosen = level or (project.level if project.trusted else PermissionLevel.READ_ONLY)
        status = anyio.run(_run, g, engine, project, prompt, detach, mode, model, chosen)
    raise typer.Exit(0 if status in ("done", "queued") else 1)


async def _run(g: Globals, engine: Any, project: Any, prompt: str, detach: bool, mode: str, model: str | None,
               level: str) -> str:  # fmt: skip
    from shadowcode.engine import Access
    from shadowcode.engine.remote import RemoteCore, open_core
    from shadowcode.errors import ConfigError

    access = Access(allow_write=True)
    async with open_core(engine) as core:
        if detach:
            if not isinstance(core, RemoteCore):
                raise ConfigError("--detach needs the headless engine: start it with `shadowcode engine &` first")
            job = await core.submit_task(owner=None, project=project, prompt=prompt, mode=mode, level=level,
                                         model=model, access=access)  # fmt: skip
            emit(g, job, f"{job['job_id']} queued (detached); follow it with: shadowcode jobs {job['job_id']} --follow")
            return "queued"
        owner = await core.open_owner("cli", project.path)
        try:
            job = await core.submit_task(owner=owner, project=project, prompt=prompt, mode=mode, level=level,
                                         model=model, access=access)  # fmt: skip
            if not g.json:
                sys.stdout.write(f"{job['job_id']} started ({job['mode']}, {job['permission_level']})\n")
                for note in job.get("notes", []):
                    sys.stdout.write(f"note: {note}\n")
            final = await _follow(g, engine, job["job_id"])
        finally:
            import anyio

            with anyio.CancelScope(shield=True):
                await core.close_owner(owner, "the command ended")
        if g.json:
            emit(g, final.as_dict(), "")
        return str(final.status)


async def _follow(g: Globals, engine: Any, job_id: str) -> Any:
    import anyio

    from shadowcode.cli.render import event_line
    from shadowcode.engine.tasks import TaskRecords

    records = TaskRecords(engine.store)
    cursor = 0
    while True:
        events = records.events(job_id, after=cursor, limit=200)
        for event in events:
            cursor = event.id
            line = event_line(event.as_dict())
            if line and not g.json:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
        task = records.get(job_id)
        if not task.status.active and not events:
            return task
        await anyio.sleep(0.2)


def jobs(
    ctx: typer.Context,
    job_id: Annotated[str | None, typer.Argument(help="A job to show; omitted: list recent jobs.")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Stream the job's events until it finishes.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="Jobs to list.")] = 20,
) -> None:
    """List recent jobs, show one job's events, or follow it as it runs (ENG-08)."""
    import anyio

    from shadowcode.cli.render import event_line, job_line
    from shadowcode.engine.tasks import TaskRecords
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    with _engine(g) as engine:
        records = TaskRecords(engine.store)
        records.sweep_orphans()
        if job_id is None:
            if follow:
                raise UsageError("--follow needs a job id")
            found = [t.as_dict() for t in records.recent(limit)]
            emit(g, {"jobs": found}, "\n".join(job_line(j) for j in found) or "no jobs yet")
            return
        task = records.get(job_id).as_dict()
        if follow:
            final = anyio.run(_follow, g, engine, job_id)
            if g.json:
                emit(g, final.as_dict(), "")
            raise typer.Exit(0 if final.status == "done" else 1)
        events = [e.as_dict() for e in records.events(job_id, limit=1000)]
        lines = [job_line(task)] + [line for e in events if (line := event_line(e))]
        emit(g, {"job": task, "events": events}, "\n".join(lines))


def approvals(ctx: typer.Context) -> None:
    """List pending approvals: the exact action each one would allow (ENG-07)."""
    from shadowcode.engine.approvals import Approvals

    g = globals_of(ctx)
    with _engine(g) as engine:
        pending = [a.as_dict() for a in Approvals(engine.store).pending()]
    lines = [f"{a['id']}  {a['kind']:<10} job {a['task_id']}  {action_text(a['action'])}" for a in pending]
    emit(g, {"approvals": pending}, "\n".join(lines) or "no pending approvals")


def action_text(action: dict[str, Any]) -> str:
    """An approval's exact action in one line: argv and cwd, or server, tool and arguments."""
    import json

    if "argv" in action:
        return f"{' '.join(action['argv'])}  (in {action.get('cwd')})"
    arguments = json.dumps(action.get("arguments"), ensure_ascii=False, sort_keys=True)
    return f"MCP {action.get('server')} {action.get('tool')} {arguments}"


def _resolve(ctx: typer.Context, approval_id: str, decision: str) -> None:
    from shadowcode.engine.approvals import Approvals

    g = globals_of(ctx)
    with _engine(g) as engine:
        done = Approvals(engine.store).resolve(approval_id, decision, by="cli").as_dict()
    emit(g, done, f"{done['id']} {done['status']}: {action_text(done['action'])}")


def approve(ctx: typer.Context, approval_id: Annotated[str, typer.Argument(help="Exact approval id.")]) -> None:
    """Approve one exact pending action (ENG-07)."""
    _resolve(ctx, approval_id, "approve")


def deny(ctx: typer.Context, approval_id: Annotated[str, typer.Argument(help="Exact approval id.")]) -> None:
    """Deny one exact pending action (ENG-07)."""
    _resolve(ctx, approval_id, "deny")
