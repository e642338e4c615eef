"""The authenticated loopback Streamable HTTP gateway: an HTTP/1.1 front in front of the SDK (GW-03..GW-07).

The SDK's Streamable HTTP support (stateless, JSON responses, no session id; the 2026-07-28
per-request revision and the legacy ``initialize`` revisions) answers MCP. In front of it this
module runs its own small HTTP/1.1 server on anyio with ``h11`` as the parser, because the
limits of GW-07 are about the connection, not the application: uvicorn has no deadline for
a request head (a client sending one byte a second holds a connection for ever), and its
``limit_concurrency`` answers 503 for connections and tasks alike. Owning the accept loop
gives each limit one place:

* at most ``connections_max`` connections are served; one more is answered 429 and closed;
* one request per connection, always answered with ``Connection: close``;
* the head must arrive within ``header_deadline_seconds`` of the accept and be at most
  ``header_max_bytes``; the body within ``body_deadline_seconds`` after the head, at most
  ``body_max_bytes`` whether declared by ``Content-Length`` or chunked (408, 413);
* at most ``requests_per_second_max`` requests in any one-second window (429);
* the response is written whole within ``request_deadline_seconds`` (else 504) and at most
  ``response_max_bytes`` of body (else 500) before any byte of it leaves.

Every request passes :func:`shadowcode.mcp.server.http_guard.guard_head` before the SDK
sees it, and the Authorization header is removed from what the SDK receives.

Once the body is in, a request runs to its end even if the client goes away: the SDK is never
told of a disconnect, so a tool call that has reached the engine is not cancelled by a closed
HTTP request (GW-08).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import h11

from shadowcode.limits import GATEWAY_REQUEST_MAX_BYTES
from shadowcode.mcp.server.http_guard import (
    BAD_REQUEST,
    BUSY,
    DEADLINE,
    FAILED,
    HEAD_TOO_LARGE,
    RESPONSE_TOO_LARGE,
    TIMED_OUT,
    TOO_LARGE,
    GatewayLimits,
    Refusal,
    RequestRate,
    guard_head,
    refusal_bytes,
    refusal_headers,
    response_bytes,
)

__all__ = ["GatewayServer", "build_mcp_app"]

logger = logging.getLogger(__name__)

_READ_CHUNK_BYTES = 64 * 1024

ASGIApp = Callable[[dict[str, Any], Callable[[], Any], Callable[[dict[str, Any]], Any]], Any]


def build_mcp_app(server: Any, *, body_max_bytes: int = GATEWAY_REQUEST_MAX_BYTES) -> Any:
    """The SDK's Streamable HTTP handler for ``server``: stateless, JSON responses (GW-05).

    Host and Origin checks are the gateway's (:func:`guard_head`), so the SDK's own DNS
    rebinding settings are off; its Content-Type and Accept checks still apply.

    Args:
        server: the SDK ``Server`` from :func:`shadowcode.mcp.server.app.build_server`.
        body_max_bytes: the SDK's own body bound, kept equal to the gateway's.

    Returns:
        A ``StreamableHTTPSessionManager``; enter ``run()`` before serving requests through
        its ``handle_request``.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    return StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=body_max_bytes,
    )


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.status)
        self.refusal = refusal


class GatewayServer:
    """Serves one ASGI app over HTTP/1.1 on a bound listener under the gateway's rules (GW-03..GW-07).

    Args:
        app: the ASGI application that answers accepted requests (the SDK's handler).
        token: the bearer token every request must carry.
        bound_host: the IP literal the listener is bound to.
        port: the port the listener is bound to (the real one, after a bind to port 0).
        limits: the limits; defaults are the contract's.
        clock: monotonic seconds for the request-rate window.
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
    ) -> None:
        self.app = app
        self.token = token
        self.bound_host = bound_host
        self.port = port
        self.limits = limits or GatewayLimits()
        self.rate = RequestRate(self.limits.requests_per_second_max, clock)
        self.connections = 0

    async def serve(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        """Accept connections until cancelled; each is handled in its own task.

        A connection accepted but not yet handled when the gateway stops is closed here,
        so no socket outlives the server.
        """
        accepted: set[anyio.abc.SocketStream] = set()

        async def handle(stream: anyio.abc.SocketStream) -> None:
            try:
                await self.handle(stream)
            finally:
                accepted.discard(stream)

        async def accept_from(one: Any, tg: anyio.abc.TaskGroup) -> None:
            while True:
                stream = await one.accept()
                accepted.add(stream)
                tg.start_soon(handle, stream)

        try:
            async with anyio.create_task_group() as tg:
                for one in getattr(listener, "listeners", [listener]):
                    tg.start_soon(accept_from, one, tg)
        finally:
            with anyio.CancelScope(shield=True):
                for stream in list(accepted):
                    await stream.aclose()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        """Serve one connection: at most one request, then close (GW-07)."""
        if self.connections >= self.limits.connections_max:
            sys.stderr.write("shadowcode gateway: refusing a connection: too many open connections\n")
            try:
                await self._refuse(stream, BUSY)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            finally:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
            return
        self.connections += 1
        try:
            await self._one_request(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            self.connections -= 1
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def _one_request(self, stream: anyio.abc.SocketStream) -> None:
        limits = self.limits
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.header_max_bytes)
        try:
            # One scope times both arrivals: the head from the accept, then the body from the head's end.
            with anyio.fail_after(limits.header_deadline_seconds) as arrival:
                request = await self._next_event(stream, conn)
                if not isinstance(request, h11.Request):
                    return  # the peer closed without sending a request
                arrival.deadline = anyio.current_time() + limits.body_deadline_seconds
                if not self.rate.admit():
                    sys.stderr.write("shadowcode gateway: refusing a request: over the request rate\n")
                    raise _Refused(BUSY)
                headers = [(bytes(name), bytes(value)) for name, value in request.headers]
                refusal = guard_head(
                    bytes(request.method),
                    bytes(request.target),
                    headers,
                    bound_host=self.bound_host,
                    port=self.port,
                    token=self.token,
                )
                if refusal is not None:
                    raise _Refused(refusal)
                declared = [value for name, value in headers if name == b"content-length"]
                if declared and int(declared[0]) > limits.body_max_bytes:
                    raise _Refused(TOO_LARGE)
                if conn.client_is_waiting_for_100_continue:
                    await stream.send(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
                body = await self._read_body(stream, conn)
        except TimeoutError:
            await self._refuse(stream, TIMED_OUT)
            return
        except h11.RemoteProtocolError as exc:
            await self._refuse(stream, HEAD_TOO_LARGE if exc.error_status_hint == 431 else BAD_REQUEST)
            return
        except _Refused as refused:
            await self._refuse(stream, refused.refusal)
            return
        scope = self._scope(request, [(n, v) for n, v in headers if n != b"authorization"])
        status, response_headers, response_body = await self._call_app(scope, body)
        with anyio.move_on_after(limits.request_deadline_seconds):
            await stream.send(response_bytes(status, response_headers, response_body))  # one write

    async def _next_event(self, stream: anyio.abc.SocketStream, conn: h11.Connection) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive(_READ_CHUNK_BYTES)
                except anyio.EndOfStream:
                    data = b""
                conn.receive_data(data)
                continue
            return event

    async def _read_body(self, stream: anyio.abc.SocketStream, conn: h11.Connection) -> bytes:
        body = bytearray()
        while True:
            event = await self._next_event(stream, conn)
            if isinstance(event, h11.Data):
                if len(body) + len(event.data) > self.limits.body_max_bytes:
                    raise _Refused(TOO_LARGE)
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return bytes(body)
            else:
                raise _Refused(BAD_REQUEST)  # the peer closed before the body was complete

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

    async def _call_app(self, scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Run the app with the request; returns the whole response, or a fixed refusal."""
        delivered = False
        finished = anyio.Event()
        start: dict[str, Any] = {}
        chunks = bytearray()
        limit = self.limits.response_max_bytes
        too_large = False
        complete = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()  # never report a disconnect: a started call runs to its end (GW-08)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal too_large, complete
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body" and not complete:
                if not too_large:
                    chunks.extend(message.get("body", b""))
                    if len(chunks) > limit:
                        too_large = True
                        chunks.clear()
                if not message.get("more_body", False):
                    complete = True
                    finished.set()

        outcome: Refusal | None = None
        with anyio.move_on_after(self.limits.request_deadline_seconds):
            try:
                await self.app(scope, receive, send)
            except Exception:
                logger.exception("the MCP handler failed")
                outcome = FAILED
        finished.set()
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

    async def _refuse(self, stream: anyio.abc.SocketStream, refusal: Refusal) -> None:
        """Answer ``refusal``, then drain what the peer still sends for a moment so it can read the answer."""
        with anyio.move_on_after(self.limits.linger_seconds):
            try:
                await stream.send(refusal_bytes(refusal))
                await stream.send_eof()
                while True:
                    await stream.receive(_READ_CHUNK_BYTES)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass
