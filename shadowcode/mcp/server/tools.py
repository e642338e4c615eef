"""The seventeen native tools: names, descriptions, schemas, annotations and handlers (SRV-04).

A handler takes the connection's :class:`ServerContext` and its validated input model and
returns a JSON object (``dict``); the dispatcher turns it into ``structuredContent`` plus one
text block, and a :class:`ShadowcodeError` into an ``isError`` result. Handlers are thin:
policy lives in the engine, inspection in ``shadowcode.project``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from pydantic import BaseModel

from shadowcode import __version__
from shadowcode.engine import require_write
from shadowcode.errors import NotFound, PolicyError, ToolError
from shadowcode.mcp.server import schemas as s
from shadowcode.mcp.server.context import ServerContext

__all__ = ["TOOLS", "ToolSpec", "tool_named"]

Handler = Callable[[ServerContext, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ToolSpec:
    """One native tool as advertised and dispatched.

    Attributes:
        name: the tool name (``shadow_*``).
        description: what it does, for the client's model.
        input: the pydantic model whose JSON Schema is the tool's ``inputSchema``.
        read_only / destructive / idempotent / open_world: the truthful annotation hints.
        handler: the coroutine that runs it.
    """

    name: str
    description: str
    input: type[BaseModel]
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    handler: Handler


async def _status(ctx: ServerContext, _: s.EmptyInput) -> dict[str, Any]:
    settings = ctx.engine.settings()
    return {
        "version": __version__,
        "profile": ctx.engine.profile.name,
        "engine": {"mode": ctx.engine_mode},
        "project": ctx.project().as_dict(),
        "server": {"allow_write": ctx.access.allow_write, "allow_approvals": ctx.access.allow_approvals},
        "models": {"configured": len(settings.models), "default": settings.default_model},
    }


async def _models(ctx: ServerContext, _: s.EmptyInput) -> dict[str, Any]:
    settings = ctx.engine.settings()
    models = [m.model_dump(exclude={"api_key_env"}) | {"has_api_key_env": bool(m.api_key_env)} for m in settings.models]
    return {"models": models, "default": settings.default_model}


async def _sessions(ctx: ServerContext, args: s.SessionsInput) -> dict[str, Any]:
    return {"sessions": [s.as_dict() for s in ctx.engine.history.sessions(ctx.root, args.limit)]}


async def _review(ctx: ServerContext, _: s.EmptyInput) -> dict[str, Any]:
    from shadowcode.project.review import review

    return await anyio.to_thread.run_sync(review, ctx.root)


async def _tools(ctx: ServerContext, _: s.EmptyInput) -> dict[str, Any]:
    from shadowcode.engine.capabilities import native_tools

    return {"tools": native_tools()}


async def _understand(ctx: ServerContext, args: s.UnderstandInput) -> dict[str, Any]:
    from shadowcode.project.understand import build_map

    if args.save:
        require_write(ctx.project(), ctx.access, "saving the project map")
    result = dict(await anyio.to_thread.run_sync(build_map, ctx.root))
    result["saved"] = False
    if args.save:
        ctx.engine.history.save_map(ctx.root, str(result["map"]), int(time.time()))
        result["saved"] = True
    return result


async def _doctor(ctx: ServerContext, args: s.DoctorInput) -> dict[str, Any]:
    from shadowcode.engine.diagnostics import diagnose

    return await diagnose(ctx.engine, ctx.root, probe_model=args.probe_model)


async def _why(ctx: ServerContext, args: s.WhyInput) -> dict[str, Any]:
    return {"entries": [e.as_dict() for e in ctx.engine.history.why(ctx.root, args.path, args.task_id)]}


async def _memory(ctx: ServerContext, args: s.MemoryInput) -> dict[str, Any]:
    notes = ctx.engine.memory
    if args.action == "read":
        return notes.read(ctx.root, args.scope, args.task_id).as_dict()
    require_write(ctx.project(), ctx.access, f"{args.action} on a memory note")
    if args.text is None:
        raise ToolError(f"{args.action} needs text")
    if args.action == "append":
        return notes.append(ctx.root, args.text, args.scope, args.task_id).as_dict()
    if not args.expected_hash:
        raise ToolError("replace needs expected_hash: read the note first and pass its hash")
    return notes.replace(ctx.root, args.text, args.expected_hash, args.scope, args.task_id).as_dict()


async def _sqlite(ctx: ServerContext, args: s.SqliteInput) -> dict[str, Any]:
    from shadowcode.project import sqlite_inspect

    if args.action == "tables":
        return await anyio.to_thread.run_sync(sqlite_inspect.list_tables, ctx.root, args.path)
    if not args.sql:
        raise ToolError("action 'query' needs sql")
    return await anyio.to_thread.run_sync(sqlite_inspect.run_query, ctx.root, args.path, args.sql, args.params)


async def _goal(ctx: ServerContext, args: s.GoalInput) -> dict[str, Any]:
    goals = ctx.engine.goals
    if args.action == "list":
        return {"goals": [g.as_dict() for g in goals.list(ctx.root)]}
    if args.action == "get":
        return {"goal": goals.get(ctx.root, args.goal_id).as_dict()}
    require_write(ctx.project(), ctx.access, f"{args.action} on a goal")
    if args.action == "create":
        return {"goal": goals.create(ctx.root, args.title or "").as_dict()}
    if args.action == "advance":
        return {"goal": goals.advance(ctx.root, args.goal_id, args.note or "", done=args.done).as_dict()}
    return {"goal": goals.abandon(ctx.root, args.goal_id, args.note).as_dict()}


async def _checkpoint(ctx: ServerContext, args: s.CheckpointInput) -> dict[str, Any]:
    if args.checkpoint_id:
        return {"checkpoint": ctx.engine.history.checkpoint(ctx.root, args.checkpoint_id).as_dict()}
    return {"checkpoints": [c.as_dict() for c in ctx.engine.history.checkpoints(ctx.root, args.task_id)]}


async def _run(ctx: ServerContext, args: s.RunInput) -> dict[str, Any]:
    core = ctx.running_core()
    return await core.submit_task(
        owner=await ctx.ensure_owner(),
        project=ctx.project(),
        prompt=args.prompt,
        mode=args.mode,
        level=args.permission_level,
        model=args.model,
        access=ctx.access,
    )


async def _jobs(ctx: ServerContext, args: s.JobsInput) -> dict[str, Any]:
    core = ctx.running_core()
    if args.action == "list":
        return {"jobs": await core.jobs(ctx.owner) if ctx.owner else []}
    if not args.job_id:
        raise ToolError(f"action {args.action!r} needs job_id")
    if ctx.owner is None:
        raise NotFound(f"no job {args.job_id!r} created by this connection")
    if args.action == "cancel":
        return await core.cancel(args.job_id, owner=ctx.owner, project=ctx.root)
    cursor = int(args.cursor) if args.cursor and args.cursor.isdigit() else 0
    return await core.job(args.job_id, owner=ctx.owner, project=ctx.root, cursor=cursor)


async def _approve(ctx: ServerContext, args: s.ApproveInput) -> dict[str, Any]:
    core = ctx.running_core()
    if args.decision == "approve" and not (ctx.access.allow_write and ctx.access.allow_approvals):
        raise PolicyError(
            "approving needs a server started with --allow-write --allow-approvals; approve it with "
            f"`shadowcode approve {args.approval_id}` instead"
        )
    if ctx.owner is None:
        raise NotFound(f"no approval {args.approval_id!r} of a job this connection created")
    approval = await core.resolve_approval(args.approval_id, args.decision, owner=ctx.owner, by=f"mcp:{ctx.owner.id}")
    return {"approval": approval}


async def _test(ctx: ServerContext, args: s.TestInput) -> dict[str, Any]:
    core = ctx.running_core()
    return await core.submit_test(
        owner=await ctx.ensure_owner(), project=ctx.project(), command=args.command, access=ctx.access
    )


async def _rollback(ctx: ServerContext, args: s.RollbackInput) -> dict[str, Any]:
    core = ctx.running_core()
    return await core.rollback(args.task_id, project=ctx.project(), access=ctx.access, confirm=args.confirm)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "shadow_status",
        "Show the fixed project, its trust and permission level, the profile, the engine "
        "and this server's write/approval flags.",
        s.EmptyInput,
        True,
        False,
        True,
        False,
        _status,
    ),
    ToolSpec(
        "shadow_models",
        "List the model providers configured in the profile and the default one (no secret values).",
        s.EmptyInput,
        True,
        False,
        True,
        False,
        _models,
    ),
    ToolSpec(
        "shadow_sessions",
        "List this project's task sessions, newest first.",
        s.SessionsInput,
        True,
        False,
        True,
        False,
        _sessions,
    ),
    ToolSpec(
        "shadow_review",
        "Summarize the project's uncommitted changes (git status and diff stats); changes nothing.",
        s.EmptyInput,
        True,
        False,
        True,
        False,
        _review,
    ),
    ToolSpec(
        "shadow_tools",
        "List the native tools a delegated task can use and the permission level each needs.",
        s.EmptyInput,
        True,
        False,
        True,
        False,
        _tools,
    ),
    ToolSpec(
        "shadow_understand",
        "Build a bounded map of the project: layout, languages, manifests, tests. "
        "Saves it as the project map only when save is true.",
        s.UnderstandInput,
        False,
        False,
        True,
        False,
        _understand,
    ),
    ToolSpec(
        "shadow_doctor",
        "Run diagnostics on the project, profile and engine. Never repairs; contacts a "
        "model only when probe_model is true.",
        s.DoctorInput,
        True,
        False,
        True,
        True,
        _doctor,
    ),
    ToolSpec(
        "shadow_why",
        "Show the recorded change history of a path or a task (empty when nothing was recorded).",
        s.WhyInput,
        True,
        False,
        True,
        False,
        _why,
    ),
    ToolSpec(
        "shadow_memory",
        "Read, append to, or replace the project note or a task's note. Replace needs "
        "the current hash; changes need write access.",
        s.MemoryInput,
        False,
        True,
        False,
        False,
        _memory,
    ),
    ToolSpec(
        "shadow_sqlite",
        "List the tables of a SQLite database inside the project, or run one bounded "
        "read-only query with bound parameters (sees live WAL data).",
        s.SqliteInput,
        True,
        False,
        True,
        False,
        _sqlite,
    ),
    ToolSpec(
        "shadow_goal",
        "Create, list, inspect, advance or abandon durable project goals. Never starts a task.",
        s.GoalInput,
        False,
        False,
        False,
        False,
        _goal,
    ),
    ToolSpec(
        "shadow_run",
        "Delegate a task to the engine for the fixed project; returns a job id at once (not a claim of completion).",
        s.RunInput,
        False,
        True,
        False,
        True,
        _run,
    ),
    ToolSpec(
        "shadow_jobs",
        "List this connection's jobs, inspect one (events, pending approvals) or cancel one.",
        s.JobsInput,
        False,
        True,
        False,
        False,
        _jobs,
    ),
    ToolSpec(
        "shadow_approve",
        "Approve or deny one exact pending approval of a task this connection created.",
        s.ApproveInput,
        False,
        True,
        False,
        True,
        _approve,
    ),
    ToolSpec(
        "shadow_test",
        "Submit a test job that runs the project's test command (after exact approval) without a model.",
        s.TestInput,
        False,
        True,
        False,
        True,
        _test,
    ),
    ToolSpec(
        "shadow_checkpoint",
        "List the project's checkpoints, or inspect one (paths and content hashes).",
        s.CheckpointInput,
        True,
        False,
        True,
        False,
        _checkpoint,
    ),
    ToolSpec(
        "shadow_rollback",
        "Restore the files a task changed, after conflict checks; needs the exact task id and confirm: true.",
        s.RollbackInput,
        False,
        True,
        False,
        False,
        _rollback,
    ),
)

_BY_NAME = {t.name: t for t in TOOLS}


def tool_named(name: str) -> ToolSpec | None:
    """The tool called ``name``, or None."""
    return _BY_NAME.get(name)
