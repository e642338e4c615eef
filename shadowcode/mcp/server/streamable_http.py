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

Every request passes :func:`guard_head` before the SDK sees it: the Host must be the bound IP
(``[::1]`` for IPv6) or ``localhost`` with the real port (421), no Origin (403), no query
string (400), exactly one ``Authorization: Bearer`` header whose token matches under a
constant-time compare (401), path ``/mcp`` (404), method POST (405), and no MCP metadata header
twice (400). The Authorization header is then removed from what the SDK receives. Refusals
carry fixed bodies: nothing the peer sent is echoed back.

Once the body is in, a request runs to its end even if the client goes away: the SDK is never
told of a disconnect, so a tool call that has reached the engine is not cancelled by a closed
HTTP request (GW-08).
"""

from __future__ import annotations

import collections
import hmac
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import anyio
import anyio.abc
import h11

from shadowcode.limits import (
    GATEWAY_BODY_DEADLINE_SECONDS,
    GATEWAY_CONNECTIONS_MAX,
    GATEWAY_HEADER_DEADLINE_SECONDS,
    GATEWAY_HEADER_MAX_BYTES,
    GATEWAY_LINGER_SECONDS,
    GATEWAY_REQUEST_DEADLINE_SECONDS,
    GATEWAY_REQUEST_MAX_BYTES,
    GATEWAY_REQUESTS_PER_SECOND_MAX,
    GATEWAY_RESPONSE_MAX_BYTES,
)

__all__ = [
    "ENDPOINT_PATH",
    "GatewayLimits",
    "GatewayServer",
    "Refusal",
    "RequestRate",
    "build_mcp_app",
    "guard_head",
]

logger = logging.getLogger(__name__)

ENDPOINT_PATH = "/mcp"
"""The one path the gateway serves (GW-05)."""

_READ_CHUNK_BYTES = 64 * 1024
_METADATA_PREFIX = b"mcp-"
_SINGLE_HEADERS = frozenset({b"host", b"authorization", b"content-type", b"content-length", b"transfer-encoding"})

ASGIApp = Callable[[dict[str, Any], Callable[[], Any], Callable[[dict[str, Any]], Any]], Any]


@dataclass(frozen=True)
class Refusal:
    """A plain HTTP refusal with a fixed body (GW-03, GW-04, GW-07).

    Attributes:
        status: the HTTP status code.
        body: fixed text; never holds anything the peer sent.
        headers: extra response headers (``WWW-Authenticate``, ``Allow``).
    """

    status: int
    body: str
    headers: tuple[tuple[str, str], ...] = ()


BAD_REQUEST = Refusal(400, "bad request\n")
MISDIRECTED = Refusal(421, "the Host header does not name this gateway\n")
ORIGIN_REFUSED = Refusal(403, "requests with an Origin header are refused\n")
QUERY_REFUSED = Refusal(400, "query strings are refused\n")
UNAUTHORIZED = Refusal(401, "a valid bearer token is required\n", (("WWW-Authenticate", "Bearer"),))
NOT_FOUND = Refusal(404, "not found; the MCP endpoint is /mcp\n")
METHOD_REFUSED = Refusal(405, "only POST is served\n", (("Allow", "POST"),))
DUPLICATE_HEADER = Refusal(400, "a header that must appear once appears more than once\n")
TOO_LARGE = Refusal(413, "the request body is too large\n")
HEAD_TOO_LARGE = Refusal(431, "the request head is too large\n")
TIMED_OUT = Refusal(408, "the request did not arrive in time\n")
BUSY = Refusal(429, "too many connections or requests; retry later\n")
RESPONSE_TOO_LARGE = Refusal(500, "the response is too large to send\n")
DEADLINE = Refusal(504, "the request did not finish in time\n")
FAILED = Refusal(500, "the request failed\n")


@dataclass(frozen=True)
class GatewayLimits:
    """The gateway's limits; each defaults to its constant in :mod:`shadowcode.limits` (GW-07).

    Attributes:
        connections_max: connections served at once.
        requests_per_second_max: requests taken in any one-second window.
        header_deadline_seconds: seconds from accept until the head is complete.
        body_deadline_seconds: seconds from the end of the head until the body is complete.
        header_max_bytes: bytes of the request line and headers.
        body_max_bytes: bytes of one request body.
        request_deadline_seconds: seconds from a complete request until its response is written.
        response_max_bytes: bytes of one response body.
        linger_seconds: seconds a refused connection is drained before it is closed.
    """

    connections_max: int = GATEWAY_CONNECTIONS_MAX
    requests_per_second_max: int = GATEWAY_REQUESTS_PER_SECOND_MAX
    header_deadline_seconds: float = GATEWAY_HEADER_DEADLINE_SECONDS
    body_deadline_seconds: float = GATEWAY_BODY_DEADLINE_SECONDS
    header_max_bytes: int = GATEWAY_HEADER_MAX_BYTES
    body_max_bytes: int = GATEWAY_REQUEST_MAX_BYTES
    request_deadline_seconds: float = GATEWAY_REQUEST_DEADLINE_SECONDS
    response_max_bytes: int = GATEWAY_RESPONSE_MAX_BYTES
    linger_seconds: float = GATEWAY_LINGER_SECONDS


class RequestRate:
    """A sliding one-second window of accepted requests (GW-07).

    Args:
        limit: requests allowed in any window of one second.
        clock: monotonic seconds; replaceable so tests can hold time still.
    """

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._times: collections.deque[float] = collections.deque()

    def admit(self) -> bool:
        """Count one request; False when ``limit`` requests were already taken in the last second."""
        now = self.clock()
        while self._times and now - self._times[0] >= 1.0:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return False
        self._times.append(now)
        return True


def _host_allowed(value: bytes, bound_host: str, port: int) -> bool:
    text = value.decode("latin-1").lower()
    names = {f"localhost:{port}", f"[{bound_host}]:{port}" if ":" in bound_host else f"{bound_host}:{port}"}
    return text in names


def _bearer_matches(value: bytes, token: bytes) -> bool:
    scheme, _, credential = value.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(credential.strip(), token)


def guard_head(
    method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], *, bound_host: str, port: int, token: bytes
) -> Refusal | None:
    """Check a request head against the gateway's rules, in a fixed order (GW-03, GW-04, GW-05).

    Args:
        method: the request method as sent (``b"POST"``).
        target: the request target as sent (``b"/mcp"``).
        headers: ``(lowercase name, value)`` pairs in the order sent, duplicates kept.
        bound_host: the IP literal the gateway listens on (``127.0.0.1``, ``::1``).
        port: the port it listens on.
        token: the gateway's bearer token.

    Returns:
        The refusal to send, or None when the request may reach the SDK.
    """
    counts = collections.Counter(name for name, _ in headers)
    host = [value for name, value in headers if name == b"host"]
    if len(host) != 1:
        return BAD_REQUEST
    if not _host_allowed(host[0], bound_host, port):
        return MISDIRECTED
    if counts[b"origin"]:
        return ORIGIN_REFUSED
    if b"?" in target:
        return QUERY_REFUSED
    if not target.startswith(b"/"):
        return BAD_REQUEST
    authorization = [value for name, value in headers if name == b"authorization"]
    if len(authorization) != 1 or not _bearer_matches(authorization[0], token):
        return UNAUTHORIZED
    if target != ENDPOINT_PATH.encode():
        return NOT_FOUND
    if method != b"POST":
        return METHOD_REFUSED
    for name, count in counts.items():
        if count > 1 and (name.startswith(_METADATA_PREFIX) or name in _SINGLE_HEADERS):
            return DUPLICATE_HEADER
    return None


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
                await self._refuse(stream, h11.Connection(h11.SERVER), BUSY)
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
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.header_max_bytes)
        try:
            with anyio.fail_after(self.limits.header_deadline_seconds):
                request = await self._next_event(stream, conn)
            if not isinstance(request, h11.Request):
                return  # the peer closed without sending a request
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
            if declared and int(declared[0]) > self.limits.body_max_bytes:
                raise _Refused(TOO_LARGE)
            with anyio.fail_after(self.limits.body_deadline_seconds):
                if conn.client_is_waiting_for_100_continue:
                    await stream.send(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
                body = await self._read_body(stream, conn)
        except TimeoutError:
            await self._refuse(stream, conn, TIMED_OUT)
            return
        except h11.RemoteProtocolError as exc:
            await self._refuse(stream, conn, HEAD_TOO_LARGE if exc.error_status_hint == 431 else BAD_REQUEST)
            return
        except _Refused as refused:
            await self._refuse(stream, conn, refused.refusal)
            return
        stream_client = stream.extra(anyio.abc.SocketAttribute.remote_address, ("", 0))
        scope = self._scope(request, [(n, v) for n, v in headers if n != b"authorization"], stream_client)
        status, response_headers, response_body = await self._call_app(scope, body)
        await self._send(stream, conn, status, response_headers, response_body)

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

    def _scope(self, request: h11.Request, headers: list[tuple[bytes, bytes]], client: Any) -> dict[str, Any]:
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
            "client": tuple(client[:2]) if isinstance(client, tuple) else None,
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
            return outcome.status, _refusal_headers(outcome), outcome.body.encode()
        headers = [
            (bytes(n).lower(), bytes(v))
            for n, v in start.get("headers", [])
            if bytes(n).lower() not in (b"connection", b"content-length", b"transfer-encoding")
        ]
        return int(start["status"]), headers, bytes(chunks)

    async def _send(
        self,
        stream: anyio.abc.SocketStream,
        conn: h11.Connection,
        status: int,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> None:
        headers = [*headers, (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        with anyio.move_on_after(self.limits.request_deadline_seconds):
            head = h11.Response(status_code=status, headers=headers, reason=_reason(status))
            await stream.send(conn.send(head) or b"")
            if body:
                await stream.send(conn.send(h11.Data(data=body)) or b"")
            await stream.send(conn.send(h11.EndOfMessage()) or b"")

    async def _refuse(self, stream: anyio.abc.SocketStream, conn: h11.Connection, refusal: Refusal) -> None:
        """Answer ``refusal``, then drain what the peer still sends for a moment so it can read the answer."""
        body = refusal.body.encode()
        headers = [
            *[(n.encode(), v.encode()) for n, v in refusal.headers],
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            try:
                head = h11.Response(status_code=refusal.status, headers=headers, reason=_reason(refusal.status))
                data = conn.send(head) or b""
                data += (conn.send(h11.Data(data=body)) or b"") + (conn.send(h11.EndOfMessage()) or b"")
            except h11.LocalProtocolError:
                data = _raw_response(refusal, headers, body)
        else:
            data = _raw_response(refusal, headers, body)
        with anyio.move_on_after(self.limits.linger_seconds):
            try:
                await stream.send(data)
                await stream.send_eof()
                while True:
                    await stream.receive(_READ_CHUNK_BYTES)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass


def _refusal_headers(refusal: Refusal) -> list[tuple[bytes, bytes]]:
    return [
        *[(n.lower().encode(), v.encode()) for n, v in refusal.headers],
        (b"content-type", b"text/plain; charset=utf-8"),
    ]


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def _raw_response(refusal: Refusal, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (refusal.status, _reason(refusal.status))]
    lines += [name + b": " + value for name, value in headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
