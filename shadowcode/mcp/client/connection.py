"""One connection to an external MCP server (stdio or Streamable HTTP), under the SDK's client session.

Covers CLI-08, CLI-13, CLI-14, CLI-15, CLI-16, CLI-18, CLI-19, CW-05, CW-06.

A :class:`Connection` runs in a task of its own (started by :meth:`Connection.start`): it takes
one of the process-wide MCP_CONNECTIONS_MAX permits, starts the server through
:class:`~shadowcode.mcp.client.stdio.StdioServer` (``argv``) or connects through
:class:`~shadowcode.mcp.client.streamable_http.StreamableHttpClient` (``endpoint``), negotiates
(stdio: the legacy ``initialize`` handshake; HTTP: the 2026-07-28 ``server/discover`` probe
first, falling back to ``initialize`` when the server answers it with anything but a modern
discovery result), reads the tool catalog within one deadline (bounded pages, cursors, tools and
bytes; duplicate names and repeated cursors fail) and then serves calls from any task until
:meth:`Connection.close`. The permit is released only after cleanup.

The client advertises no capability: no roots, sampling, elicitation or tasks. A sampling or
roots request from the server is answered with an error and elicitation is declined. A tool
result asking for more input (a task continuation) is refused. A failed call is reported and
never retried; a connection that failed stays failed, and its old catalog is never served.
A JSON-RPC error answering a call is that call's error (:class:`CallRefused`, with its code and
redacted message): it is not a transport failure and the connection stays usable (CLI-14).
Responses are not cached. Configured values are redacted from the catalog and from results;
which values those are is decided above this package and passed in as a :class:`Redactor`.

Freshness (CW-05): while READY, the catalog is revalidated in place (same bounds as at connect)
when the server sends ``notifications/tools/list_changed`` (or the resource or prompt variant),
or when the earliest ``ttlMs`` of a list's pages, clamped, has passed. One revalidation runs at
a time, at least ``revalidate_interval_seconds`` after the previous one; notices arriving
meanwhile are folded into it. A changed tool list bumps :attr:`Connection.tools_generation`;
a call resolved against an older generation is refused with :class:`CatalogChanged`. A
revalidation that fails retires the connection (FAILED): the stale catalog is never served.
Resources, templates and prompts are listed on first use (:meth:`Connection.listing`) and read
through :mod:`shadowcode.mcp.client.helpers` (CW-06).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import encode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from shadowcode.errors import UpstreamServerError
from shadowcode.mcp.client.catalog import CatalogLimits
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.freshness import CatalogFreshness
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.stdio import ClientLimits, StdioServer
from shadowcode.mcp.client.streamable_http import HttpLimits, StreamableHttpClient

__all__ = ["CallRefused", "CatalogChanged", "CatalogLimits", "Connection", "ConnectionState", "connections_open"]

logger = logging.getLogger(__name__)

_CLIENT_INFO = types.Implementation(name="shadowcode", version="0.1.0")
_CALL_RESULT: TypeAdapter[types.CallToolResult | types.InputRequiredResult] = TypeAdapter(
    types.CallToolResult | types.InputRequiredResult
)

_permits_lock = threading.Lock()
_permits_used = 0


def connections_open() -> int:
    """Connection permits held in this process right now (CLI-13)."""
    with _permits_lock:
        return _permits_used


def _take_permit(limit: int) -> bool:
    global _permits_used
    with _permits_lock:
        if _permits_used >= limit:
            return False
        _permits_used += 1
        return True


def _give_permit() -> None:
    global _permits_used
    with _permits_lock:
        _permits_used -= 1


class CallRefused(UpstreamServerError):
    """The server answered a call with a JSON-RPC error; the connection stays usable (CLI-14).

    ``fields`` carries ``server`` (the definition id) and ``error_code`` (the JSON-RPC code);
    the message names the code and the server's message, redacted.
    """


class CatalogChanged(UpstreamServerError):
    """The server's tools changed after the call was resolved; nothing was sent (CW-05)."""


class ConnectionState(enum.Enum):
    """Where a connection is in its life."""

    CONNECTING = "connecting"
    READY = "ready"
    FAILED = "failed"
    CLOSED = "closed"


class _Session(ClientSession):
    """The SDK session with an empty capability advertisement, whatever callbacks are set (CLI-15)."""

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        return types.ClientCapabilities()


async def _refuse_sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is not offered by this client")


async def _decline_elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _refuse_roots(context: ClientRequestContext) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="roots are not offered by this client")


@dataclass(kw_only=True)
class Connection(CatalogFreshness):
    """A live connection to one stdio or HTTP server for one task.

    Attributes:
        server_id: the definition id (for messages).
        argv: the literal command; cwd: the canonical project; env: the complete child environment
            (stdio).
        endpoint: the reviewed URL, credential and network permission (HTTP; then ``argv`` is unused).
        timeout_seconds: deadline for initialization, for discovery (all pages) and for each call.
        redactor: removes configured values from the catalog, results and stderr.
        state: the lifecycle state.
        error: why it failed, once FAILED.
        tools: the redacted tool catalog (``tools/list`` entries as JSON), replaced in place by a
            revalidation that finds it changed (CW-05).
        tools_generation: 0 at connect, one more each time a revalidation changed ``tools``.
        ttl_seconds: the clamped earliest ``ttlMs`` of the tool list's pages, or None (CW-05).
        revalidations: revalidations run so far (CW-05).
        on_tools_changed: called (in the connection's task) after a revalidation changed ``tools``.
        protocol_version: what ``initialize`` negotiated.
    """

    server_id: str
    argv: list[str] = field(default_factory=list)
    cwd: Path = field(default_factory=Path)
    env: dict[str, str] = field(default_factory=dict)
    endpoint: Endpoint | None = None
    timeout_seconds: float
    redactor: Redactor = field(default_factory=Redactor)
    limits: ClientLimits = field(default_factory=ClientLimits)
    http_limits: HttpLimits = field(default_factory=HttpLimits)
    catalog_limits: CatalogLimits = field(default_factory=CatalogLimits)
    state: ConnectionState = ConnectionState.CONNECTING
    error: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tools_generation: int = 0
    ttl_seconds: float | None = None
    revalidations: int = 0
    on_tools_changed: Callable[[], None] | None = None
    protocol_version: str | None = None
    pid: int | None = None
    cleanup: str | None = None
    stragglers: int = 0

    def __post_init__(self) -> None:
        self._ready = anyio.Event()
        self._close = anyio.Event()
        self._done = anyio.Event()
        self._session: _Session | None = None
        self._server: StdioServer | StreamableHttpClient | None = None
        self._init_freshness()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Run the connection in ``tg`` and wait until it is READY (or FAILED).

        Raises:
            UpstreamServerError: it could not start, initialize or list its tools in time, or
                MCP_CONNECTIONS_MAX connections are already open in this process.
        """
        tg.start_soon(self._run)
        await self._ready.wait()
        if self.state is not ConnectionState.READY:
            raise UpstreamServerError(f"{self.server_id}: {self.error}", server=self.server_id)

    def close(self) -> None:
        """Ask the connection to stop; :meth:`wait_closed` waits for its cleanup."""
        self._close.set()

    async def wait_closed(self) -> None:
        """Wait until the server's process group is cleaned up and the permit released."""
        await self._done.wait()

    def _set_failed(self, reason: str) -> None:
        if self.state in (ConnectionState.CONNECTING, ConnectionState.READY):
            self.state = ConnectionState.FAILED
            self.error = self.redactor.text(reason)
        self._close.set()

    async def _run(self) -> None:
        if not _take_permit(self.catalog_limits.connections_max):
            self._set_failed(f"{self.catalog_limits.connections_max} MCP connections are already open")
            self._ready.set()
            self._done.set()
            return
        try:
            await self._serve()
        except UpstreamServerError as exc:
            self._set_failed(exc.message)
        except Exception as exc:  # noqa: BLE001 - a server's failure never escapes its connection
            logger.exception("MCP connection failed unexpectedly")
            self._set_failed(f"internal error ({type(exc).__name__})")
        finally:
            _give_permit()
            if self.state is not ConnectionState.FAILED:
                self.state = ConnectionState.CLOSED
            self._ready.set()
            self._done.set()

    async def _serve(self) -> None:
        server: StdioServer | StreamableHttpClient
        if self.endpoint is not None:
            server = StreamableHttpClient(
                self.endpoint, timeout_seconds=self.timeout_seconds, limits=self.http_limits, label=self.server_id
            )
        else:
            server = StdioServer(self.argv, self.cwd, self.env, limits=self.limits, label=self.server_id)
        self._server = server
        failed: str | None = None
        try:
            async with server as (read, write):
                self.pid = server.pid
                session = _Session(
                    read,
                    write,
                    sampling_callback=_refuse_sampling,
                    elicitation_callback=_decline_elicitation,
                    list_roots_callback=_refuse_roots,
                    client_info=_CLIENT_INFO,
                    message_handler=self._on_message,
                )
                async with session:
                    # Failures are returned, not raised, inside the session: its task group would
                    # wrap them in an exception group.
                    failed = await self._negotiate(session, server)
                    if failed is None:
                        self._session = session
                        self.state = ConnectionState.READY
                        self._ready.set()
                        async with anyio.create_task_group() as watch:

                            async def watch_failure() -> None:
                                await server.failed.wait()
                                self._set_failed(server.failure or "the connection failed")

                            watch.start_soon(watch_failure)
                            watch.start_soon(self._supervise)
                            await self._close.wait()
                            watch.cancel_scope.cancel()
        finally:
            self._session = None
            self.cleanup = server.cleanup
            self.stragglers = server.stragglers
            if server.failure:
                self._set_failed(server.failure)
        if failed is not None:
            raise UpstreamServerError(failed, server=self.server_id)

    async def _negotiate(self, session: _Session, server: StdioServer | StreamableHttpClient) -> str | None:
        """Negotiate and read the catalog; returns why it failed, or None."""
        failed: str | None = None
        with anyio.move_on_after(self.timeout_seconds) as scope:
            try:
                if isinstance(server, StreamableHttpClient):
                    await negotiate_auto(session)
                else:
                    await session.initialize()
                self.protocol_version = session.protocol_version
            except MCPError as exc:
                failed = server.failure or f"initialization failed: {exc.error.message}"
            except (ValidationError, RuntimeError) as exc:
                failed = server.failure or f"initialization failed: {type(exc).__name__}"
        if scope.cancelled_caught:
            failed = server.failure or f"the server did not finish initialization within {self.timeout_seconds} s"
        if failed is not None:
            return failed
        try:
            await self._read(session, "tools")
        except UpstreamServerError as exc:
            return exc.message
        return None

    def _require_ready(self) -> _Session:
        session = self._session
        if self.state is not ConnectionState.READY or session is None or self._server is None:
            raise UpstreamServerError(
                f"{self.server_id}: the connection is {self.state.value}"
                + (f" ({self.error})" if self.error else "")
                + "; start a new task to reconnect",
                server=self.server_id,
            )
        return session

    # -- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], *, generation: int | None = None) -> dict[str, Any]:
        """Send one ``tools/call`` and return the redacted result; never retried (CLI-14, CLI-15).

        With ``generation`` (the :attr:`tools_generation` the call was resolved against), a pending
        revalidation is waited for first, and a changed catalog or a tool no longer listed
        refuses the call before anything is sent (CW-05).

        Returns:
            ``{"is_error": bool, "content": [blocks], "structured_content": any | None}`` with
            the server's blocks and structured data as sent (configured values redacted).

        Raises:
            CallRefused: the server answered with a JSON-RPC error (the connection stays usable).
            CatalogChanged: the tools changed since ``generation``; nothing was sent (CW-05).
            UpstreamServerError: the connection is not ready or failed, the call timed out, the
                server closed the connection, sent a malformed result or asked for more input.
        """
        session = self._require_ready()
        if generation is not None:
            tools = await self.fresh_tools()
            if generation != self.tools_generation or not any(t.get("name") == tool for t in tools):
                raise CatalogChanged(
                    f"{self.server_id}: the server's tools changed: retry the call (nothing was sent)",
                    server=self.server_id,
                )
        server = self._server
        if isinstance(server, StreamableHttpClient):
            self._check_headers(session, server, tool, arguments)
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments))
        result = await self.send(request, _CALL_RESULT, "tools/call", "the call")
        if isinstance(result, types.InputRequiredResult) or result.result_type != "complete":
            raise UpstreamServerError(
                f"{self.server_id}: the tool asked for further input (a task continuation); this client refuses it",
                server=self.server_id,
            )
        return self.redactor.redact(
            {
                "is_error": bool(result.is_error),
                "content": [
                    block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in result.content
                ],
                "structured_content": result.structured_content,
            }
        )

    async def send(self, request: Any, adapter: TypeAdapter[Any], method: str, what: str) -> Any:
        """Send one request within ``timeout_seconds`` and return its validated result; never retried.

        Raises:
            CallRefused: the server answered with a JSON-RPC error (the connection stays usable).
            UpstreamServerError: the connection is not ready or failed, the request timed out, the
                server closed the connection or sent a malformed result (which fails it).
        """
        session = self._require_ready()
        server = self._server
        assert server is not None
        result: Any = None
        try:
            # The deadline is ours, not the SDK's: an error reply carrying the SDK's own timeout or
            # closed code (-32001, -32000) must read as the server's answer, not as either event.
            with anyio.move_on_after(self.timeout_seconds):
                result = await session.send_request(request, adapter)
        except MCPError as exc:
            if server.failure or server.failed.is_set() or self._close.is_set():
                reason = server.failure or "the server closed the connection"
                self._set_failed(reason)
                raise UpstreamServerError(
                    f"{self.server_id}: {self.redactor.text(reason)} during {what}; it may have had effects "
                    "and is not retried",
                    server=self.server_id,
                ) from None
            raise CallRefused(
                f"{self.server_id}: the server answered {what} with JSON-RPC error {exc.error.code}: "
                + self.redactor.text(exc.error.message),
                server=self.server_id,
                error_code=exc.error.code,
            ) from None
        except ValidationError:
            self._set_failed(f"the server sent a malformed {method} result")
            raise UpstreamServerError(
                f"{self.server_id}: the server sent a malformed {method} result", server=self.server_id
            ) from None
        if result is None:
            raise UpstreamServerError(
                f"{self.server_id}: {what} did not finish within {self.timeout_seconds} s; it may have had "
                "effects and is not retried",
                server=self.server_id,
            )
        return result

    def _check_headers(
        self, session: _Session, server: StreamableHttpClient, tool: str, arguments: dict[str, Any]
    ) -> None:
        """Refuse a call whose protocol headers would pass MCP_HTTP_HEADERS_MAX_BYTES; nothing is sent (CLI-17)."""
        extra = {"mcp-method": "tools/call", "mcp-name": encode_header_value(tool)}
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            extra.update(session._resolve_param_headers(tool, arguments))  # noqa: SLF001 - the SDK's own mapping
        if server.request_headers_size(extra) > server.limits.headers_max_bytes:
            raise UpstreamServerError(
                f"{self.server_id}: the call's protocol headers would be larger than "
                f"{server.limits.headers_max_bytes} bytes; nothing was sent",
                server=self.server_id,
            )

    def stderr_text(self) -> str:
        """The server's captured stderr tail, redacted (for diagnostics; never stored in task history)."""
        return "" if self._server is None else self.redactor.text(self._server.stderr_text())
