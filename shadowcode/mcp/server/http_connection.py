"""One connection of the HTTP gateway, read by an asyncio protocol with ``h11`` (GW-04, GW-07, GW-08).

A connection carries at most one request and moves through four phases, in this order:

* accept: a connection that would be one more than ``connections_max`` is refused 429;
* ``HEAD``: the request line and headers must be complete within ``header_deadline_seconds``
  of the accept and hold at most ``header_max_bytes`` (408, 431; a malformed head is 400).
  Once the head is in, in order: the request rate (429), :func:`guard_head`, a declared
  ``Content-Length`` over ``body_max_bytes`` (413), then ``100 Continue`` if the client asks;
* ``BODY``: the body must be complete within ``body_deadline_seconds`` of the head's end and
  hold at most ``body_max_bytes``, declared or chunked (408, 413; a peer closing early is 400);
* ``CALL``: the gateway runs the request. Reading stops, and neither the peer's EOF nor its
  reset reaches the call: a started call runs to its end (GW-08);
* ``CLOSING``: the answer is written with one write and the connection closed; a peer that
  does not take it within ``request_deadline_seconds`` is cut off. A streamed answer (an
  event stream: ``subscriptions/listen``, a tool call's progress) is written piece by piece
  as the call sends it (:meth:`GatewayConnection.stream`), its body ending with the
  connection's close; the gateway bounds its bytes and its time as for any answer.

A refusal is written with one write and followed by EOF; what the peer still sends is read
and dropped until it closes or ``linger_seconds`` pass, so it reads the answer rather than a
reset. Each deadline is a single ``loop.call_later`` timer, cancelled when the connection ends.
"""

from __future__ import annotations

import asyncio
import enum
import sys
from collections.abc import Callable
from typing import Protocol, cast

import h11

from shadowcode.mcp.server.http_guard import (
    BAD_REQUEST,
    BUSY,
    HEAD_TOO_LARGE,
    TIMED_OUT,
    TOO_LARGE,
    GatewayLimits,
    Refusal,
    RequestRate,
    guard_head,
    refusal_bytes,
    sent_fields,
)

__all__ = ["ConnectionFront", "GatewayConnection", "Phase"]


class Phase(enum.Enum):
    """Where a connection is in its one request (GW-07)."""

    HEAD = "head"
    BODY = "body"
    CALL = "call"
    CLOSING = "closing"


class ConnectionFront(Protocol):
    """What a connection needs of the server that accepted it (the gateway's ``GatewayServer``).

    Declared here so the connection depends on no server module: the server imports this
    module, never the other way round.

    Attributes:
        limits: the gateway's limits.
        rate: the shared request-rate window (GW-07).
        connections: connections holding a slot now; a connection adds and removes its own.
        stopping: True once the server is ending; a connection accepted then is aborted.
        token: the bearer token every request must carry.
        bound_host: the IP literal the listener is bound to.
        port: the port the listener is bound to.
    """

    limits: GatewayLimits
    rate: RequestRate
    connections: int
    stopping: bool
    token: bytes
    bound_host: str
    port: int

    def forget(self, conn: GatewayConnection) -> None:
        """Drop ``conn``, whose socket is closed, from the open connections."""
        ...

    def start_call(
        self, conn: GatewayConnection, request: h11.Request, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Run an accepted request; its answer goes back through :meth:`GatewayConnection.answered`."""
        ...


class GatewayConnection(asyncio.Protocol):
    """Reads one request under the gateway's rules and hands it to ``front`` (GW-04, GW-07, GW-08).

    Args:
        front: the server that owns the connection: its limits, request rate, connection count
            and the task group its calls run in.
    """

    def __init__(self, front: ConnectionFront) -> None:
        self.front = front
        self.limits = front.limits
        self.phase = Phase.HEAD
        self.parser = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.header_max_bytes)
        self.transport: asyncio.Transport | None = None
        self.request: h11.Request | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.head = bytearray()  # bytes received while the head is read: h11 merges some fields (GW-04)
        self.body = bytearray()
        self.counted = False  # holds one of the front's connection slots
        self.calling = False
        self.lost = False
        self.peer_eof = False
        self.gone = asyncio.Event()  # the peer's socket closed (reset, or closed after our answer)
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Count the connection or refuse it 429 when ``connections_max`` are open; start the head's deadline."""
        self.transport = cast(asyncio.Transport, transport)
        if self.front.stopping:
            self.transport.abort()
            return
        if self.front.connections >= self.limits.connections_max:
            sys.stderr.write("shadowcode gateway: refusing a connection: too many open connections\n")
            self._refuse(BUSY)
            return
        self.front.connections += 1
        self.counted = True
        self._set_timer(self.limits.header_deadline_seconds, self._timed_out)

    def data_received(self, data: bytes) -> None:
        """Feed the parser while the request is arriving; drop anything after it."""
        if self.phase is Phase.HEAD or self.phase is Phase.BODY:
            if self.phase is Phase.HEAD:
                self.head += data  # bounded: h11 refuses a head over header_max_bytes
            self.parser.receive_data(data)
            self._advance()

    def eof_received(self) -> bool:
        """Note the peer's EOF; the connection stays open for the answer (GW-08)."""
        self.peer_eof = True
        if self.phase is Phase.HEAD or self.phase is Phase.BODY:
            self.parser.receive_data(b"")
            self._advance()
        elif self.phase is Phase.CLOSING and self.transport is not None:
            self.transport.close()  # a refused peer has read what it wanted
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the timer and give back the slot, unless a call still runs (it keeps it until its end)."""
        self.lost = True
        self.gone.set()
        self._cancel_timer()
        if not self.calling:
            self._release()
        self.front.forget(self)

    # --- called by the front -------------------------------------------------------------------

    def answered(self, answer: bytes | None) -> None:
        """Write ``answer`` whole with one write and close; None (the gateway is stopping) just aborts.

        The peer has ``request_deadline_seconds`` to take the answer before the connection is cut (GW-07).
        """
        self.calling = False
        if self.lost:
            self._release()
            return
        transport = self._transport()
        if answer is None:
            transport.abort()
            return
        self.phase = Phase.CLOSING
        transport.write(answer)
        transport.close()
        if transport.get_write_buffer_size():  # the peer has not taken it all yet
            self._set_timer(self.limits.request_deadline_seconds, transport.abort)

    def stream(self, data: bytes) -> None:
        """Write one piece of a streamed answer (the head first); dropped once the peer is gone."""
        self.phase = Phase.CLOSING
        if not self.lost:
            self._transport().write(data)

    def watch_peer(self) -> None:
        """Read again, dropping what arrives, so the peer's close is seen (``gone``): for a listen stream."""
        if not self.lost:
            self._transport().resume_reading()

    def stream_ended(self) -> None:
        """The streamed answer is complete: close the connection (its end is the body's end)."""
        self.calling = False
        if self.lost:
            self._release()
            return
        transport = self._transport()
        transport.close()
        if transport.get_write_buffer_size():
            self._set_timer(self.limits.request_deadline_seconds, transport.abort)

    def abort(self) -> None:
        """Close the connection at once, whatever its phase (the gateway is stopping)."""
        if self.transport is not None:
            self.transport.abort()

    # --- the request ---------------------------------------------------------------------------

    def _advance(self) -> None:
        try:
            while self.phase is Phase.HEAD or self.phase is Phase.BODY:
                event = self.parser.next_event()
                if event is h11.NEED_DATA:
                    return
                if self.phase is Phase.HEAD:
                    self._on_head(event)
                else:
                    self._on_body(event)
        except h11.RemoteProtocolError as exc:
            self._refuse(HEAD_TOO_LARGE if exc.error_status_hint == 431 else BAD_REQUEST)

    def _on_head(self, event: object) -> None:
        transport = self._transport()
        head, self.head = bytes(self.head), bytearray()
        if not isinstance(event, h11.Request):
            self.phase = Phase.CLOSING
            transport.close()  # the peer closed without sending a request
            return
        limits = self.limits
        self._set_timer(limits.body_deadline_seconds, self._timed_out)
        if not self.front.rate.admit():
            sys.stderr.write("shadowcode gateway: refusing a request: over the request rate\n")
            self._refuse(BUSY)
            return
        headers = [(bytes(name), bytes(value)) for name, value in event.headers]
        front = self.front
        refusal = guard_head(
            bytes(event.method),
            bytes(event.target),
            sent_fields(head),
            bound_host=front.bound_host,
            port=front.port,
            token=front.token,
        )
        if refusal is not None:
            self._refuse(refusal)
            return
        declared = [value for name, value in headers if name == b"content-length"]
        if declared and int(declared[0]) > limits.body_max_bytes:
            self._refuse(TOO_LARGE)
            return
        self.request, self.headers, self.phase = event, headers, Phase.BODY
        if self.parser.client_is_waiting_for_100_continue:
            transport.write(self.parser.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")

    def _on_body(self, event: object) -> None:
        if isinstance(event, h11.Data):
            if len(self.body) + len(event.data) > self.limits.body_max_bytes:
                self._refuse(TOO_LARGE)
                return
            self.body += event.data
        elif isinstance(event, h11.EndOfMessage) and self.request is not None:
            self._cancel_timer()
            self.phase = Phase.CALL
            self.calling = True
            self._transport().pause_reading()
            self.front.start_call(self, self.request, self.headers, bytes(self.body))
        else:
            self._refuse(BAD_REQUEST)  # the peer closed before the body was complete

    # --- refusals, timers, the slot ------------------------------------------------------------

    def _refuse(self, refusal: Refusal) -> None:
        """Answer ``refusal`` with one write and EOF, then drain the peer for at most ``linger_seconds``."""
        transport = self._transport()
        self.phase = Phase.CLOSING
        transport.write(refusal_bytes(refusal))
        if self.peer_eof:
            transport.close()
        else:
            transport.write_eof()
        self._set_timer(self.limits.linger_seconds, transport.abort)

    def _timed_out(self) -> None:
        self._timer = None
        if self.phase is Phase.HEAD or self.phase is Phase.BODY:
            self._refuse(TIMED_OUT)

    def _set_timer(self, seconds: float, callback: Callable[[], object]) -> None:
        self._cancel_timer()
        self._timer = asyncio.get_running_loop().call_later(seconds, callback)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _release(self) -> None:
        if self.counted:
            self.counted = False
            self.front.connections -= 1

    def _transport(self) -> asyncio.Transport:
        assert self.transport is not None, "used before connection_made"
        return self.transport
