"""The byte plumbing shared by the two standard-library stdio paths of ``mcp serve``: the front and the relay.

:class:`Stdout` writes whole frames to fd 1 from any thread and tells a stuck or broken client
apart (SRV-25's write deadline); :class:`ClientLines` cuts the client's bytes into whole lines
while they are still looked at, passing a line too long to look at through as it comes;
:class:`ServerOutput` copies what the server behind writes to stdout until the server writes
to the client itself (:mod:`shadowcode.mcp.server.handover`).

This module imports only the standard library and :mod:`shadowcode.limits`; keep it that way.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time

from shadowcode.limits import FRONT_STOP_GRACE_SECONDS, STDIO_WRITE_DEADLINE_SECONDS
from shadowcode.mcp.server.handover import MARK

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from shadowcode.mcp.server.early_answers import EarlyAnswers

__all__ = ["ClientLines", "ServerOutput", "Stdout"]

_CHUNK_BYTES = 65536


class Stdout:
    """Whole-frame writes to fd 1 from any thread; remembers when the current write started (SRV-25)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.write_started: float | None = None
        self.failed: str | None = None

    def write(self, data: bytes) -> None:
        """Write all of ``data``, or nothing once a write failed (then ``failed`` says why)."""
        with self._lock:
            if self.failed is not None:
                return
            self.write_started = time.monotonic()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(1, view) :]
            except OSError as exc:  # EPIPE: the client closed its end
                self.failed = exc.strerror or str(exc)
            self.write_started = None

    def stuck(self) -> bool:
        """Whether the current write has taken longer than ``STDIO_WRITE_DEADLINE_SECONDS`` (SRV-25)."""
        started = self.write_started
        return started is not None and time.monotonic() - started > STDIO_WRITE_DEADLINE_SECONDS

    def closing_reason(self) -> str:
        """Why the connection closes on the client's account, in the in-process server's words (SRV-25)."""
        if self.failed is not None:
            return f"stdout failed ({self.failed})"
        return f"a response write took longer than {STDIO_WRITE_DEADLINE_SECONDS:g} seconds"

    def broken(self) -> bool:
        """Whether the client closed its end of stdout (a pipe reports an error before any write fails)."""
        if self.failed is not None:
            return True
        try:
            poller = select.poll()
            poller.register(1, 0)  # errors and hang-ups are reported whatever is asked for
            events = poller.poll(0)
        except (OSError, ValueError):
            return False
        if events and events[0][1] & (select.POLLERR | select.POLLNVAL):
            self.failed = "Broken pipe"
            return True
        return False


class ClientLines:
    """Cuts client bytes into whole lines to look at; a line over ``max_bytes`` bytes passes through unread (SRV-25).

    Args:
        max_bytes: the longest line to hold back until its newline arrives (the frame bound,
            ``STDIO_FRAME_MAX_BYTES``); the server behind refuses a longer one itself.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._skipping = False  # inside a line too long to look at: passed on as it comes

    def feed(self, data: bytes) -> list[tuple[bool, bytes]]:
        """The pieces ``data`` completes, in order: ``(True, whole line)`` or ``(False, bytes to pass on)``."""
        self._buffer += data
        pieces: list[tuple[bool, bytes]] = []
        while self._buffer:
            end = self._buffer.find(b"\n")
            if self._skipping or (end < 0 and len(self._buffer) > self.max_bytes):
                part = bytes(self._buffer if end < 0 else self._buffer[: end + 1])
                pieces.append((False, part))
                self._skipping = end < 0
                del self._buffer[: len(part)]
                continue
            if end < 0:
                break
            pieces.append((True, bytes(self._buffer[: end + 1])))
            del self._buffer[: end + 1]
        return pieces

    def rest(self) -> bytes:
        """What is held back (the start of a line), handed over and forgotten."""
        held = bytes(self._buffer)
        self._buffer.clear()
        return held


class ServerOutput(threading.Thread):
    """Copies the server's socket to stdout; the server's answers to our own ids are dropped (SRV-01, SRV-03).

    While early answers may still need dropping the output is read line by line; once nothing
    is answered here any more and every answer of our own has come back, it is copied as it
    comes. With ``stop_on_own_answer`` (the relay) the first answer of the server to an id of
    ours ends the answering here: the server's session has taken the handshake.

    A :data:`~shadowcode.mcp.server.handover.MARK` from the server ends the copying: what came
    before it is written, the mark is sent back (the server writes to the client itself from
    then on), and the thread waits for the socket's end.

    With ``said_ready`` (the front) nothing is written before that event is set, or
    ``FRONT_STOP_GRACE_SECONDS`` have passed: the server says it is ready before it writes a
    byte, so a client that has read an answer of the server's knows the front has seen the
    ready word, and its next request goes to the server (SRV-03).

    Attributes:
        server_closed: the server ended the socket (rather than stdout failing).
        handed_over: the server wrote to the client itself before the end.
    """

    def __init__(
        self,
        conn: socket.socket,
        out: Stdout,
        early: EarlyAnswers | None,
        *,
        stop_on_own_answer: bool = False,
        said_ready: threading.Event | None = None,
    ) -> None:
        super().__init__(name="server-to-stdout", daemon=True)
        self.conn = conn
        self.out = out
        self.early = early
        self.stop_on_own_answer = stop_on_own_answer
        self.said_ready = said_ready
        self.server_closed = False
        self.handed_over = False

    def run(self) -> None:
        pending = bytearray()  # the start of a line, while lines are looked at
        by_line = self.early is not None
        while self.out.failed is None:
            data = self._receive()
            if self.said_ready is not None:
                self.said_ready.wait(FRONT_STOP_GRACE_SECONDS)
                self.said_ready = None
            if not data:
                if pending:
                    self.out.write(bytes(pending))
                self.server_closed = True
                return
            mark = data.find(MARK)
            if mark >= 0:
                data = data[:mark]
            if by_line:
                data, by_line = self._without_own_answers(pending, data)
            if data:
                self.out.write(data)
            if mark >= 0:
                self._hand_back(pending)
                return

    def _receive(self) -> bytes:
        try:
            return self.conn.recv(_CHUNK_BYTES)
        except OSError:
            return b""

    def _hand_back(self, pending: bytearray) -> None:
        """Everything before the mark is out: say so, then wait for the server's end."""
        if pending:
            self.out.write(bytes(pending))
        self.handed_over = True
        try:
            self.conn.sendall(MARK)
        except OSError:
            pass
        while self._receive():
            pass
        self.server_closed = True

    def _without_own_answers(self, pending: bytearray, data: bytes) -> tuple[bytes, bool]:
        """The lines ``data`` completes, less the server's answers to our own ids; and whether to go on by line."""
        early = self.early
        assert early is not None
        pending += data
        kept = bytearray()
        while (end := pending.find(b"\n")) >= 0:
            line = bytes(pending[: end + 1])
            del pending[: end + 1]
            if early.drop(line):
                if self.stop_on_own_answer:
                    early.stop()  # the server's session has taken the handshake: it answers from now on
                continue
            kept += line
        if early.answering or early.waiting:
            return bytes(kept), True
        kept += pending
        pending.clear()
        return bytes(kept), False
