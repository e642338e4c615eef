"""Serving an MCP connection relayed into the headless engine (the attached fast path).

``mcp serve`` finds the profile's headless engine running and relays its stdin and stdout
bytes over a unix socket (:mod:`shadowcode.mcp.server.relay`); the engine serves that
connection here, with everything already imported. The same bounded transport as the
in-process path reads the socket, so SRV-25's limits hold exactly; the socket is the owner's
socket: its EOF, however the relay died, ends the session and cancels the owner's jobs
(SRV-21, SRV-22).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc

from shadowcode.engine.api import Access, Caller, Empty, EngineApi, McpAttach
from shadowcode.errors import ShadowcodeError
from shadowcode.mcp.server.app import build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.handover import Handover
from shadowcode.mcp.server.stdio import stdio_transport

__all__ = ["serve_attached"]

logger = logging.getLogger(__name__)


async def serve_attached(
    api: EngineApi, stream: anyio.abc.SocketStream, params: McpAttach, notice: Callable[[str], None]
) -> str:
    """Serve one relayed MCP session on ``stream`` until it ends; returns why it ended.

    Args:
        api: the headless engine, in this process.
        stream: the relay's socket, positioned after the attach reply.
        params: the relay's ``mcp/attach`` request: its project and flags.
        notice: records the transport's closing lines for the relay to print (SRV-25).
    """
    try:
        project = await api.project_get(Empty(), Caller(project=Path(params.project)))
    except ShadowcodeError as exc:
        return f"attach refused: {exc.message}"
    access = Access(params.allow_write, params.allow_approvals, params.approve_in_host)
    page = params.approval_page
    ctx = ServerContext(api=api, root=Path(project.path), access=access, owner_kind="relay", approval_page=page)
    server, direct = build_session(ctx)
    raw: socket.socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    read_fd = os.dup(raw.fileno())
    write_fd = os.dup(raw.fileno())
    for fd in (read_fd, write_fd):
        os.set_blocking(fd, False)
    handover = Handover(read_fd)
    reason = "relay closed"
    try:
        async with stdio_transport(read_fd, write_fd, notice=notice, direct=direct, handover=handover) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except Exception:  # noqa: BLE001 - one session's failure never stops the engine
        logger.exception("attached session failed")
        reason = "attached session failed"
    finally:
        handover.close()
        for fd in (read_fd, write_fd):
            os.close(fd)
        if ctx.owner is not None:
            with anyio.CancelScope(shield=True):
                await api.close_owner(ctx.owner, reason)
    return reason
