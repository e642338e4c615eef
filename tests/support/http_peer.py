"""A small hostile HTTP/1.1 MCP peer on 127.0.0.1 for the Streamable HTTP client tests.

Requests are parsed with h11; replies are raw bytes the test controls exactly. Every reply
closes its TCP connection, so one request is one connection. By default the peer is a legacy
(2025) Streamable HTTP server with a session id and one ``echo`` tool; a test replaces the
answer of any JSON-RPC method, or of ``GET`` / ``DELETE``, through :attr:`Peer.routes`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import h11

__all__ = ["ECHO_TOOL", "Peer", "Received", "http_head", "json_reply", "peer", "result", "sse_reply"]

Handler = Callable[["Received", anyio.abc.SocketStream], Awaitable[None]]

ECHO_TOOL = {
    "name": "echo",
    "description": "Echo text back",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


@dataclass
class Received:
    """One request as the peer saw it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def message(self) -> dict[str, Any]:
        """The JSON-RPC message of a POST (``{}`` for other methods)."""
        return json.loads(self.body) if self.method == "POST" and self.body else {}

    @property
    def rpc(self) -> str:
        """The JSON-RPC method, or ``""``."""
        return str(self.message.get("method", ""))


def http_head(status: int, headers: dict[str, str] | None = None, *, reason: str = "X") -> bytes:
    """A status line and header block (``connection: close`` added)."""
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join([*lines, "connection: close"]) + "\r\n\r\n").encode("utf-8")


def json_reply(status: int, doc: Any, headers: dict[str, str] | None = None) -> bytes:
    """A complete JSON reply."""
    body = json.dumps(doc).encode("utf-8")
    head = {"content-type": "application/json", "content-length": str(len(body)), **(headers or {})}
    return http_head(status, head) + body


def sse_reply(events: list[dict[str, Any]], headers: dict[str, str] | None = None) -> bytes:
    """A complete SSE reply (no content-length: ends with the connection)."""
    body = b"".join(b"event: message\ndata: " + json.dumps(e).encode("utf-8") + b"\n\n" for e in events)
    return http_head(200, {"content-type": "text/event-stream", **(headers or {})}) + body


def result(req: Received, value: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result answering ``req``."""
    return {"jsonrpc": "2.0", "id": req.message["id"], "result": value}


@dataclass
class Peer:
    """The running peer: its URL, what it received, and its routes."""

    port: int = 0
    host: str = "127.0.0.1"
    session: str | None = "session-1"
    received: list[Received] = field(default_factory=list)
    routes: dict[str, Handler] = field(default_factory=dict)
    deleted: anyio.Event = field(default_factory=anyio.Event)

    @property
    def url(self) -> str:
        """``http://<host>:<port>/mcp`` (host 127.0.0.1 unless another loopback address was asked for)."""
        return f"http://{self.host}:{self.port}/mcp"

    def calls(self, rpc: str) -> list[Received]:
        """Requests received for JSON-RPC method ``rpc``."""
        return [r for r in self.received if r.rpc == rpc]

    async def answer(self, req: Received, stream: anyio.abc.SocketStream) -> None:
        """The default legacy behaviour."""
        session = {"mcp-session-id": self.session} if self.session else {}
        if req.method in self.routes:
            await self.routes[req.method](req, stream)
            return
        if req.method == "DELETE":
            self.deleted.set()
            await stream.send(http_head(200))
            return
        if req.method == "GET":
            await stream.send(http_head(405))
            return
        message = req.message
        handler = self.routes.get(req.rpc)
        if handler is not None:
            await handler(req, stream)
        elif "id" not in message:
            await stream.send(http_head(202))
        elif req.rpc == "server/discover":
            error = {"code": -32600, "message": "Bad Request: missing session"}
            await stream.send(json_reply(400, {"jsonrpc": "2.0", "id": None, "error": error}))
        elif req.rpc == "initialize":
            info = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}}
            info["serverInfo"] = {"name": "peer", "version": "1"}
            await stream.send(json_reply(200, result(req, info), session))
        elif req.rpc == "tools/list":
            await stream.send(json_reply(200, result(req, {"tools": [ECHO_TOOL]})))
        elif req.rpc == "tools/call":
            text = message["params"]["arguments"].get("text", "")
            doc = {"content": [{"type": "text", "text": text}], "structuredContent": {"text": text}}
            await stream.send(sse_reply([result(req, doc)]))
        else:
            await stream.send(json_reply(200, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601}}))


async def _serve_one(p: Peer, stream: anyio.abc.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    head: h11.Request | None = None
    body = bytearray()
    async with stream:
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive())
                    continue
                if isinstance(event, h11.Request):
                    head = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return
            assert head is not None
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in head.headers}
            req = Received(head.method.decode("ascii"), head.target.decode("latin-1"), headers, bytes(body))
            p.received.append(req)
            await p.answer(req, stream)


@asynccontextmanager
async def peer(host: str = "127.0.0.1") -> AsyncIterator[Peer]:
    """Run a :class:`Peer` on ``host`` (a loopback address, 127.0.0.1 by default) for the block."""
    p = Peer(host=host)
    listener = await anyio.create_tcp_listener(local_host=host, local_port=0)
    p.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, lambda s: _serve_one(p, s))
        try:
            yield p
        finally:
            tg.cancel_scope.cancel()
