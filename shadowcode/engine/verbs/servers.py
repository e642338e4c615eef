"""Handlers: external MCP server definitions, their per-project grants, and reports on them.

Covers CLI-01, CLI-02, CLI-03, CLI-05, CW-01, CW-03, CW-04, CW-08.

Only ``mcp_validate`` and ``mcp_server_tools`` start servers, each once, under its launch grant
and exactly as a Build task would (:mod:`shadowcode.engine.mcp.live_reports`). The others start
nothing and contact nothing: they read definition files and change registrations and grants
in the profile's store; ``mcp_doctor`` only looks (:mod:`shadowcode.engine.mcp.doctor`).
``mcp_sign_in`` / ``mcp_sign_in_wait`` sign in to an HTTP server and ``mcp_sign_out`` forgets
the sign-in (:mod:`shadowcode.engine.mcp.login`): only for the person's own command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    McpAdd,
    McpCatalog,
    McpDoctorReport,
    McpEnable,
    McpGrantChange,
    McpImport,
    McpImportReport,
    McpRef,
    McpRemoval,
    McpRemove,
    McpServerInfo,
    McpServerQuery,
    McpServerTools,
    McpSignedIn,
    McpSignedOut,
    McpSignIn,
    McpSignInRef,
    McpSignInStarted,
    McpValidate,
    McpValidation,
)
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles
from shadowcode.errors import PolicyError

__all__: list[str] = []


@handles(EngineApi.mcp_catalog)
async def mcp_catalog(state: EngineState, request: Empty, caller: Caller) -> McpCatalog:
    project = state.project(caller)
    return state.mcp_servers.catalog(project.path, trusted=project.trusted)


@handles(EngineApi.mcp_add)
async def mcp_add(state: EngineState, request: McpAdd, caller: Caller) -> McpServerInfo:
    definition = state.mcp_servers.add(Path(request.path), replace_hash=request.replace_hash)
    return cast(McpServerInfo, definition.describe())  # describe() builds this shape (mcp.client cannot import it)


@handles(EngineApi.mcp_import)
async def mcp_import(state: EngineState, request: McpImport, caller: Caller) -> McpImportReport:
    from shadowcode.engine.mcp.config_import import import_configs
    from shadowcode.project.paths import canonical_project

    if not caller.access.allow_write:
        raise PolicyError("importing MCP servers needs write access: this frontend is read-only")
    project = canonical_project(caller.project) if caller.project is not None else None
    return import_configs(state.mcp_servers, request, project)


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


def _may_start_servers(caller: Caller) -> None:
    """Starting a server is an external action: only a frontend allowed to write may ask for it."""
    if not caller.access.allow_write:
        raise PolicyError("starting MCP servers needs write access: this frontend is read-only")


@handles(EngineApi.mcp_server_tools)
async def mcp_server_tools(state: EngineState, request: McpServerQuery, caller: Caller) -> McpServerTools:
    from shadowcode.engine.mcp.live_reports import server_tools

    _may_start_servers(caller)
    return await server_tools(state.mcp_servers, state.project(caller), state.profile, request.server)


@handles(EngineApi.mcp_validate)
async def mcp_validate(state: EngineState, request: McpValidate, caller: Caller) -> McpValidation:
    from shadowcode.engine.mcp.live_reports import validate

    _may_start_servers(caller)
    return await validate(state.mcp_servers, state.project(caller), state.profile, request.server)


@handles(EngineApi.mcp_doctor)
async def mcp_doctor(state: EngineState, request: Empty, caller: Caller) -> McpDoctorReport:
    from shadowcode.engine.mcp.doctor import doctor

    return doctor(state.mcp_servers, state.project(caller), state.profile)


def _signs_in(caller: Caller) -> None:
    """A sign-in is the person's own act: only an unconfined frontend allowed to write may ask for it (CW-08)."""
    if caller.confined or not caller.access.allow_write:
        raise PolicyError("signing in to an MCP server is done with `shadowcode mcp login` at the command line")


@handles(EngineApi.mcp_sign_in)
async def mcp_sign_in(state: EngineState, request: McpSignIn, caller: Caller) -> McpSignInStarted:
    from shadowcode.engine.mcp.login import find_server

    _signs_in(caller)
    project = state.project(caller)
    server = find_server(state.mcp_servers.catalog(project.path, trusted=project.trusted), request.server)
    return await state.logins.start(state.profile, server, request)


@handles(EngineApi.mcp_sign_in_wait)
async def mcp_sign_in_wait(state: EngineState, request: McpSignInRef, caller: Caller) -> McpSignedIn:
    _signs_in(caller)
    return await state.logins.wait(request.sign_in)


@handles(EngineApi.mcp_sign_out)
async def mcp_sign_out(state: EngineState, request: McpServerQuery, caller: Caller) -> McpSignedOut:
    from shadowcode.engine.mcp.login import find_server, sign_out

    _signs_in(caller)
    project = state.project(caller)
    server = find_server(state.mcp_servers.catalog(project.path, trusted=project.trusted), request.server)
    return sign_out(state.profile, server)
