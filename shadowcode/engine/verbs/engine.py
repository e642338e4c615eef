"""Handlers: the engine itself and its background processes (ENG-03, SRV-23)."""

from __future__ import annotations

import os

from shadowcode.engine.api import (
    BackgroundProcess,
    BackgroundRef,
    BackgroundStopped,
    Caller,
    Empty,
    EngineApi,
    EngineStatus,
    EngineStopping,
)
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles
from shadowcode.engine.wire import from_json
from shadowcode.enums import EngineMode
from shadowcode.errors import ConfigError

__all__: list[str] = []


@handles(EngineApi.engine_status)
async def engine_status(state: EngineState, request: Empty, caller: Caller) -> EngineStatus:
    return EngineStatus(
        id=state.id,
        pid=os.getpid(),
        mode=state.mode,
        profile=state.profile.name,
        owners=len(state.owners.open),
        running_jobs=state.runner.running_jobs(),
        queued_jobs=state.runner.queued(),
    )


@handles(EngineApi.engine_stop)
async def engine_stop(state: EngineState, request: Empty, caller: Caller) -> EngineStopping:
    # The daemon stops once this answer is delivered (shadowcode.engine.daemon).
    if state.mode is not EngineMode.HEADLESS:
        raise ConfigError("this engine is a temporary one: it stops with the process that opened it")
    return EngineStopping()


@handles(EngineApi.background_list)
async def background_list(state: EngineState, request: Empty, caller: Caller) -> list[BackgroundProcess]:
    return from_json(list[BackgroundProcess], state.processes.list_background())


@handles(EngineApi.background_stop)
async def background_stop(state: EngineState, request: BackgroundRef, caller: Caller) -> BackgroundStopped:
    return from_json(BackgroundStopped, await state.processes.stop_background(request.id))
