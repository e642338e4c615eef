"""``tools/call`` answered beside the SDK's dispatch on an initialized stdio session (issue 15).

The SDK validates every request twice over pydantic models, builds a request context and a
session object, runs its middleware chain and sieves the result for the negotiated revision;
for a tool call that is most of the round trip. On a connection whose ``initialize`` the SDK
has answered at a handshake-era revision (2024-11-05 to 2025-11-25), the stdio transport
offers each frame here first, and a ``tools/call`` in the plain shape is run through the same
:class:`~shadowcode.mcp.server.tool_calls.ToolCalls` as the SDK's handler (one in-flight count, one
deadline, one result limit per connection: SRV-25) and answered with the bytes the SDK would
have sent, as a JSON document (a test compares the two paths).

Everything else goes to the SDK unchanged: any other method, a frame this module does not
take apart with certainty (``NaN``, members beyond ``jsonrpc``, ``id``, ``method`` and
``params``; params beyond ``name``, ``arguments`` and ``_meta``; a 2026-07-28 envelope in
``_meta``; an id already running here), an unknown tool, and every request of a 2026-07-28
session. ``notifications/cancelled`` for a call running here cancels it and, as in the SDK,
the call is never answered; the notification still reaches the SDK. A call whose ``_meta``
carries a progress token sends its ``notifications/progress`` through the transport as the
SDK would (SRV-28); over the gateway such a call is left to the SDK, which can stream them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from shadowcode.json_values import json_object
from shadowcode.mcp.server.tool_calls import Progress, TooManyOperations, json_text
from shadowcode.mcp.server.tools import tool_named

if TYPE_CHECKING:
    import mcp_types as types

    from shadowcode.mcp.server.tool_calls import ToolCalls, ToolOutcome
else:
    from shadowcode.mcp.server.lazy_modules import lazy_module

    types = lazy_module("mcp_types")  # imported on first use: lazy_start

__all__ = ["HANDSHAKE_REVISIONS", "Answer", "DirectToolCalls", "Notify"]

HANDSHAKE_REVISIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
"""The revisions negotiated by ``initialize`` (the SDK's known ones before 2026, a test checks);
2026-07-28 sessions are served by the SDK alone."""

Notify = Callable[[bytes], Awaitable[object]]
"""Writes one notification frame (UTF-8 JSON, newline included) to the caller's stream."""

Answer = Callable[[Notify | None], Awaitable[bytes | None]]
"""Runs a claimed call; returns its response frame, or None for a call its client cancelled."""

_TOP_KEYS = frozenset(("jsonrpc", "id", "method", "params"))
_PARAM_KEYS = frozenset(("name", "arguments", "_meta"))
_MODERN_META_PREFIX = "io.modelcontextprotocol/"


def _refuse_constant(_name: str) -> object:
    raise ValueError("NaN and Infinity are not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""Made once: ``json.loads`` builds a decoder per call when given options."""


def _message(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON-RPC 2.0 object with no member but the four, or None (UTF-8 only)."""
    try:
        doc = json_object(_DECODER.decode(data.decode("utf-8")))
    except (ValueError, RecursionError):
        return None
    if doc is None or doc.get("jsonrpc") != "2.0" or not doc.keys() <= _TOP_KEYS:
        return None
    return doc


def _usable_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _plain_meta(value: object) -> bool:
    """Whether a request's ``_meta`` is one the SDK would accept on a handshake-era session."""
    if value is None:
        return True
    meta = json_object(value)
    if meta is None:
        return False
    if "progressToken" in meta and not _usable_id(meta["progressToken"]):
        return False
    return not any(key.startswith(_MODERN_META_PREFIX) for key in meta)


class DirectToolCalls:
    """One connection's direct ``tools/call`` path; the stdio transport drives it.

    The transport calls :meth:`take` with each frame before the SDK sees it and
    :meth:`observe` with each message the SDK sends.
    """

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self.revision: str | None = None  # set once initialize was answered at a handshake-era revision
        self.read_only = False  # take only read-only tools: the SDK is not loaded yet (lazy_start)
        self._initialize_ids: set[object] = set()
        self._running: dict[object, anyio.CancelScope] = {}

    def observe(self, message: types.JSONRPCMessage) -> None:
        """Note the SDK's answer to an ``initialize`` this path saw; a success opens the path (SRV-03)."""
        if not self._initialize_ids or not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id not in self._initialize_ids:
            return
        self._initialize_ids.discard(message.id)
        if isinstance(message, types.JSONRPCResponse):  # a refused initialize changes nothing
            revision = message.result.get("protocolVersion")
            self.revision = revision if revision in HANDSHAKE_REVISIONS else None

    def take(self, line: bytes) -> tuple[object, Answer] | None:
        """Claim one frame: ``(request id, answer)`` for a tool call to run here, else None.

        ``answer(notify)`` runs the tool under SRV-25's operation limits and returns the response
        frame (UTF-8 JSON, newline included), or None when the call was cancelled and must not
        be answered; ``notify`` writes a notification frame the call sends before its answer
        (its progress, SRV-28). A ``notifications/cancelled`` for a call running here cancels it and is
        still returned as None (the SDK sees it too). Never raises for a bad frame: what it
        cannot take apart with certainty is left to the SDK (None).
        """
        if b'"initialize"' not in line and b'"tools/call"' not in line and b'"notifications/cancelled"' not in line:
            return None
        doc = _message(line)
        if doc is None:
            return None
        method = doc.get("method")
        if method == "notifications/cancelled":
            params = json_object(doc.get("params"))
            if "id" not in doc and params is not None:
                scope = self._running.get(params.get("requestId"))
                if scope is not None:
                    scope.cancel()
            return None
        if method == "initialize":
            if _usable_id(doc.get("id")):
                self._initialize_ids.add(doc.get("id"))
            return None
        if self.revision is None:
            return None
        return self._claim(doc, self._running)

    def take_stateless(self, body: bytes) -> tuple[object, Answer] | None:
        """:meth:`take` for one stateless HTTP request whose revision header is a handshake-era one (the gateway).

        Such a request is never cancelled (GW-08), and its id is its own: other requests may use
        it too. ``answer(None)`` returns the JSON-RPC response (newline included) the SDK would
        send as the body of a 200 ``application/json`` answer (GW-05). A call with a progress
        token is left to the SDK, which streams its progress (SRV-28).
        """
        doc = _message(body) if b'"tools/call"' in body else None
        if doc is None or _progress_token(doc.get("params")) is not None:
            return None
        return self._claim(doc, None)

    def _claim(
        self, doc: dict[str, Any], running: dict[object, anyio.CancelScope] | None
    ) -> tuple[object, Answer] | None:
        """A ``tools/call`` in the plain shape, ready to run (noted in ``running`` while it runs); else None."""
        request_id = doc.get("id")
        params = json_object(doc.get("params"))
        if doc.get("method") != "tools/call" or not _usable_id(request_id):
            return None
        if running is not None and request_id in running:
            return None
        if params is None or not params.keys() <= _PARAM_KEYS:
            return None
        arguments = json_object(params.get("arguments"))
        name = params.get("name")
        spec = tool_named(name) if isinstance(name, str) else None
        if spec is None or not (params.get("arguments") is None or arguments is not None):
            return None
        if self.read_only and not spec.hints.read_only:
            return None
        if not _plain_meta(params.get("_meta")):
            return None
        scope = anyio.CancelScope()
        if running is not None:
            running[request_id] = scope
        token = _progress_token(params)

        async def answer(notify: Notify | None) -> bytes | None:
            progress: Progress | None = None
            if token is not None and notify is not None:

                async def send_progress(value: float, message: str) -> None:
                    body = {"progressToken": token, "progress": value, "message": message}
                    await notify(_frame({"jsonrpc": "2.0", "method": "notifications/progress", "params": body}))

                progress = send_progress

            try:
                outcome = await self.calls.run(spec, arguments or {}, scope, progress)
            except TooManyOperations as exc:
                return _frame({"jsonrpc": "2.0", "id": request_id, "error": exc.error_data()})
            finally:
                if running is not None:
                    del running[request_id]
            if outcome is None:
                return None  # cancelled by the client: never answered
            return _result_frame(request_id, outcome)

        return request_id, answer


def _progress_token(params: object) -> object | None:
    """The progress token in a request's ``params._meta`` (already checked usable by :func:`_plain_meta`), or None."""
    request = json_object(params)
    meta = json_object(request.get("_meta")) if request is not None else None
    return meta.get("progressToken") if meta is not None else None


def _result_frame(request_id: object, outcome: ToolOutcome) -> bytes:
    """The response carrying a ``CallToolResult`` as the SDK writes it on a handshake-era session.

    A result's structured content is the JSON text already encoded by the tool runner, not a
    second encoding of the same document; its text block is the runner's summary (SRV-04).
    """
    head = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"content":[{{"type":"text","text":'
    text = json_text(outcome.text)
    if outcome.is_error:
        return f'{head}{text}}}],"isError":true}}}}\n'.encode()
    return f'{head}{text}}}],"structuredContent":{outcome.json},"isError":false}}}}\n'.encode()


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
