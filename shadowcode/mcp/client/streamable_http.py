"""The bounded Streamable HTTP transport to an external MCP server (CLI-11, CLI-16, CLI-17, CLI-18).

Like :class:`~shadowcode.mcp.client.stdio.StdioServer`, :class:`StreamableHttpClient` is an
async context manager yielding ``(read_stream, write_stream)`` for the SDK's client session,
which speaks the protocol: the 2026-07-28 ``server/discover`` probe with per-request metadata
and the ``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` headers it
computes (non-ASCII values base64-wrapped), else the legacy ``initialize`` handshake. This module
moves the messages, one POST each, within limits:

- Before any lookup or connection, :meth:`Endpoint.check` applies the URL and network rules;
  ``localhost`` must resolve to loopback only and is contacted by address. Proxy variables and
  ``.netrc`` are ignored (``trust_env=False``), no redirect is followed, bodies are asked
  uncompressed (a compressed reply is refused). Configured headers and the bearer credential go
  only to the reviewed URL, in the precedence of :meth:`Endpoint.credential_headers`.
- Two request workers (MCP_HTTP_REQUESTS_MAX) send ordinary requests; one control worker sends
  notifications and replies; the legacy GET stream is the control channel's listener. Queues
  hold MCP_HTTP_CONTROL_QUEUE_MAX messages; one more closes the connection.
- Bodies and SSE events are capped (:class:`HttpLimits`) before parsing; a reply's header block
  is counted as it arrives (:class:`~shadowcode.mcp.client.reply_headers.HeaderCountingTransport`),
  so its limit is named whatever its shape. A malformed, oversized, compressed, truncated or
  interrupted reply, a redirect, a 401 (no login is started), a 403, or a 404 while a legacy
  session is open closes the connection and fails every pending request: nothing is retried,
  no SSE stream resumed, no session initialized again. Reasons name the status or the rule,
  never a peer's body or authentication challenge.
- ``notifications/initialized`` is taken by the server before any later request is posted.
- A 4xx answer to the ``server/discover`` probe reads as a JSON-RPC error, so the session falls
  back to ``initialize``. Another request's 4xx carrying a JSON-RPC error is that request's
  error (the code kept, the peer's message replaced).
- A cancelled request's POST is aborted; at 2026-07-28 that is the whole signal, before it the
  ``notifications/cancelled`` is also posted. Leaving the context aborts the requests in
  flight, posts what still waits on the control lane (a timed-out call's
  ``notifications/cancelled``), then sends the legacy session's ``DELETE``, all within one
  MCP_HTTP_SESSION_DELETE_SECONDS bound, also when the context is left by cancellation. After
  a failure nothing is posted; after a 404 ended the session no ``DELETE`` is sent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from shadowcode.errors import ShadowcodeError, UpstreamServerError
from shadowcode.limits import (
    MCP_CONNECTION_MAX_BYTES,
    MCP_HTTP_BODY_MAX_BYTES,
    MCP_HTTP_CONTROL_QUEUE_MAX,
    MCP_HTTP_EVENT_ID_MAX_BYTES,
    MCP_HTTP_HEADERS_MAX_BYTES,
    MCP_HTTP_REQUESTS_MAX,
    MCP_HTTP_SESSION_DELETE_SECONDS,
    MCP_HTTP_SESSION_ID_MAX_BYTES,
    MCP_HTTP_SSE_EVENT_MAX_BYTES,
    MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX,
)
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.oauth_http import insufficient_scopes
from shadowcode.mcp.client.reply_headers import (
    HeaderBlockTooLarge,
    HeaderCountingTransport,
    headers_size,
    is_compressed,
)
from shadowcode.mcp.client.sse import SseError, SseParser
from shadowcode.ndjson import FrameRate

__all__ = ["HttpLimits", "StreamableHttpClient", "headers_size"]

logger = logging.getLogger(__name__)

_SESSION = "mcp-session-id"
_VERSION = "mcp-protocol-version"
_PROBE = "server/discover"


@dataclass(frozen=True)
class HttpLimits:
    """The CLI-17 limits of one HTTP connection; defaults come from ``shadowcode.limits``."""

    body_max_bytes: int = MCP_HTTP_BODY_MAX_BYTES
    sse_event_max_bytes: int = MCP_HTTP_SSE_EVENT_MAX_BYTES
    sse_events_per_second_max: int = MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX
    session_id_max_bytes: int = MCP_HTTP_SESSION_ID_MAX_BYTES
    event_id_max_bytes: int = MCP_HTTP_EVENT_ID_MAX_BYTES
    headers_max_bytes: int = MCP_HTTP_HEADERS_MAX_BYTES
    requests_max: int = MCP_HTTP_REQUESTS_MAX
    control_queue_max: int = MCP_HTTP_CONTROL_QUEUE_MAX
    lifetime_max_bytes: int = MCP_CONNECTION_MAX_BYTES
    session_delete_seconds: float = MCP_HTTP_SESSION_DELETE_SECONDS


class _Failed(Exception):
    """The server broke the transport contract; the message names how (never with its body)."""


class StreamableHttpClient:
    """One bounded Streamable HTTP connection (CLI-11, CLI-16, CLI-17, CLI-18).

    Args:
        endpoint: the reviewed URL, the credential and the network permission.
        timeout_seconds: deadline for connecting and for sending one request.
        limits: the transport limits.
        label: the definition id, for log lines.

    Attributes:
        failure: why the connection failed, or None.
        failed: set once it failed.
        cleanup: how it ended: ``closed``, ``session deleted``, ``session delete failed``,
            ``session delete timed out`` or ``session ended by the server`` (a 404; no ``DELETE``).
        session_id: the legacy session id, or None.
    """

    pid: int | None = None
    stragglers: int = 0

    def __init__(
        self, endpoint: Endpoint, *, timeout_seconds: float, limits: HttpLimits | None = None, label: str = ""
    ) -> None:
        self.endpoint = endpoint
        self.timeout_seconds = timeout_seconds
        self.limits = limits or HttpLimits()
        self.label = label or endpoint.host
        self.failure: str | None = None
        self.failed = anyio.Event()
        self.cleanup: str | None = None
        self.session_id: str | None = None
        self.received_bytes = 0
        self._version: str | None = None
        self._rate = FrameRate(self.limits.sse_events_per_second_max)
        self._client: httpx2.AsyncClient | None = None
        self._url = endpoint.url
        self._host_header: str | None = None
        self._extensions: dict[str, Any] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._read_send: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._streams: tuple[Any, ...] = ()
        self._in_flight: dict[types.RequestId, anyio.CancelScope] = {}
        self._dropped: set[types.RequestId] = set()
        self._get_started = False
        self._closing = False
        self._session_ended = False
        self._initialized = anyio.Event()
        self._initialized.set()
        self._control_send: MemoryObjectSendStream[SessionMessage] | None = None
        self._control_done = anyio.Event()

    def stderr_text(self) -> str:
        """HTTP servers have no captured stderr: always empty."""
        return ""

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        try:
            with anyio.fail_after(self.timeout_seconds):
                self._url, self._host_header, self._extensions = await self.endpoint.target()
        except ShadowcodeError as exc:
            raise UpstreamServerError(exc.message) from None
        except TimeoutError:
            raise UpstreamServerError(f"localhost did not resolve within {self.timeout_seconds} s") from None
        lim = self.limits
        pool = httpx2.Limits(max_connections=lim.requests_max + 3, max_keepalive_connections=lim.requests_max + 2)
        self._client = httpx2.AsyncClient(
            transport=HeaderCountingTransport(headers_max_bytes=lim.headers_max_bytes, limits=pool),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx2.Timeout(self.timeout_seconds, read=None),
        )
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](lim.control_queue_max)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        requests_send, requests_recv = anyio.create_memory_object_stream[SessionMessage](lim.control_queue_max)
        control_send, control_recv = anyio.create_memory_object_stream[SessionMessage](lim.control_queue_max)
        self._read_send = read_send
        self._control_send = control_send
        self._streams = (read_send, read_recv, write_send, write_recv, requests_send, requests_recv)
        self._streams += (control_send, control_recv)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._route, write_recv, requests_send, control_send)
        for _ in range(lim.requests_max):
            self._tg.start_soon(self._work, requests_recv)
        self._tg.start_soon(self._control, control_recv)
        return read_recv, write_send

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._tg is not None and self._client is not None
        self._closing = True
        deadline = anyio.current_time() + self.limits.session_delete_seconds
        try:
            with anyio.CancelScope(shield=True):
                await self._flush(deadline)
        finally:
            self._tg.cancel_scope.cancel()
            try:
                await self._tg.__aexit__(None, None, None)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._end_session(self._client, deadline)
                for stream in self._streams:
                    stream.close()

    async def _flush(self, deadline: float) -> None:
        """Abort the requests in flight and post what waits on the control lane before ``deadline`` (CW-07).

        A timed-out call's ``notifications/cancelled`` queued just before the close is sent
        here, before the session's ``DELETE``; queued requests are dropped. Nothing is sent
        when the connection failed.
        """
        for scope in list(self._in_flight.values()):
            scope.cancel()
        if self.failed.is_set() or self._control_send is None:
            return
        self._control_send.close()
        with anyio.CancelScope(deadline=deadline):
            await self._control_done.wait()

    async def _end_session(self, client: httpx2.AsyncClient, deadline: float) -> None:
        """DELETE the legacy session before ``deadline`` (the close bound), then close the client (CLI-16, CLI-18).

        A session the server ended with a 404 gets no ``DELETE``.
        """
        self.cleanup = "closed"
        if self._session_ended:
            self.cleanup = "session ended by the server"
        elif self.session_id is not None:
            self.cleanup = "session delete timed out"
            with anyio.CancelScope(deadline=deadline):
                try:
                    response = await self._send(self._request("DELETE", b"", {}))
                    await response.aclose()
                    self.cleanup = "session deleted" if response.is_success else "session delete failed"
                except (httpx2.HTTPError, _Failed):
                    self.cleanup = "session delete failed"
        with anyio.move_on_after(self.limits.session_delete_seconds):
            await client.aclose()

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` and return the reply with its headers read, its body not yet.

        Raises:
            _Failed: the reply's header block passed MCP_HTTP_HEADERS_MAX_BYTES as it arrived.
            httpx2.HTTPError: the exchange failed.
        """
        assert self._client is not None
        try:
            return await self._client.send(request, stream=True)
        except HeaderBlockTooLarge as exc:
            raise _Failed(f"the server sent {exc}") from None

    def _fail(self, reason: str) -> None:
        if self.failure is None and not self._closing:
            self.failure = reason
            logger.warning("MCP server %s: closing the connection: %s", self.label, reason)
        self.failed.set()
        if self._read_send is not None:
            self._read_send.close()

    # -- routing -------------------------------------------------------------------------

    async def _route(
        self,
        write_recv: MemoryObjectReceiveStream[SessionMessage],
        requests: MemoryObjectSendStream[SessionMessage],
        control: MemoryObjectSendStream[SessionMessage],
    ) -> None:
        """Put each outgoing message on its lane; a cancellation aborts its request's POST."""
        try:
            async for item in write_recv:
                message = item.message
                headers: dict[str, str] = getattr(item.metadata, "headers", None) or {}
                if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
                    self._version = None
                version = {k.lower(): v for k, v in headers.items()}.get(_VERSION)
                if version is not None:
                    self._version = version
                lane = requests if isinstance(message, types.JSONRPCRequest) else control
                if _is_initialized(message):
                    # Requests wait until the server has taken it (CLI-16).
                    self._initialized = anyio.Event()
                if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                    if self._cancel(message):
                        continue
                try:
                    lane.send_nowait(item)
                except anyio.WouldBlock:
                    self._fail(f"more than {self.limits.control_queue_max} messages waited to be sent")
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    def _cancel(self, message: types.JSONRPCNotification) -> bool:
        """Abort the cancelled request's POST; True when the notification is not to be posted."""
        request_id = (message.params or {}).get("requestId")
        scope = self._in_flight.get(request_id) if request_id is not None else None
        if scope is not None:
            scope.cancel()
        elif request_id is not None:
            self._dropped.add(request_id)
        return self._version in MODERN_PROTOCOL_VERSIONS or scope is None

    async def _control(self, lane: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """The control lane's worker; :meth:`_flush` waits for it to drain the lane."""
        try:
            await self._work(lane)
        finally:
            self._control_done.set()

    async def _work(self, lane: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async for item in lane:
            message = item.message
            request_id = message.id if isinstance(message, types.JSONRPCRequest) else None
            if request_id is not None and (request_id in self._dropped or self._closing):
                self._dropped.discard(request_id)
                continue
            # A request is bounded by its caller's deadline; a notification or reply by ours.
            scope = anyio.CancelScope() if request_id is not None else anyio.move_on_after(self.timeout_seconds)
            if request_id is not None:
                self._in_flight[request_id] = scope
            try:
                with scope:
                    if request_id is not None:
                        await self._initialized.wait()
                    await self._exchange(item)
                if request_id is None and scope.cancelled_caught:
                    raise _Failed(f"the server did not take a message within {self.timeout_seconds} s")
            except _Failed as exc:
                self._fail(str(exc))
                return
            except httpx2.HTTPError as exc:
                self._fail(f"the exchange with the server was interrupted ({type(exc).__name__})")
                return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            except Exception as exc:  # noqa: BLE001 - a peer's reply never escapes its connection
                logger.exception("MCP server %s: the exchange failed unexpectedly", self.label)
                self._fail(f"internal error ({type(exc).__name__})")
                return
            finally:
                if request_id is not None and self._in_flight.get(request_id) is scope:
                    del self._in_flight[request_id]
                if _is_initialized(message):
                    self._initialized.set()

    # -- one exchange --------------------------------------------------------------------

    def request_headers_size(self, extra: dict[str, str]) -> int:
        """Bytes of the protocol headers a POST carrying ``extra`` would have (the credential not counted)."""
        return headers_size(self._headers("POST", extra))

    def _headers(self, method: str, extra: dict[str, str]) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "accept-encoding": "identity"}
        if method == "POST":
            headers["content-type"] = "application/json"
        if self.session_id is not None:
            headers[_SESSION] = self.session_id
        if self._version is not None:
            headers[_VERSION] = self._version
        headers.update({k.lower(): v for k, v in extra.items()})
        return headers

    def _request(self, method: str, body: bytes, extra: dict[str, str]) -> httpx2.Request:
        headers = self._headers(method, extra)
        if headers_size(headers) > self.limits.headers_max_bytes:
            raise _Failed(f"a request's protocol headers are larger than {self.limits.headers_max_bytes} bytes")
        if self._host_header is not None:
            headers["host"] = self._host_header
        headers.update(self.endpoint.credential_headers())
        return httpx2.Request(method, self._url, content=body, headers=headers, extensions=self._extensions)

    async def _exchange(self, item: SessionMessage) -> None:
        assert self._client is not None
        message = item.message
        body = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        request = self._request("POST", body, getattr(item.metadata, "headers", None) or {})
        response = await self._send(request)
        try:
            self._check_headers(response)
            if isinstance(message, types.JSONRPCRequest):
                await self._answer(message, response)
            else:
                await self._accepted(message, response)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    def _check_headers(self, response: httpx2.Response) -> None:
        if headers_size(response.headers.raw) > self.limits.headers_max_bytes:
            raise _Failed(f"the server sent more than {self.limits.headers_max_bytes} bytes of headers")
        if 300 <= response.status_code < 400:
            raise _Failed(f"the server answered with a redirect (HTTP {response.status_code}), which is not followed")
        if response.status_code == 401:
            raise _Failed(
                f"authentication required: run `shadowcode mcp login {self.label}` (the server answered HTTP 401; "
                "a task starts no login), or store the credential its definition names"
            )
        if response.status_code == 403:
            scopes = insufficient_scopes(response.headers.get("www-authenticate", ""))
            if scopes:
                wanted = " ".join(f"--scope {s}" for s in scopes)
                raise _Failed(
                    f"the server needs more access (HTTP 403, insufficient_scope): run "
                    f"`shadowcode mcp login {self.label} {wanted}` (a task starts no login)"
                )
            raise _Failed("the server refused access (HTTP 403)")
        if response.status_code == 404 and self.session_id is not None:
            self._session_ended = True
            raise _Failed("the server ended the session (HTTP 404); nothing is sent again")
        if is_compressed(response.headers):
            raise _Failed("the server sent a compressed reply, which this client does not accept")

    async def _accepted(self, message: types.JSONRPCMessage, response: httpx2.Response) -> None:
        """A notification or a reply was posted: a 2xx ends it; the body is not read."""
        if _is_initialized(message):
            self._initialized.set()
        if not response.is_success:
            logger.info("MCP server %s answered a notification with HTTP %d", self.label, response.status_code)
            return
        if (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/initialized"
            and self.session_id is not None
            and not self._get_started
            and self._tg is not None
        ):
            self._get_started = True
            self._tg.start_soon(self._listen)

    async def _answer(self, message: types.JSONRPCRequest, response: httpx2.Response) -> None:
        status = response.status_code
        if not response.is_success:
            await self._refused(message, response)
            return
        if message.method == "initialize":
            self._take_session(response)
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "application/json":
            reply = _parse(await self._body(response))
            if not isinstance(reply, types.JSONRPCResponse | types.JSONRPCError) or reply.id != message.id:
                raise _Failed("the server's JSON reply is not the response to its request")
            await self._deliver(reply)
        elif kind == "text/event-stream":
            if not await self._events(response, message.id):
                raise _Failed("the server's SSE reply ended before the response to its request")
        else:
            raise _Failed(f"the server's reply (HTTP {status}) is neither JSON nor an event stream")

    async def _refused(self, message: types.JSONRPCRequest, response: httpx2.Response) -> None:
        """A 4xx/5xx answer to a request: the probe falls back; a JSON-RPC error is the request's error."""
        status = response.status_code
        error: types.JSONRPCError | None = None
        if response.headers.get("content-type", "").lower().startswith("application/json") and status < 500:
            try:
                parsed = _parse(await self._body(response))
            except _Failed:
                parsed = None
            if isinstance(parsed, types.JSONRPCError):
                data = parsed.error.data if parsed.error.code == types.UNSUPPORTED_PROTOCOL_VERSION else None
                error = types.JSONRPCError(
                    jsonrpc="2.0",
                    id=message.id,
                    error=types.ErrorData(
                        code=parsed.error.code, message=f"the server refused the request (HTTP {status})", data=data
                    ),
                )
        if error is None and message.method == _PROBE and status < 500:
            error = types.JSONRPCError(
                jsonrpc="2.0",
                id=message.id,
                error=types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"HTTP {status}"),
            )
        if error is None:
            raise _Failed(f"the server answered a request with HTTP {status}")
        await self._deliver(error)

    def _take_session(self, response: httpx2.Response) -> None:
        value = response.headers.get(_SESSION)
        if value is None:
            return
        if len(value.encode("utf-8")) > self.limits.session_id_max_bytes:
            raise _Failed(f"the server sent a session id longer than {self.limits.session_id_max_bytes} bytes")
        if not value or any(not 0x21 <= ord(c) <= 0x7E for c in value):
            raise _Failed("the server sent a session id with characters outside visible ASCII")
        self.session_id = value

    def _count(self, size: int) -> None:
        self.received_bytes += size
        if self.received_bytes > self.limits.lifetime_max_bytes:
            raise _Failed(f"the server sent more than {self.limits.lifetime_max_bytes} bytes")

    async def _body(self, response: httpx2.Response) -> bytes:
        cap = self.limits.body_max_bytes
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise _Failed(f"the server's JSON reply is longer than {cap} bytes")
        body = bytearray()
        async for chunk in response.aiter_raw():
            self._count(len(chunk))
            body += chunk
            if len(body) > cap:
                raise _Failed(f"the server's JSON reply is longer than {cap} bytes")
        return bytes(body)

    async def _events(self, response: httpx2.Response, request_id: types.RequestId | None) -> bool:
        """Forward a stream's messages; True once the response to ``request_id`` arrived."""
        lim = self.limits
        parser = SseParser(
            event_max_bytes=lim.sse_event_max_bytes,
            event_id_max_bytes=lim.event_id_max_bytes,
            events_per_second_max=lim.sse_events_per_second_max,
            rate=self._rate,
        )
        async for chunk in response.aiter_raw():
            self._count(len(chunk))
            try:
                events = parser.feed(chunk)
            except SseError as exc:
                raise _Failed(str(exc)) from None
            for event in events:
                if event.event != "message" or not event.data:
                    continue
                reply = _parse(event.data.encode("utf-8"))
                await self._deliver(reply)
                if isinstance(reply, types.JSONRPCResponse | types.JSONRPCError) and reply.id == request_id:
                    return True
        if parser.partial:
            raise _Failed("the server's event stream ended in the middle of an event")
        return False

    async def _listen(self) -> None:
        """The legacy GET stream: server messages outside any request; never reopened (CLI-18)."""
        assert self._client is not None
        try:
            response = await self._send(self._request("GET", b"", {}))
            try:
                self._check_headers(response)
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.is_success and kind == "text/event-stream":
                    await self._events(response, None)
            finally:
                with anyio.CancelScope(shield=True):
                    await response.aclose()
        except _Failed as exc:
            self._fail(str(exc))
        except httpx2.HTTPError as exc:
            self._fail(f"the server's event stream was interrupted ({type(exc).__name__})")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    async def _deliver(self, message: types.JSONRPCMessage) -> None:
        assert self._read_send is not None
        await self._read_send.send(SessionMessage(message))


def _is_initialized(message: types.JSONRPCMessage) -> bool:
    return isinstance(message, types.JSONRPCNotification) and message.method == "notifications/initialized"


def _parse(data: bytes) -> types.JSONRPCMessage:
    try:
        return types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    except ValueError:
        raise _Failed("the server sent a reply that is not a JSON-RPC message") from None
