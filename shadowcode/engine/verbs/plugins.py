"""Handlers: plugin bundles that contribute MCP servers (CW-12).

None of them starts or contacts anything: they read bundles and change the trusted snapshots
and grants in the profile's store (:mod:`shadowcode.engine.plugins`).
"""

from __future__ import annotations

from pathlib import Path

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    PluginChange,
    PluginList,
    PluginName,
    PluginPath,
    PluginReview,
    PluginTrust,
)
from shadowcode.engine.plugins import PluginRegistry
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles
from shadowcode.errors import PolicyError

__all__: list[str] = []


def _may_write(caller: Caller, what: str) -> None:
    if not caller.access.allow_write:
        raise PolicyError(f"{what} a plugin needs write access: this frontend is read-only")


@handles(EngineApi.plugin_review)
async def plugin_review(state: EngineState, request: PluginPath, caller: Caller) -> PluginReview:
    return PluginRegistry(state.store).review(Path(request.path))


@handles(EngineApi.plugin_trust)
async def plugin_trust(state: EngineState, request: PluginTrust, caller: Caller) -> PluginChange:
    _may_write(caller, "trusting")
    return PluginRegistry(state.store).trust(Path(request.path), request.digest)


@handles(EngineApi.plugin_enable)
async def plugin_enable(state: EngineState, request: PluginName, caller: Caller) -> PluginChange:
    _may_write(caller, "enabling")
    project = state.project(caller)
    return PluginRegistry(state.store).enable(project.path, request.name, trusted=project.trusted)


@handles(EngineApi.plugin_disable)
async def plugin_disable(state: EngineState, request: PluginName, caller: Caller) -> PluginChange:
    return PluginRegistry(state.store).disable(state.project(caller).path, request.name)


@handles(EngineApi.plugin_revoke)
async def plugin_revoke(state: EngineState, request: PluginName, caller: Caller) -> PluginChange:
    _may_write(caller, "revoking")
    return PluginRegistry(state.store).revoke(request.name)


@handles(EngineApi.plugin_list)
async def plugin_list(state: EngineState, request: Empty, caller: Caller) -> PluginList:
    project = state.project(caller).path if caller.project is not None else None
    return PluginList(
        project=None if project is None else str(project), plugins=PluginRegistry(state.store).list(project)
    )
