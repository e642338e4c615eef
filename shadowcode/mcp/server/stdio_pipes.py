"""The byte plumbing shared by the two standard-library stdio paths of ``mcp serve``: the front and the relay.

:class:`Stdout` writes whole frames to fd 1 from any thread and tells a stuck or broken client
apart (SRV-25's write deadline); :class:`ClientLines` cuts the client's bytes into whole lines
while they are still looked at, passing a line too long to look at through as it comes.

This module imports only the standard library and :mod:`shadowcode.limits`; keep it that way.
"""

from __future__ import annotations

import os
import select
import threading
import time

from shadowcode.limits import STDIO_WRITE_DEADLINE_SECONDS

__all__ = ["ClientLines", "Stdout"]


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
