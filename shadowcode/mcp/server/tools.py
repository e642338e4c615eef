"""The seventeen native tools: names, descriptions, schemas, annotations and handlers (SRV-04).

A handler takes the connection's :class:`ServerContext` and its validated input model and
returns a JSON object (``dict``): most take the verb's result as JSON, encoded once
(:meth:`~shadowcode.engine.api.EngineApi.call_as_json`); the dispatcher turns it into ``structuredContent`` plus one
text block, and a :class:`ShadowcodeError` into an ``isError`` result. Handlers are thin:
policy lives in the engine, inspection in ``shadowcode.project``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from shadowcode import __version__
from shadowcode.engine import api as m
from shadowcode.engine.wire import to_json
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.mcp.server.context import ServerContext

if TYPE_CHECKING:
    from pydantic import BaseModel

    from shadowcode.mcp.server import schemas as s

__all__ = ["ACTS", "CHANGES", "READS", "READS_OUTSIDE", "RECORDS", "SAVES", "TOOLS", "Hints", "ToolSpec", "tool_named"]

Handler = Callable[[ServerContext, Any], Awaitable[dict[str, Any]]]

_EMPTY = m.Empty()
_V = m.EngineApi
"""The verbs, named as declared (``_V.goal_get``) so a tool call can be followed to its verb."""


@dataclass(frozen=True)
class Hints:
    """A tool's annotation hints (SRV-04): what a client may assume before it calls it."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


READS: Final = Hints(read_only=True, idempotent=True)
"""Reads the project, profile or engine and changes nothing."""
READS_OUTSIDE: Final = Hints(read_only=True, idempotent=True, open_world=True)
"""Reads, and may contact a model provider when asked to."""
SAVES: Final = Hints(idempotent=True)
"""Changes nothing unless asked to save, and saving the same result again changes nothing more."""
RECORDS: Final = Hints()
"""Adds to the profile's own records (goals) without removing anything."""
CHANGES: Final = Hints(destructive=True)
"""May replace or remove what exists (notes, jobs, project files)."""
ACTS: Final = Hints(destructive=True, open_world=True)
"""Runs delegated work that may change the project and contact a model provider."""


@dataclass(frozen=True)
class ToolSpec:
    """One native tool as advertised and dispatched.

    Attributes:
        name: the tool name (``shadow_*``).
        description: what it does, for the client's model.
        input_model: the name of its input model in :mod:`shadowcode.mcp.server.schemas`
            (:attr:`input`); the models are pydantic's, imported on first use (issue 32).
        hints: the truthful annotation hints.
        handler: the coroutine that runs it.
    """

    name: str
    description: str
    input_model: str
    hints: Hints
    handler: Handler

    @property
    def input(self) -> type[BaseModel]:
        """The pydantic model whose JSON Schema is the tool's ``inputSchema`` and which validates its arguments."""
        model: type[BaseModel] = getattr(importlib.import_module("shadowcode.mcp.server.schemas"), self.input_model)
        return model

    @property
    def takes_no_arguments(self) -> bool:
        """Whether its input is :class:`~shadowcode.mcp.server.schemas.EmptyInput`: only ``{}`` is valid."""
        return self.input_model == "EmptyInput"


async def _status(ctx: ServerContext, _: s.EmptyInput | None) -> dict[str, Any]:
    status = await ctx.api.status(_EMPTY, ctx.caller())
    return {
        "version": __version__,
        "profile": status.profile,
        "engine": {"mode": ctx.engine_mode},
        "project": to_json(status.project),
        "server": {"allow_write": ctx.access.allow_write, "allow_approvals": ctx.access.allow_approvals},
        "models": {"configured": status.models_configured, "default": status.default_model},
    }


async def _models(ctx: ServerContext, _: s.EmptyInput | None) -> dict[str, Any]:
    listing = await ctx.api.model_list(_EMPTY, ctx.caller())
    models = [
        model.model_dump(exclude={"api_key_env"}) | {"has_api_key_env": bool(model.api_key_env)}
        for model in listing.models
    ]
    return {"models": models, "default": listing.default}


async def _sessions(ctx: ServerContext, args: s.SessionsInput) -> dict[str, Any]:
    return {"sessions": await ctx.api.call_as_json(_V.sessions, m.SessionQuery(args.limit), ctx.caller())}


async def _review(ctx: ServerContext, _: s.EmptyInput | None) -> dict[str, Any]:
    return await ctx.api.call_as_json(_V.review, _EMPTY, ctx.caller())


async def _tools(ctx: ServerContext, _: s.EmptyInput | None) -> dict[str, Any]:
    return {"tools": await ctx.api.call_as_json(_V.tool_list, _EMPTY, ctx.caller())}


async def _understand(ctx: ServerContext, args: s.UnderstandInput) -> dict[str, Any]:
    return await ctx.api.call_as_json(_V.understand, m.UnderstandRequest(save=args.save), ctx.caller())


async def _doctor(ctx: ServerContext, args: s.DoctorInput) -> dict[str, Any]:
    return await ctx.api.call_as_json(_V.doctor, m.DoctorRequest(probe_model=args.probe_model), ctx.caller())


async def _why(ctx: ServerContext, args: s.WhyInput) -> dict[str, Any]:
    return {"entries": await ctx.api.call_as_json(_V.why, m.WhyQuery(args.path, args.task_id), ctx.caller())}


async def _memory(ctx: ServerContext, args: s.MemoryInput) -> dict[str, Any]:
    api, caller = ctx.api, ctx.caller()
    match args.request():
        case m.MemoryRef() as read:
            return await api.call_as_json(_V.memory_read, read, caller)
        case m.MemoryAppend() as append:
            return await api.call_as_json(_V.memory_append, append, caller)
        case m.MemoryReplace() as replace:
            return await api.call_as_json(_V.memory_replace, replace, caller)


async def _sqlite(ctx: ServerContext, args: s.SqliteInput) -> dict[str, Any]:
    match args.request():
        case m.SqliteTablesRequest() as tables:
            return await ctx.api.call_as_json(_V.sqlite_tables, tables, ctx.caller())
        case m.SqliteQuery() as query:
            return await ctx.api.call_as_json(_V.sqlite_query, query, ctx.caller())


async def _goal(ctx: ServerContext, args: s.GoalInput) -> dict[str, Any]:
    api, caller = ctx.api, ctx.caller()
    match args.request():
        case m.Empty() as listing:
            return {"goals": await api.call_as_json(_V.goal_list, listing, caller)}
        case m.GoalRef() as ref:
            goal = await api.call_as_json(_V.goal_get, ref, caller)
        case m.GoalCreate() as create:
            goal = await api.call_as_json(_V.goal_create, create, caller)
        case m.GoalAdvance() as advance:
            goal = await api.call_as_json(_V.goal_advance, advance, caller)
        case m.GoalAbandon() as abandon:
            goal = await api.call_as_json(_V.goal_abandon, abandon, caller)
    return {"goal": goal}


async def _checkpoint(ctx: ServerContext, args: s.CheckpointInput) -> dict[str, Any]:
    api, caller = ctx.api, ctx.caller()
    if args.checkpoint_id:
        return {"checkpoint": await api.call_as_json(_V.checkpoint, m.CheckpointRef(args.checkpoint_id), caller)}
    return {"checkpoints": await api.call_as_json(_V.checkpoints, m.CheckpointQuery(args.task_id), caller)}


async def _run(ctx: ServerContext, args: s.RunInput) -> dict[str, Any]:
    request = m.TaskRequest(args.prompt, TaskMode(args.mode), PermissionLevel(args.permission_level), args.model)
    return await ctx.api.call_as_json(_V.task_submit, request, await ctx.owning_caller())


async def _jobs(ctx: ServerContext, args: s.JobsInput) -> dict[str, Any]:
    match args.request():
        case m.Empty() as listing:
            return {"jobs": await ctx.api.call_as_json(_V.jobs, listing, ctx.caller())}
        case m.JobRef() as cancel:
            return await ctx.api.call_as_json(_V.job_cancel, cancel, ctx.caller())
        case m.JobQuery() as query:
            return await ctx.api.call_as_json(_V.job, query, ctx.caller())


async def _approve(ctx: ServerContext, args: s.ApproveInput) -> dict[str, Any]:
    decision = m.ApprovalDecision(args.approval_id, args.decision)
    return {"approval": await ctx.api.call_as_json(_V.approval_resolve, decision, ctx.caller())}


async def _test(ctx: ServerContext, args: s.TestInput) -> dict[str, Any]:
    return await ctx.api.call_as_json(_V.test_submit, m.TestRequest(args.command), await ctx.owning_caller())


async def _rollback(ctx: ServerContext, args: s.RollbackInput) -> dict[str, Any]:
    return await ctx.api.call_as_json(_V.rollback, m.Rollback(args.task_id, args.confirm), ctx.caller())


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "shadow_status",
        "Show the fixed project, its trust and permission level, the profile, the engine "
        "and this server's write/approval flags.",
        "EmptyInput",
        READS,
        _status,
    ),
    ToolSpec(
        "shadow_models",
        "List the model providers configured in the profile and the default one (no secret values).",
        "EmptyInput",
        READS,
        _models,
    ),
    ToolSpec(
        "shadow_sessions",
        "List this project's task sessions, newest first.",
        "SessionsInput",
        READS,
        _sessions,
    ),
    ToolSpec(
        "shadow_review",
        "Summarize the project's uncommitted changes (git status and diff stats); changes nothing.",
        "EmptyInput",
        READS,
        _review,
    ),
    ToolSpec(
        "shadow_tools",
        "List the native tools a delegated task can use and the permission level each needs.",
        "EmptyInput",
        READS,
        _tools,
    ),
    ToolSpec(
        "shadow_understand",
        "Build a bounded map of the project: layout, languages, manifests, tests. "
        "Saves it as the project map only when save is true.",
        "UnderstandInput",
        SAVES,
        _understand,
    ),
    ToolSpec(
        "shadow_doctor",
        "Run diagnostics on the project, profile and engine. Never repairs; contacts a "
        "model only when probe_model is true.",
        "DoctorInput",
        READS_OUTSIDE,
        _doctor,
    ),
    ToolSpec(
        "shadow_why",
        "Show the recorded change history of a path or a task (empty when nothing was recorded).",
        "WhyInput",
        READS,
        _why,
    ),
    ToolSpec(
        "shadow_memory",
        "Read, append to, or replace the project note or a task's note. Replace needs "
        "the current hash; changes need write access.",
        "MemoryInput",
        CHANGES,
        _memory,
    ),
    ToolSpec(
        "shadow_sqlite",
        "List the tables of a SQLite database inside the project, or run one bounded "
        "read-only query with bound parameters (sees live WAL data).",
        "SqliteInput",
        READS,
        _sqlite,
    ),
    ToolSpec(
        "shadow_goal",
        "Create, list, inspect, advance or abandon durable project goals. Never starts a task.",
        "GoalInput",
        RECORDS,
        _goal,
    ),
    ToolSpec(
        "shadow_run",
        "Delegate a task to the engine for the fixed project; returns a job id at once (not a claim of completion).",
        "RunInput",
        ACTS,
        _run,
    ),
    ToolSpec(
        "shadow_jobs",
        "List this connection's jobs, inspect one (events, pending approvals) or cancel one.",
        "JobsInput",
        CHANGES,
        _jobs,
    ),
    ToolSpec(
        "shadow_approve",
        "Approve or deny one exact pending approval of a task this connection created.",
        "ApproveInput",
        ACTS,
        _approve,
    ),
    ToolSpec(
        "shadow_test",
        "Submit a test job that runs the project's test command (after exact approval) without a model.",
        "TestInput",
        ACTS,
        _test,
    ),
    ToolSpec(
        "shadow_checkpoint",
        "List the project's checkpoints, or inspect one (paths and content hashes).",
        "CheckpointInput",
        READS,
        _checkpoint,
    ),
    ToolSpec(
        "shadow_rollback",
        "Restore the files a task changed, after conflict checks; needs the exact task id and confirm: true.",
        "RollbackInput",
        CHANGES,
        _rollback,
    ),
)

_BY_NAME = {t.name: t for t in TOOLS}


def tool_named(name: str) -> ToolSpec | None:
    """The tool called ``name``, or None."""
    return _BY_NAME.get(name)
