"""A raw JSON-RPC client over memory streams to one in-process server, for frames the SDK client cannot send.

Requests carry exactly the ``params`` (and ``_meta``) a test gives; every frame the server
writes is kept, notifications included, in arrival order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

__all__ = ["MODERN", "Wire", "modern_meta", "serve_wire"]

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


def modern_meta(*, tasks: bool = True, **extra: Any) -> dict[str, Any]:
    """The 2026-07-28 ``_meta`` envelope; with ``tasks`` it declares the Tasks extension."""
    capabilities: dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        **extra,
    }


class Wire:
    """Sends requests and notifications; reads frames (each wait bounded)."""

    def __init__(self, send: Any, receive: Any) -> None:
        self._send = send
        self._receive = receive
        self.frames: list[dict[str, Any]] = []
        self._next_id = 0

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._send.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=method, params=params)))

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send one request; returns its id."""
        self._next_id += 1
        message = types.JSONRPCRequest(jsonrpc="2.0", id=self._next_id, method=method, params=params)
        await self._send.send(SessionMessage(message))
        return self._next_id

    async def frame(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next frame the server writes."""
        with anyio.fail_after(timeout):
            item = await self._receive.receive()
        doc = item.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        self.frames.append(doc)
        return doc

    async def answer(self, request_id: int, timeout: float = 10.0) -> dict[str, Any]:
        """Frames until the answer to ``request_id``; returns that answer (``result`` or ``error`` member)."""
        with anyio.fail_after(timeout):
            while True:
                doc = await self.frame(timeout)
                if doc.get("id") == request_id and ("result" in doc or "error" in doc):
                    return doc

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 10.0) -> dict[str, Any]:
        """One request and its answer."""
        return await self.answer(await self.send(method, params), timeout)

    async def handshake(self, revision: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> None:
        """``initialize`` at ``revision``, then ``notifications/initialized``."""
        client = {"name": "wire", "version": "1"}
        await self.call(
            "initialize", {"protocolVersion": revision, "capabilities": capabilities or {}, "clientInfo": client}
        )
        await self.notify("notifications/initialized")

    def notifications(self, method: str) -> list[dict[str, Any]]:
        """Notifications of ``method`` read so far."""
        return [f for f in self.frames if f.get("method") == method and "id" not in f]


@asynccontextmanager
async def serve_wire(server: Server[Any]) -> AsyncIterator[Wire]:
    """Run ``server`` over memory streams for the duration; yields the client side."""
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](256)
    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(server.run, server_reads, server_writes, server.create_initialization_options())
        try:
            yield Wire(to_server, from_server)
        finally:
            tg.cancel_scope.cancel()
    server_reads.close()
    server_writes.close()
