"""Handlers: the model providers configured in the profile (ENG-05)."""

from __future__ import annotations

from shadowcode.engine.api import Caller, Empty, EngineApi, ModelAdd, ModelList
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles

__all__: list[str] = []


@handles(EngineApi.model_list)
async def model_list(state: EngineState, request: Empty, caller: Caller) -> ModelList:
    settings = state.settings()
    return ModelList(list(settings.models), settings.default_model)


@handles(EngineApi.model_add)
async def model_add(state: EngineState, request: ModelAdd, caller: Caller) -> ModelList:
    settings = state.profile.save_model(request.model, make_default=request.make_default)
    return ModelList(list(settings.models), settings.default_model)
