"""The stdio transport in process over ``os.pipe`` pairs, and the client end that drives it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.mcp.server.app import build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import DirectToolCalls
from shadowcode.mcp.server.discovery import load_manifest
from shadowcode.mcp.server.lazy_start import LazyStart, serve_when_needed, session_calls
from shadowcode.mcp.server.stdio import StdioLimits, stdio_transport

__all__ = ["Peer", "count_direct_claims", "in_process_transport"]


class Peer:
    """The client end of an in-process transport: raw bytes in, lines out."""

    def __init__(self, write_fd: int, read_fd: int, finished: anyio.Event, lazy: LazyStart | None = None) -> None:
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.finished = finished
        self.lazy = lazy  # the SDK-free start, when the transport has one
        self.buffer = b""

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        with anyio.fail_after(5):
            while view:
                try:
                    view = view[os.write(self.write_fd, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(self.write_fd)

    async def line(self) -> dict[str, Any]:
        doc = await self.frame()
        assert isinstance(doc, dict) and doc["jsonrpc"] == "2.0", doc
        return cast("dict[str, Any]", doc)

    async def frame(self) -> object:
        """The next line the transport wrote, parsed: a message, or a batch's array."""
        with anyio.fail_after(5):
            while b"\n" not in self.buffer:
                try:
                    chunk = os.read(self.read_fd, 65536)
                except BlockingIOError:
                    await anyio.wait_readable(self.read_fd)
                    continue
                assert chunk, "the transport's stdout reached EOF"
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    async def closed_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self.finished.wait()
        return self.finished.is_set()


@asynccontextmanager
async def in_process_transport(
    api: LocalEngine, project_dir: Path, lim: StdioLimits | None = None, *, direct: bool = False, lazy: bool = False
) -> AsyncIterator[Peer]:
    """A served connection on pipes; with ``direct`` the transport answers tool calls itself (issue 15);
    with ``lazy`` it also serves what needs no SDK before the SDK's server runs, as ``mcp serve`` does (issue 32)."""
    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    for fd in (to_server_r, to_server_w, to_client_r, to_client_w):
        os.set_blocking(fd, False)
    ctx = ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access())
    finished = anyio.Event()
    if lazy:
        manifest = load_manifest()
        assert manifest is not None, "the recorded discovery answers are missing"
        calls, direct_calls, lazy_start = session_calls(ctx, manifest)

        async def serve() -> None:
            try:
                transport = stdio_transport(to_server_r, to_client_w, lim, direct=direct_calls, lazy=lazy_start)
                async with transport as (read_stream, write_stream):
                    await serve_when_needed(ctx, calls, lazy_start, read_stream, write_stream)
            finally:
                finished.set()

    else:
        lazy_start = None
        server, direct_calls = build_session(ctx)

        async def serve() -> None:
            try:
                transport = stdio_transport(to_server_r, to_client_w, lim, direct=direct_calls if direct else None)
                async with transport as (read_stream, write_stream):
                    await server.run(read_stream, write_stream, server.create_initialization_options())
            finally:
                finished.set()

    peer = Peer(to_server_w, to_client_r, finished, lazy_start)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            yield peer
            tg.cancel_scope.cancel()
    finally:
        for fd in (to_server_r, to_client_w, peer.write_fd, peer.read_fd):
            if fd >= 0:
                os.close(fd)


def count_direct_claims(monkeypatch: pytest.MonkeyPatch, method: str) -> list[object]:
    """The ids of the requests ``DirectToolCalls.<method>`` claims from now on (``take`` or ``take_stateless``)."""
    claimed: list[object] = []
    original = getattr(DirectToolCalls, method)

    def counted(self: DirectToolCalls, data: bytes) -> Any:
        taken = original(self, data)
        if taken is not None:
            claimed.append(taken[0])
        return taken

    monkeypatch.setattr(DirectToolCalls, method, counted)
    return claimed
