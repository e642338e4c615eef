"""The authenticated loopback Streamable HTTP gateway: an HTTP/1.1 front in front of the SDK.

Implements GW-03, GW-04, GW-05, GW-06, GW-07 and GW-08.

The SDK's Streamable HTTP support (stateless, JSON responses, no session id; the 2026-07-28
per-request revision and the legacy ``initialize`` revisions) answers MCP. In front of it this
module runs its own small HTTP/1.1 server, because the limits of GW-07 are about the
connection, not the application: uvicorn has no deadline for a request head (a client sending
one byte a second holds a connection for ever), and its ``limit_concurrency`` answers 503 for
connections and tasks alike. Owning the server gives each limit one place:

* at most ``connections_max`` connections are served; one more is answered 429 and closed;
* one request per connection, always answered with ``Connection: close``;
* the head must arrive within ``header_deadline_seconds`` of the accept and be at most
  ``header_max_bytes``; the body within ``body_deadline_seconds`` after the head, at most
  ``body_max_bytes`` whether declared by ``Content-Length`` or chunked (408, 413);
* at most ``requests_per_second_max`` requests in any one-second window (429);
* the response is written whole within ``request_deadline_seconds`` (else 504) and at most
  ``response_max_bytes`` of body (else 500) before any byte of it leaves.

Every request passes :func:`shadowcode.mcp.server.http_guard.guard_head` before the SDK
sees it, and the Authorization header is removed from what the SDK receives. A body the SDK
would take for a notification although it carries an ``id`` (null, a boolean, a fraction, an
object, an array) is answered 400 with stdio's invalid-request error instead
(:func:`shadowcode.mcp.server.jsonrpc.unusable_id_error`, GW-05), and so is a body that is a
JSON array: the gateway serves no batch (:func:`shadowcode.mcp.server.jsonrpc.batch_refusal`).

Each connection is an asyncio protocol (:mod:`shadowcode.mcp.server.http_connection`) that
parses with ``h11`` and times the head and body with ``loop.call_later``; only a request that
passed every check gets a task, in which the SDK's handler runs.

Once the body is in, a request runs to its end even if the client goes away: the SDK is never
told of a disconnect, so a tool call that has reached the engine is not cancelled by a closed
HTTP request (GW-08). The one exception is ``subscriptions/listen``, whose call is only its
stream: a client that goes away ends it.

Request-scoped SSE where needed (GW-05): an answer the SDK sends as ``text/event-stream`` is
written to the client as it comes, within the same response limits (its body bytes and the
request deadline; past either the stream is cut). ``subscriptions/listen`` always streams (the
SDK's rule; each stream ends gracefully after GATEWAY_LISTEN_SECONDS, inside the request
deadline, SRV-27), and a ``tools/call`` carrying a progress token from a client that accepts
``text/event-stream`` goes to a second SDK handler in SSE mode, so its
``notifications/progress`` reach it while it runs (SRV-28). Everything else is answered with
JSON, whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import h11

from shadowcode.json_values import json_object
from shadowcode.limits import GATEWAY_REQUEST_MAX_BYTES
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS, Answer, DirectToolCalls
from shadowcode.mcp.server.http_connection import GatewayConnection
from shadowcode.mcp.server.http_guard import (
    DEADLINE,
    FAILED,
    RESPONSE_TOO_LARGE,
    GatewayLimits,
    Refusal,
    RequestRate,
    refusal_headers,
    response_bytes,
)
from shadowcode.mcp.server.jsonrpc import batch_refusal, unusable_id_error

__all__ = ["GatewayServer", "build_mcp_app"]

logger = logging.getLogger(__name__)

_BACKLOG = 65536
"""The listen backlog, as anyio's ``create_tcp_listener`` sets it; ``create_server`` sets it again."""

ASGIApp = Callable[[dict[str, Any], Callable[[], Any], Callable[[dict[str, Any]], Any]], Any]


def build_mcp_app(server: Any, *, body_max_bytes: int = GATEWAY_REQUEST_MAX_BYTES, json_response: bool = True) -> Any:
    """The SDK's Streamable HTTP handler for ``server``: stateless, JSON responses (GW-05).

    Host and Origin checks are the gateway's (:func:`guard_head`), so the SDK's own DNS
    rebinding settings are off; its Content-Type and Accept checks still apply.

    Args:
        server: the SDK ``Server`` from :func:`shadowcode.mcp.server.app.build_server`.
        body_max_bytes: the SDK's own body bound, kept equal to the gateway's.
        json_response: False for the handler in SSE mode that serves calls whose progress is
            streamed (SRV-28).

    Returns:
        A ``StreamableHTTPSessionManager``; enter ``run()`` before serving requests through
        its ``handle_request``.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    return StreamableHTTPSessionManager(
        app=server,
        json_response=json_response,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=body_max_bytes,
    )


class GatewayServer:
    """Serves one ASGI app over HTTP/1.1 under the gateway's rules (GW-03, GW-04, GW-05, GW-07, GW-08).

    Each accepted connection is a :class:`GatewayConnection`; a complete, accepted request runs
    in its own task in the server's task group.

    Args:
        app: the ASGI application that answers accepted requests (the SDK's handler).
        token: the bearer token every request must carry.
        bound_host: the IP literal the listener is bound to.
        port: the port the listener is bound to (the real one, after a bind to port 0).
        limits: the limits; defaults are the contract's.
        clock: monotonic seconds for the request-rate window.
        direct: answers a plain handshake-era ``tools/call`` without the app, as the app would
            (:mod:`shadowcode.mcp.server.direct_calls`); every other request goes to the app.
        stream_app: the app in SSE mode, for a ``tools/call`` with a progress token from a
            client that accepts an event stream (SRV-28); None: such calls go to ``app``.

    Attributes:
        connections: connections holding a slot now (at most ``limits.connections_max``).
        stopping: True once :meth:`serve` is ending; connections accepted from then on are aborted.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: bytes,
        bound_host: str,
        port: int,
        limits: GatewayLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        direct: DirectToolCalls | None = None,
        stream_app: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.stream_app = stream_app
        self.direct = direct
        self.token = token
        self.bound_host = bound_host
        self.port = port
        self.limits = limits or GatewayLimits()
        self.rate = RequestRate(self.limits.requests_per_second_max, clock)
        self.connections = 0
        self.stopping = False
        self._open: set[GatewayConnection] = set()
        self._all_closed: anyio.Event | None = None
        self._calls: anyio.abc.TaskGroup | None = None

    async def serve(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        """Serve connections on the sockets of ``listener`` (one, or a ``MultiListener``'s) until cancelled.

        When cancelled, the sockets stop listening and are closed, every open connection is
        aborted, every running call is cancelled and awaited, and this returns once every
        connection's socket is closed (waiting at most ``limits.linger_seconds`` for that).
        Runs on the asyncio backend only.
        """
        loop = asyncio.get_running_loop()
        raw = [one.extra(anyio.abc.SocketAttribute.raw_socket) for one in getattr(listener, "listeners", [listener])]
        servers: list[asyncio.Server] = []
        try:
            async with anyio.create_task_group() as calls:
                self._calls = calls
                try:
                    for sock in raw:
                        servers.append(await loop.create_server(self._connect, sock=sock, backlog=_BACKLOG))
                    await anyio.sleep_forever()
                finally:
                    self.stopping = True
                    for server in servers:
                        server.close()
                    for conn in list(self._open):
                        conn.abort()
        finally:
            self.stopping = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.limits.linger_seconds):
                await anyio.sleep(0)  # accepts already under way create their connections (then abort them)
                while self._open:
                    self._all_closed = anyio.Event()
                    await self._all_closed.wait()

    def forget(self, conn: GatewayConnection) -> None:
        """Drop ``conn``, whose socket is closed, from the open connections."""
        self._open.discard(conn)
        if not self._open and self._all_closed is not None:
            self._all_closed.set()

    def start_call(
        self, conn: GatewayConnection, request: h11.Request, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Run an accepted request in the server's task group; its answer goes back to ``conn`` (GW-07, GW-08)."""
        assert self._calls is not None, "start_call outside serve()"
        self._calls.start_soon(self._answer, conn, request, headers, body)

    def _connect(self) -> GatewayConnection:
        conn = GatewayConnection(self)
        self._open.add(conn)
        return conn

    async def _answer(
        self, conn: GatewayConnection, request: h11.Request, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        answer: bytes | None = None
        streamed = False
        try:
            error = batch_refusal(body) or unusable_id_error(body)
            if error is not None:  # the SDK would take it for a notification; stdio refuses it too (GW-05)
                payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
                answer = response_bytes(400, [(b"content-type", b"application/json")], payload)
                return
            direct = self.direct
            taken = direct.take_stateless(body) if direct is not None and _direct_request(request, headers) else None
            if taken is not None:
                whole = await self._call_app(conn, {}, body, _direct_app(taken[1]))
            else:
                scope = self._scope(request, [(n, v) for n, v in headers if n != b"authorization"])
                method, progress = _method_and_progress(body)
                app = self.app
                if progress and self.stream_app is not None and _accepts_event_stream(headers):
                    app = self.stream_app
                whole = await self._call_app(conn, scope, body, app, listen=method == "subscriptions/listen")
            if whole is None:
                streamed = True
                return
            answer = response_bytes(*whole)
        finally:
            if streamed:
                conn.stream_ended()
            else:
                conn.answered(answer)

    def _scope(self, request: h11.Request, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
        path = bytes(request.target)
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.http_version.decode("ascii"),
            "method": request.method.decode("ascii"),
            "scheme": "http",
            "path": path.decode("ascii"),
            "raw_path": path,
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": None,  # loopback only; the handler never needs the peer's port
            "server": (self.bound_host, self.port),
            "state": {},
        }

    async def _call_app(
        self, conn: GatewayConnection, scope: dict[str, Any], body: bytes, app: ASGIApp, *, listen: bool = False
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """Run ``app`` with the request (GW-07, GW-08).

        Returns:
            The whole response, or a fixed refusal; None when the answer was an event stream,
            already written to ``conn`` as it came (within the same byte and time bounds: past
            either the stream is cut).
        """
        delivered = False
        finished = anyio.Event()
        start: dict[str, Any] = {}
        chunks = bytearray()
        limit = self.limits.response_max_bytes
        too_large = False
        complete = False
        streaming = False
        streamed_bytes = 0

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            if listen:  # a listen call is only its stream: a client that went away ends it
                conn.watch_peer()
                async with anyio.create_task_group() as tg:

                    async def wait_gone() -> None:
                        await conn.gone.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(wait_gone)
                    await finished.wait()
                    tg.cancel_scope.cancel()
            else:
                await finished.wait()  # never report a disconnect: a started call runs to its end (GW-08)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal too_large, complete, streaming, streamed_bytes
            if message["type"] == "http.response.start":
                start.update(message)
                if _is_event_stream(message.get("headers", [])):
                    streaming = True
                    conn.stream(_stream_head(int(message["status"]), message.get("headers", [])))
            elif message["type"] == "http.response.body" and not complete:
                data = message.get("body", b"")
                if streaming and not too_large:
                    streamed_bytes += len(data)
                    if streamed_bytes > limit:
                        too_large = True
                        cut.cancel()  # nothing more can be sent: the stream ends here
                    else:
                        conn.stream(data)
                elif not too_large:
                    chunks.extend(data)
                    if len(chunks) > limit:
                        too_large = True
                        chunks.clear()
                if not message.get("more_body", False):
                    complete = True
                    finished.set()

        outcome: Refusal | None = None
        with anyio.move_on_after(self.limits.request_deadline_seconds) as cut:
            try:
                await app(scope, receive, send)
            except Exception:
                logger.exception("the MCP handler failed")
                outcome = FAILED
        finished.set()
        if streaming:
            if too_large:
                sys.stderr.write(f"shadowcode gateway: an event stream was cut at {limit} bytes\n")
            elif not complete:
                sys.stderr.write("shadowcode gateway: an event stream passed its deadline and was cut\n")
            return None
        if too_large:
            sys.stderr.write(f"shadowcode gateway: a response was over {limit} bytes\n")
            outcome = RESPONSE_TOO_LARGE
        elif outcome is None and not (start and complete):
            sys.stderr.write("shadowcode gateway: a request passed its deadline\n")
            outcome = DEADLINE
        if outcome is not None:
            return outcome.status, refusal_headers(outcome), outcome.body.encode()
        headers = [
            (bytes(n).lower(), bytes(v))
            for n, v in start.get("headers", [])
            if bytes(n).lower() not in (b"connection", b"content-length", b"transfer-encoding")
        ]
        return int(start["status"]), headers, bytes(chunks)


def _direct_app(answer: Answer) -> ASGIApp:
    """An app that answers with the direct path's response, as the SDK answers on its JSON path (GW-05)."""

    async def app(_scope: dict[str, Any], _receive: Callable[[], Any], send: Callable[[dict[str, Any]], Any]) -> None:
        payload = await answer(None)
        assert payload is not None  # only a call cancelled by its client goes unanswered, and HTTP never cancels
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload.removesuffix(b"\n"), "more_body": False})

    return app


def _method_and_progress(body: bytes) -> tuple[str | None, bool]:
    """The request's method and whether its ``params._meta`` carries a progress token (a cheap look)."""
    if b'"subscriptions/listen"' not in body and b'"progressToken"' not in body:
        return None, False
    try:
        doc = json_object(json.loads(body))
    except (ValueError, RecursionError):
        return None, False
    if doc is None:
        return None, False
    method = doc.get("method")
    params = json_object(doc.get("params"))
    meta = json_object(params.get("_meta")) if params is not None else None
    token = meta.get("progressToken") if meta is not None else None
    return (method if isinstance(method, str) else None), token is not None and method == "tools/call"


def _accepts_event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    accept = _one_header(headers, b"accept")
    if accept is None:
        return False
    return "text/event-stream" in {part.strip().split(";")[0].strip().lower() for part in accept.split(",")}


def _is_event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if bytes(name).lower() == b"content-type":
            return bytes(value).split(b";")[0].strip().lower() == b"text/event-stream"
    return False


def _stream_head(status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The head of a streamed answer: the app's headers, no length, ``Connection: close`` (the close ends the body)."""
    kept = [
        (bytes(n).lower(), bytes(v))
        for n, v in headers
        if bytes(n).lower() not in (b"connection", b"content-length", b"transfer-encoding")
    ]
    whole = response_bytes(status, kept, b"")
    head, _, _ = whole.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.startswith(b"content-length:")]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _one_header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    values = [value for key, value in headers if key == name]
    return values[0].decode("latin-1") if len(values) == 1 else None


def _direct_request(request: h11.Request, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the SDK would serve ``request`` on its stateless handshake-era JSON path (GW-05).

    That is a POST with one ``MCP-Protocol-Version`` header naming a handshake-era revision,
    an ``Accept`` that takes JSON and a JSON ``Content-Type``, each checked as the SDK checks it;
    the body is :meth:`DirectToolCalls.take_stateless`'s to judge.
    """
    if request.method != b"POST":
        return False
    revision = _one_header(headers, b"mcp-protocol-version")
    accept = _one_header(headers, b"accept")
    content_type = _one_header(headers, b"content-type")
    if revision not in HANDSHAKE_REVISIONS or accept is None or content_type is None:
        return False
    accepted = {part.strip().split(";")[0].strip().lower() for part in accept.split(",")}
    if not accepted & {"*/*", "application/*", "application/json"}:
        return False
    return "application/json" in (part.strip() for part in content_type.split(";")[0].split(","))
