"""Handlers: project and task notes, durable goals (SRV-08, SRV-12, SRV-14).

Reads need nothing; every change needs write access (SRV-09). Notes and goals belong to the
caller's canonical project: another project's task or goal is not found (SRV-08).
"""

from __future__ import annotations

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    GoalAbandon,
    GoalAdvance,
    GoalCreate,
    GoalRecord,
    GoalRef,
    GoalSummary,
    MemoryAppend,
    MemoryNote,
    MemoryRef,
    MemoryReplace,
)
from shadowcode.engine.state import EngineState, require_write
from shadowcode.engine.verbs._registry import handles

__all__: list[str] = []


@handles(EngineApi.memory_read)
async def memory_read(state: EngineState, request: MemoryRef, caller: Caller) -> MemoryNote:
    return state.memory.read(state.project(caller).path, request.scope, request.task_id)


@handles(EngineApi.memory_append)
async def memory_append(state: EngineState, request: MemoryAppend, caller: Caller) -> MemoryNote:
    project = state.project(caller)
    require_write(project, caller.access, "append on a memory note")
    return state.memory.append(project.path, request.text, request.scope, request.task_id)


@handles(EngineApi.memory_replace)
async def memory_replace(state: EngineState, request: MemoryReplace, caller: Caller) -> MemoryNote:
    project = state.project(caller)
    require_write(project, caller.access, "replace on a memory note")
    return state.memory.replace(project.path, request.text, request.expected_hash, request.scope, request.task_id)


@handles(EngineApi.goal_list)
async def goal_list(state: EngineState, request: Empty, caller: Caller) -> list[GoalSummary]:
    return state.goals.list(state.project(caller).path)


@handles(EngineApi.goal_get)
async def goal_get(state: EngineState, request: GoalRef, caller: Caller) -> GoalRecord:
    return state.goals.get(state.project(caller).path, request.goal_id)


@handles(EngineApi.goal_create)
async def goal_create(state: EngineState, request: GoalCreate, caller: Caller) -> GoalRecord:
    project = state.project(caller)
    require_write(project, caller.access, "create on a goal")
    return state.goals.create(project.path, request.title)


@handles(EngineApi.goal_advance)
async def goal_advance(state: EngineState, request: GoalAdvance, caller: Caller) -> GoalRecord:
    project = state.project(caller)
    require_write(project, caller.access, "advance on a goal")
    return state.goals.advance(project.path, request.goal_id, request.note, done=request.done)


@handles(EngineApi.goal_abandon)
async def goal_abandon(state: EngineState, request: GoalAbandon, caller: Caller) -> GoalRecord:
    project = state.project(caller)
    require_write(project, caller.access, "abandon on a goal")
    return state.goals.abandon(project.path, request.goal_id, request.note)
