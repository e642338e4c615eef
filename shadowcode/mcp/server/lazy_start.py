"""A stdio session served before the SDK is loaded, until it asks for something only the SDK serves (issue 32).

Importing the SDK's server takes most of a second and most of a session's memory: it loads
its HTTP stack, its CLI and its tracing even for stdio. A session that only discovers the
server and calls read-only tools needs none of it. So ``mcp serve`` over stdio opens the
engine and starts serving at once, and the stdio transport offers each frame here first:

* ``initialize`` (as the first request, at a recorded revision), ``ping``, the five listings
  and ``server/discover`` are answered from the build-time recording
  (:class:`~shadowcode.mcp.server.early_answers.EarlyAnswers`, the same answers and the same
  rules as the stdio front and the relay; a test compares them with the SDK's);
* a ``tools/call`` of a read-only tool (the ``readOnlyHint`` ones: status, models, sessions,
  review, tools, doctor, why, sqlite, checkpoint) runs on the direct path
  (:mod:`shadowcode.mcp.server.direct_calls`), under the connection's one in-flight count,
  deadline and result limit (SRV-25); those tools touch no job and ask the host nothing;
* ``notifications/initialized`` is kept for the SDK; ``notifications/cancelled`` reaches the
  direct path, which cancels its own calls (nothing else can be running).

The first frame of any other kind (another tool, a resource, a prompt, the Tasks extension,
logging, a malformed frame, a request before ``initialize``) wakes the SDK: the launcher
builds the full server, the transport feeds it the kept handshake under ids of ours (its
answers are dropped, never sent), then that frame and every later one. From then on the
session is exactly the full server's, with the same limits already counted: the transport's
SRV-25 limits hold from the first byte on either side of the wake, and the SDK sees the
session state (revision, client capabilities) the client set.

Nothing kept here grows with the session: one ``initialize`` and one ``initialized`` at most.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import anyio

from shadowcode.json_values import json_object
from shadowcode.limits import OPERATION_DEADLINE_SECONDS, OPERATIONS_IN_FLIGHT_MAX, RESULT_MAX_BYTES
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS, DirectToolCalls
from shadowcode.mcp.server.discovery import Manifest
from shadowcode.mcp.server.early_answers import EarlyAnswers
from shadowcode.mcp.server.tool_calls import Operations, ToolCalls

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    from shadowcode.mcp.server.context import ServerContext

__all__ = ["LAZY_ID_PREFIX", "LazyStart", "serve_when_needed", "session_calls"]

LAZY_ID_PREFIX = "shadowcode-lazy-"
"""The ids under which the kept handshake reaches the SDK; its answers to them are dropped."""

_HANDLED_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/cancelled"})


class LazyStart:
    """One stdio session's SDK-free start; the transport drives it, the launcher waits on :attr:`needed`.

    Args:
        manifest: the recorded discovery answers.
        direct: the connection's direct ``tools/call`` path; it takes read-only tools only
            until the SDK wakes.
    """

    def __init__(self, manifest: Manifest, direct: DirectToolCalls) -> None:
        self.early = EarlyAnswers(manifest, LAZY_ID_PREFIX)
        self.direct = direct
        direct.read_only = True
        self.woken = False
        self.needed = anyio.Event()
        """Set when the SDK must serve (:attr:`woken`) or the client's side ended without it."""
        self._handshake: list[bytes] = []

    def take(self, line: bytes) -> tuple[bytes | None, bool]:
        """Offer one frame (newline removed) that the direct path did not take.

        Returns:
            ``(write, wake)``: ``write`` is a frame to send the client now (newline included),
            or None; ``wake`` is True when the SDK must serve this frame and every later one:
            call :meth:`wake` and feed it what that returns first.
        """
        revision_before = self.early.revision
        answer, forward, request = self.early.take(line)
        if answer is not None and request is None:  # answered from the recording
            if revision_before is None and self.early.revision is not None:
                self._handshake.append(forward)  # the initialize, under an id of ours
                self.direct.revision = self.early.revision if self.early.revision in HANDSHAKE_REVISIONS else None
            else:
                self.early.not_sent()  # only the initialize reaches the SDK; the rest is never sent on
            return answer, False
        if answer is not None:  # a subscriptions/listen acknowledged here: the SDK serves its stream
            return answer, True
        method = _notification_method(line) if request is None else None
        if method in _HANDLED_NOTIFICATIONS:
            if method == "notifications/initialized":
                if self.early.initialized and len(self._handshake) == 1:
                    self._handshake.append(line)
                    return None, False
                return None, True
            return None, False
        return None, True

    def wake(self) -> list[bytes]:
        """Hand the session to the SDK: returns the kept handshake frames to feed it first."""
        self.woken = True
        self.early.stop()
        self.direct.read_only = False
        self.needed.set()
        kept, self._handshake = self._handshake, []
        return kept

    def ended(self) -> None:
        """The client's side ended (EOF or a closed connection) before the SDK was needed."""
        self.needed.set()

    def drops(self, payload: bytes) -> bool:
        """Whether ``payload`` (one frame the SDK wrote) answers the kept handshake, or
        acknowledges a listen stream already acknowledged here: never sent to the client."""
        return self.woken and self.early.drop(payload)


def _notification_method(line: bytes) -> str | None:
    """The method of a JSON-RPC notification frame, else None."""
    try:
        message = json_object(json.loads(line))
    except (ValueError, RecursionError):
        return None
    if message is None or message.get("jsonrpc") != "2.0" or "id" in message:
        return None
    method = message.get("method")
    return method if isinstance(method, str) else None


def session_calls(ctx: ServerContext, manifest: Manifest | None) -> tuple[ToolCalls, DirectToolCalls, LazyStart | None]:
    """One stdio connection's tool calls (SRV-25's limits), their direct path, and its SDK-free start.

    Args:
        ctx: the connection's fixed project, engine and flags.
        manifest: the recorded discovery answers; None (a build without them) serves with the
            SDK from the first frame.

    Returns:
        ``(calls, direct, lazy)``: give ``direct`` and ``lazy`` to the stdio transport, then
        ``calls`` and ``lazy`` to :func:`serve_when_needed`.
    """
    calls = ToolCalls(ctx, Operations(OPERATIONS_IN_FLIGHT_MAX), OPERATION_DEADLINE_SECONDS, RESULT_MAX_BYTES)
    direct = DirectToolCalls(calls)
    return calls, direct, LazyStart(manifest, direct) if manifest is not None else None


async def serve_when_needed(
    ctx: ServerContext,
    calls: ToolCalls,
    lazy: LazyStart | None,
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Serve the transport's streams with the SDK's server once the session needs it (at once without ``lazy``).

    Returns when the session ends; at once when the client's side ended before the SDK was needed.
    """
    if lazy is not None:
        try:
            await lazy.needed.wait()
        finally:
            if not lazy.woken:  # ended, or cancelled (a limit closed the connection)
                read_stream.close()  # the SDK's ends of the streams, which its server closes when it runs
                write_stream.close()
        if not lazy.woken:
            return
    from shadowcode.mcp.server.app import build_session

    server, _ = build_session(ctx, calls=calls)
    await server.run(read_stream, write_stream, server.create_initialization_options())
