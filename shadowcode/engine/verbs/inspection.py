"""Handlers: inspection of the caller's project and of the records about it (SRV-05, SRV-13, SRV-18, SRV-19, SRV-20).

The project's inspection modules load with their first use. Work that reads the project (a
walk, git, a SQLite file) may block for longer than an
operation may last, so it runs through :func:`shadowcode.blocking.run_blocking`: never on the
event loop, and abandoned at the caller's deadline (SRV-25). None of it writes the project.
"""

from __future__ import annotations

import secrets
import sys
import time
from typing import Any

import anyio
from pydantic import JsonValue

from shadowcode.agent.tool_specs import TOOL_SPECS
from shadowcode.blocking import run_blocking
from shadowcode.engine.api import (
    Caller,
    Check,
    CheckpointDetail,
    CheckpointQuery,
    CheckpointRef,
    CheckpointSummary,
    Diagnostics,
    DoctorRequest,
    Empty,
    EngineApi,
    ProjectMap,
    Review,
    SavedMap,
    SessionQuery,
    SessionRecord,
    SqliteQuery,
    SqliteRows,
    SqliteTables,
    SqliteTablesRequest,
    ToolInfo,
    UnderstandRequest,
    WhyEntry,
    WhyQuery,
)
from shadowcode.engine.projects import Project
from shadowcode.engine.state import EngineState, require_write
from shadowcode.engine.verbs._registry import handles
from shadowcode.engine.wire import from_json
from shadowcode.errors import ShadowcodeError
from shadowcode.limits import OPERATION_DEADLINE_SECONDS

__all__ = ["MODEL_PROBE_PROMPT"]

MODEL_PROBE_PROMPT = "ShadowCode doctor: reply with one short sentence to show the model answers."
"""The one user message ``shadow_doctor`` sends with ``probe_model`` (SRV-19)."""


@handles(EngineApi.tool_list)
async def tool_list(state: EngineState, request: Empty, caller: Caller) -> list[ToolInfo]:
    return [ToolInfo(spec.name, spec.level, spec.summary) for spec in TOOL_SPECS]


@handles(EngineApi.review)
async def review(state: EngineState, request: Empty, caller: Caller) -> Review:
    from shadowcode.project.review import review as review_project

    root = state.project(caller).path
    found: Review = await run_blocking(review_project, root)
    return found


@handles(EngineApi.understand)
async def understand_project(state: EngineState, request: UnderstandRequest, caller: Caller) -> ProjectMap:
    project = state.project(caller)
    if request.save:
        require_write(project, caller.access, "saving the project map")
    from shadowcode.project.understand import build_map

    built = await run_blocking(build_map, project.path)
    if request.save:
        state.history.save_map(project.path, built["map"], int(time.time()))
    return ProjectMap(**built, saved=request.save)


@handles(EngineApi.doctor)
async def doctor(state: EngineState, request: DoctorRequest, caller: Caller) -> Diagnostics:
    project = state.project(caller)
    checks = [
        Check("python", "ok", sys.version.split()[0]),
        Check("profile", "ok", f"{state.profile.name} at {state.profile.root}"),
        _store_check(state),
        _trust_check(project),
        *await _model_checks(state, probe=request.probe_model),
    ]
    from shadowcode.project.doctor import project_checks

    checks += [from_json(Check, c) for c in await run_blocking(project_checks, project.path)]
    return Diagnostics(checks, all(c.status != "fail" for c in checks))


def _trust_check(project: Project) -> Check:
    if project.trusted:
        return Check("trust", "ok", f"trusted at level {project.level}")
    hint = f"run `shadowcode trust --level workspace {project.path}` to allow changes"
    return Check("trust", "warn", f"untrusted: {hint}")


def _store_check(state: EngineState) -> Check:
    try:
        todo = state.store.pending_migrations()
    except ShadowcodeError as exc:  # a diagnostic reports, it does not raise
        return Check("store", "fail", exc.message)
    if todo:
        return Check("store", "fail", f"pending migrations: {', '.join(todo)}")
    return Check("store", "ok", "schema current")


async def _model_checks(state: EngineState, *, probe: bool) -> list[Check]:
    """The configured models, and with ``probe`` one request to the default model and its outcome (SRV-19)."""
    try:
        settings = state.settings()
    except ShadowcodeError as exc:
        return [Check("models", "fail", exc.message)]
    if not settings.models:
        found = Check("models", "warn", "no model configured: delegated tasks need one in the profile settings")
        return [found, Check("model_probe", "warn", "no model to probe")] if probe else [found]
    default = settings.default_model or settings.models[0].name
    checks = [Check("models", "ok", f"{len(settings.models)} configured, default {default}")]
    if probe:
        chosen = next((m for m in settings.models if m.name == default), settings.models[0])
        checks.append(await _probe(state, chosen))
    return checks


async def _probe(state: EngineState, model: Any) -> Check:
    """Send exactly one small request to ``model`` and report what came back (never raises)."""
    messages = [{"role": "user", "content": MODEL_PROBE_PROMPT}]
    started = time.monotonic()
    try:
        with anyio.fail_after(OPERATION_DEADLINE_SECONDS):
            reply = await state.runner.provider(model).complete(messages, [], task_id="doctor_" + secrets.token_hex(4))
    except TimeoutError:
        return Check("model_probe", "fail", f"{model.name} did not answer within {OPERATION_DEADLINE_SECONDS:g} s")
    except ShadowcodeError as exc:
        return Check("model_probe", "fail", f"{model.name}: {exc.message}")
    took = time.monotonic() - started
    text = " ".join((reply.content or "").split())
    shown = text if len(text) <= 80 else text[:77] + "..."
    return Check("model_probe", "ok", f"{model.name} answered in {took:.1f} s: {shown or '(no text)'}")


@handles(EngineApi.sqlite_tables)
async def sqlite_tables(state: EngineState, request: SqliteTablesRequest, caller: Caller) -> SqliteTables:
    from shadowcode.project.sqlite_inspect import list_tables

    found: SqliteTables = await run_blocking(list_tables, state.project(caller).path, request.path)
    return found


@handles(EngineApi.sqlite_query)
async def sqlite_query(state: EngineState, request: SqliteQuery, caller: Caller) -> SqliteRows:
    from shadowcode.project.sqlite_inspect import run_query

    root = state.project(caller).path
    found: SqliteRows = await run_blocking(run_query, root, request.path, request.sql, request.params)
    return found


@handles(EngineApi.why)
async def why(state: EngineState, request: WhyQuery, caller: Caller) -> list[WhyEntry]:
    return state.history.why(state.project(caller).path, request.path, request.task_id)


@handles(EngineApi.sessions)
async def sessions(state: EngineState, request: SessionQuery, caller: Caller) -> list[SessionRecord]:
    return state.history.sessions(state.project(caller).path, request.limit)


@handles(EngineApi.checkpoints)
async def checkpoints(state: EngineState, request: CheckpointQuery, caller: Caller) -> list[CheckpointSummary]:
    return state.history.checkpoints(state.project(caller).path, request.task_id)


@handles(EngineApi.checkpoint)
async def checkpoint(state: EngineState, request: CheckpointRef, caller: Caller) -> CheckpointDetail:
    return state.history.checkpoint(state.project(caller).path, request.checkpoint_id)


@handles(EngineApi.plan)
async def plan(state: EngineState, request: Empty, caller: Caller) -> JsonValue:
    found: JsonValue = state.history.plan(state.project(caller).path)
    return found


@handles(EngineApi.saved_map)
async def saved_map(state: EngineState, request: Empty, caller: Caller) -> SavedMap | None:
    return state.history.saved_map(state.project(caller).path)

