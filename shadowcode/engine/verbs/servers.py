"""Handlers: external MCP server definitions and their per-project grants (CLI-01, CLI-02, CLI-03, CLI-05).

None of these starts a server or contacts anything: they read definition files and change
registrations and grants in the profile's store.
"""

from __future__ import annotations

from pathlib import Path

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    McpAdd,
    McpCatalog,
    McpEnable,
    McpGrantChange,
    McpRef,
    McpRemoval,
    McpRemove,
    McpServerInfo,
)
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles

__all__: list[str] = []


@handles(EngineApi.mcp_catalog)
async def mcp_catalog(state: EngineState, request: Empty, caller: Caller) -> McpCatalog:
    project = state.project(caller)
    return state.mcp_servers.catalog(project.path, trusted=project.trusted)


@handles(EngineApi.mcp_add)
async def mcp_add(state: EngineState, request: McpAdd, caller: Caller) -> McpServerInfo:
    definition = state.mcp_servers.add(Path(request.path), replace_hash=request.replace_hash)
    return definition.describe()


@handles(EngineApi.mcp_enable)
async def mcp_enable(state: EngineState, request: McpEnable, caller: Caller) -> McpGrantChange:
    project = state.project(caller)
    done = state.mcp_servers.enable(project.path, request.server_id, request.hash, trusted=project.trusted)
    return done


@handles(EngineApi.mcp_disable)
async def mcp_disable(state: EngineState, request: McpRef, caller: Caller) -> McpGrantChange:
    return state.mcp_servers.disable(state.project(caller).path, request.server_id)


@handles(EngineApi.mcp_remove)
async def mcp_remove(state: EngineState, request: McpRemove, caller: Caller) -> McpRemoval:
    return state.mcp_servers.remove(request.server_id, request.hash)
