"""One connection to an external MCP server (stdio or Streamable HTTP), under the SDK's client session.

Covers CLI-08, CLI-13, CLI-14, CLI-15, CLI-16, CLI-18, CLI-19, CW-02, CW-05, CW-06, CW-07, CW-10.

A :class:`Connection` runs in a task of its own (started by :meth:`Connection.start`): it takes
one of the process-wide MCP_CONNECTIONS_MAX permits, starts the server through
:class:`~shadowcode.mcp.client.stdio.StdioServer` (``argv``) or connects through
:class:`~shadowcode.mcp.client.streamable_http.StreamableHttpClient` (``endpoint``), negotiates
(both transports: the 2026-07-28 ``server/discover`` probe first, falling back to ``initialize``
when the server answers it with anything but a modern discovery result, see
:mod:`~shadowcode.mcp.client.negotiation`; on stdio the probe is bounded by the limits'
``probe_seconds``, and a server whose transport fails during the probe is started once more
and goes straight to ``initialize``), reads the tool catalog within one deadline (bounded pages,
cursors, tools and bytes; duplicate names and repeated cursors fail; see
:func:`~shadowcode.mcp.client.catalog.read_list`) and then serves calls from any task until
:meth:`Connection.close`. The permit is released only after cleanup.

The client advertises no capability: no roots, sampling, elicitation or tasks. A sampling or
roots request from the server is answered with an error and elicitation is declined. A tool
result asking for more input (a task continuation) is refused. A failed call is reported and
never retried; a connection that failed stays failed, and its old catalog is never served.
A JSON-RPC error answering a call is that call's error (:class:`CallRefused`, with its code and
redacted message): it is not a transport failure and the connection stays usable (CLI-14).

Timeouts (CW-07, :class:`~shadowcode.mcp.client.timeouts.Timeouts`): ``connect`` bounds starting
or reaching the server, initialization and discovery together (and each later listing as a
whole); ``read`` bounds each list page within it and each ``resources/read``; ``call`` bounds
each ``tools/call`` and ``prompts/get``. A request that runs out of time is abandoned:
``notifications/cancelled`` goes out for its request id, the connection stays READY, and a
reply arriving later is dropped (its request id is no longer awaited; ids are never reused).
A tool the definition's filters hide (``tool_filter``, CW-02) is refused before anything is
sent.
Responses are not cached. Configured values are redacted from the catalog and from results;
which values those are is decided above this package and passed in as a :class:`Redactor`.

Freshness (CW-05): while READY, the catalog is revalidated in place (same bounds and timeouts as
at connect) when the server sends ``notifications/tools/list_changed`` (or the resource or prompt
variant), or when the earliest ``ttlMs`` of a list's pages, clamped, has passed. One
revalidation runs at a time, at least ``revalidate_interval_seconds`` after the previous one;
notices arriving meanwhile are folded into it. A changed tool list bumps
:attr:`Connection.tools_generation`; a call resolved against an older generation is refused
with :class:`CatalogChanged`. A revalidation that fails retires the connection (FAILED): the
stale catalog is never served. Resources, templates and prompts are listed on first use
(:meth:`Connection.listing`) and read through :mod:`shadowcode.mcp.client.reads` (CW-06).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import encode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from shadowcode.errors import ToolError, UpstreamServerError
from shadowcode.limits import MCP_TIMEOUT_DEFAULT_SECONDS
from shadowcode.mcp.client.catalog import CatalogLimits
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.freshness import CatalogFreshness
from shadowcode.mcp.client.negotiation import BoundedSession, ProbeEnded, negotiate
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.stdio import ClientLimits, StdioServer
from shadowcode.mcp.client.streamable_http import HttpLimits, StreamableHttpClient
from shadowcode.mcp.client.timeouts import Timeouts

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
        timeout_seconds: the one deadline for everything when ``timeouts`` is not given (``timeout_sec``).
        timeouts: the connect, call and read deadlines (CW-07); default: ``timeout_seconds`` for each.
        tool_filter: the definition's tool filters (CW-02): a call of a tool it rejects is refused
            before anything is sent. ``tools`` stays the server's whole listing.
        redactor: removes configured values from the catalog, results and stderr.
        state: the lifecycle state.
        error: why it failed, once FAILED.
        tools: the redacted tool catalog (``tools/list`` entries as JSON), replaced in place by a
            revalidation that finds it changed (CW-05).
        tools_generation: 0 at connect, one more each time a revalidation changed ``tools``.
        ttl_seconds: the clamped earliest ``ttlMs`` of the tool list's pages, or None (CW-05).
        revalidations: revalidations run so far (CW-05).
        on_tools_changed: called (in the connection's task) after a revalidation changed ``tools``.
        protocol_version: the revision negotiated (``2026-07-28`` after discovery, else what
            ``initialize`` agreed).
        fallback: why a connection that probed ended up on ``initialize`` (None when it did not).
        restarted: True when a stdio server's transport failed during the probe and the server
            was started once more for ``initialize``.
    """

    server_id: str
    argv: list[str] = field(default_factory=list[str])
    cwd: Path = field(default_factory=Path)
    env: dict[str, str] = field(default_factory=dict[str, str])
    endpoint: Endpoint | None = None
    timeout_seconds: float = MCP_TIMEOUT_DEFAULT_SECONDS
    timeouts: Timeouts | None = None
    tool_filter: Callable[[str], bool] | None = None
    redactor: Redactor = field(default_factory=Redactor)
    limits: ClientLimits = field(default_factory=ClientLimits)
    http_limits: HttpLimits = field(default_factory=HttpLimits)
    catalog_limits: CatalogLimits = field(default_factory=CatalogLimits)
    state: ConnectionState = ConnectionState.CONNECTING
    error: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    tools_generation: int = 0
    ttl_seconds: float | None = None
    revalidations: int = 0
    on_tools_changed: Callable[[], None] | None = None
    protocol_version: str | None = None
    fallback: str | None = None
    restarted: bool = False
    pid: int | None = None
    cleanup: str | None = None
    stragglers: int = 0

    def __post_init__(self) -> None:
        if self.timeouts is None:
            self.timeouts = Timeouts.single(self.timeout_seconds)
        self._limits: Timeouts = self.timeouts
        self._ready = anyio.Event()
        self._close = anyio.Event()
        self._starting = anyio.CancelScope()
        self._done = anyio.Event()
        self._session: BoundedSession | None = None
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
        """Ask the connection to stop; :meth:`wait_closed` waits for its cleanup.

        A connection still CONNECTING abandons its start-up at once (the server is cleaned up as
        usual) and ends CLOSED with the error "closed while connecting" (CW-10).
        """
        self._close.set()
        if self.state is ConnectionState.CONNECTING:
            self._starting.cancel()

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
            with self._starting:
                await self._serve()
            if self._starting.cancelled_caught and self.error is None:
                self.error = "closed while connecting"
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
        probe_failure = await self._serve_once(probe=True)
        if probe_failure is None or self._close.is_set():
            return
        # The server's transport failed while the probe was pending (it exited when probed,
        # say): start it once more, without the probe (CLI-16).
        logger.info(
            "MCP server %s: %s during server/discover; starting it again for initialize", self.server_id, probe_failure
        )
        self.restarted = True
        self.fallback = f"the server failed during server/discover ({probe_failure}) and was started again"
        await self._serve_once(probe=False)

    async def _serve_once(self, *, probe: bool) -> str | None:
        """One server process (or HTTP connection) from start to cleanup.

        Returns:
            Why the transport failed during the stdio probe (the caller starts the server again),
            else None.

        Raises:
            UpstreamServerError: it could not start, negotiate or list its tools.
        """
        server: StdioServer | StreamableHttpClient
        if self.endpoint is not None:
            server = StreamableHttpClient(
                self.endpoint, timeout_seconds=self._limits.connect, limits=self.http_limits, label=self.server_id
            )
        else:
            server = StdioServer(self.argv, self.cwd, self.env, limits=self.limits, label=self.server_id)
        self._server = server
        failed: str | None = None
        probe_ended: str | None = None
        try:
            async with server as (read, write):
                self.pid = server.pid
                session = BoundedSession(
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
                    negotiated = await self._negotiate(session, server, probe=probe)
                    failed = None if isinstance(negotiated, ProbeEnded) else negotiated
                    if isinstance(negotiated, ProbeEnded):
                        probe_ended = str(negotiated)
                    elif failed is None:
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
            self.stragglers += server.stragglers
            if server.failure and probe_ended is None:
                self._set_failed(server.failure)
        if failed is not None:
            raise UpstreamServerError(failed, server=self.server_id)
        return probe_ended

    async def _negotiate(
        self, session: BoundedSession, server: StdioServer | StreamableHttpClient, *, probe: bool
    ) -> str | ProbeEnded | None:
        """Negotiate and read the catalog; returns why it failed (ProbeEnded: during the stdio probe), or None."""
        failed: str | None = None
        connect = self._limits.connect
        stdio_probe = probe and isinstance(server, StdioServer)
        # On stdio the probe has its own bound; the handshake's deadline starts once it is settled.
        probe_seconds = min(self.limits.probe_seconds, connect) if stdio_probe else 0.0
        deadline = anyio.current_time() + connect + probe_seconds
        with anyio.move_on_after(connect + probe_seconds) as scope:
            if stdio_probe:
                session.probe_seconds = probe_seconds
                session.transport_failure = lambda: server.failure if server.failed.is_set() else None

                def settled() -> None:
                    nonlocal deadline
                    deadline = anyio.current_time() + connect
                    scope.deadline = deadline

                session.on_probe_settled = settled
            try:
                await negotiate(session, probe=probe)
                self.protocol_version = session.protocol_version
                self.fallback = self.fallback or session.fallback
            except ProbeEnded as exc:
                return exc
            except MCPError as exc:
                failed = server.failure or f"initialization failed: {exc.error.message}"
            except (ValidationError, RuntimeError) as exc:
                failed = server.failure or f"initialization failed: {type(exc).__name__}"
        if scope.cancelled_caught:
            failed = server.failure or f"the server did not finish initialization within {connect} s"
        if failed is not None:
            return failed
        try:
            await self._read(session, "tools", deadline=deadline)
        except UpstreamServerError as exc:
            return exc.message
        return None

    def _require_ready(self) -> BoundedSession:
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
            ToolError: the definition's tool filters hide ``tool`` (nothing is sent, CW-02).
            UpstreamServerError: the connection is not ready or failed, the call timed out (it was
                cancelled; the connection stays usable, CW-07), the server closed the connection,
                sent a malformed result or asked for more input.
        """
        session = self._require_ready()
        if self.tool_filter is not None and not self.tool_filter(tool):
            raise ToolError(
                f"{self.server_id}: the tool {tool!r} is hidden by the definition's enabled_tools or "
                "disabled_tools; nothing was sent"
            )
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
        result = await self.send(request, _CALL_RESULT, "tools/call", "the call", timeout="call")
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

    async def send(
        self, request: Any, adapter: TypeAdapter[Any], method: str, what: str, *, timeout: Literal["call", "read"]
    ) -> Any:
        """Send one request within the ``call`` or ``read`` timeout and return its validated result; never retried.

        ``timeout`` names the bound (CW-07): ``call`` for ``tools/call`` and ``prompts/get``,
        ``read`` for ``resources/read``.

        Raises:
            CallRefused: the server answered with a JSON-RPC error (the connection stays usable).
            UpstreamServerError: the connection is not ready or failed, the request timed out (it
                was cancelled; the connection stays usable), the server closed the connection or
                sent a malformed result (which fails it).
        """
        session = self._require_ready()
        server = self._server
        assert server is not None
        seconds = self._limits.call if timeout == "call" else self._limits.read
        result: Any = None
        try:
            # The deadline is ours, not the SDK's: an error reply carrying the SDK's own timeout or
            # closed code (-32001, -32000) must read as the server's answer, not as either event.
            # Abandoning the request sends notifications/cancelled for its id and drops a late
            # reply (the SDK's courtesy cancel); the connection stays usable (CW-07).
            with anyio.move_on_after(seconds):
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
                f"{self.server_id}: {what} did not finish within {seconds} s; it may have had effects and is not "
                f"retried ({timeout}_timeout: the request was cancelled, the connection is kept)",
                server=self.server_id,
            )
        return result

    def _check_headers(
        self, session: BoundedSession, server: StreamableHttpClient, tool: str, arguments: dict[str, Any]
    ) -> None:
        """Refuse a call whose protocol headers would pass MCP_HTTP_HEADERS_MAX_BYTES; nothing is sent (CLI-17)."""
        extra = {"mcp-method": "tools/call", "mcp-name": encode_header_value(tool)}
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # The SDK computes its Mcp-Param-* headers only in this private method; no public form exists.
            extra.update(session._resolve_param_headers(tool, arguments))  # pyright: ignore[reportPrivateUsage]
        if server.request_headers_size(extra) > server.limits.headers_max_bytes:
            raise UpstreamServerError(
                f"{self.server_id}: the call's protocol headers would be larger than "
                f"{server.limits.headers_max_bytes} bytes; nothing was sent",
                server=self.server_id,
            )

    def stderr_text(self) -> str:
        """The server's captured stderr tail, redacted (for diagnostics; never stored in task history)."""
        return "" if self._server is None else self.redactor.text(self._server.stderr_text())
