"""Bounded newline-delimited JSON framing, shared by every NDJSON transport (SRV-25, CLI-13, ENG-03).

The pieces here only split bytes into lines and bound them; each transport keeps its own
policy on top (what counts against which limit, what crossing one does, its messages):
:mod:`shadowcode.mcp.server.stdio` (SRV-25), :mod:`shadowcode.mcp.client.stdio` (CLI-13) and
:mod:`shadowcode.engine.control` (ENG-03).

Contract:
- A line ends at ``\\n``. With ``strip_cr`` a trailing ``\\r`` is removed and not counted.
- A line longer than ``max_bytes`` is refused with :class:`FrameTooLong` as soon as it is seen:
  a partial line is refused once it holds more bytes than any acceptable line could (one more
  than ``max_bytes`` with ``strip_cr``, for the possible trailing ``\\r``), so at most
  ``max_bytes`` plus one received chunk is ever buffered.
- Each byte is searched for a newline once: a frame trickling in one byte at a time costs
  linear, not quadratic, time.
- Blank lines are returned like any other; callers decide whether they count.
"""

from __future__ import annotations

import errno
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from shadowcode.errors import ProtocolError

__all__ = ["FrameRate", "FrameTooLong", "LineReader", "LineSplitter", "read_fd_chunk"]

_READ_CHUNK_BYTES = 64 * 1024
"""Bytes asked of one non-blocking read; a read size, not a limit."""


class FrameTooLong(ProtocolError):
    """A line crossed the frame limit; ``max_bytes`` is that limit in bytes."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"a frame is longer than {max_bytes} bytes", max_bytes=max_bytes)
        self.max_bytes = max_bytes


class LineSplitter:
    """Splits a byte stream into bounded lines, scanning each byte once.

    Feed a chunk, then take lines with :meth:`next_line` until it returns None, then feed the
    next chunk.

    Args:
        max_bytes: the longest line accepted, in bytes, newline (and a stripped CR) excluded.
        strip_cr: remove a ``\\r`` ending a line (CR LF framing); it does not count.
    """

    def __init__(self, max_bytes: int, *, strip_cr: bool = True) -> None:
        self._max = max_bytes
        self._strip_cr = strip_cr
        self._partial_max = max_bytes + 1 if strip_cr else max_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes at the start of the buffer known to hold no newline

    def feed(self, data: bytes) -> None:
        """Append received bytes.

        Raises:
            RuntimeError: a complete line is still waiting (take lines until None first), so
                the buffer stays bounded.
        """
        if self._scanned < len(self._buffer):
            raise RuntimeError("take every complete line before feeding more bytes")
        self._buffer += data

    def next_line(self) -> bytes | None:
        """The next complete line, newline (and CR with ``strip_cr``) removed; None when none is complete.

        Raises:
            FrameTooLong: the next line, complete or not yet, is longer than ``max_bytes``.
        """
        newline = self._buffer.find(b"\n", self._scanned)
        if newline < 0:
            self._scanned = len(self._buffer)
            if self._scanned > self._partial_max:
                raise FrameTooLong(self._max)
            return None
        end = newline - 1 if self._strip_cr and newline > 0 and self._buffer[newline - 1] == 0x0D else newline
        if end > self._max:
            raise FrameTooLong(self._max)
        line = bytes(self._buffer[:end])
        del self._buffer[: newline + 1]
        self._scanned = 0
        return line

    def leftover(self) -> bytes:
        """Every byte fed but not returned as a line (a partial line, or lines not taken yet); clears them."""
        data = bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        return data


class LineReader:
    """Pulls bounded lines from an async byte source.

    Args:
        receive: returns the next chunk, ``b""`` at end of file; it may raise to end reading
            (a transport counts its lifetime bytes there).
        max_bytes: the longest line accepted, in bytes (see :class:`LineSplitter`).
        strip_cr: remove a ``\\r`` ending a line.
    """

    def __init__(self, receive: Callable[[], Awaitable[bytes]], max_bytes: int, *, strip_cr: bool = True) -> None:
        self._receive = receive
        self._splitter = LineSplitter(max_bytes, strip_cr=strip_cr)
        self._eof = False

    async def line(self) -> bytes | None:
        """The next line (blank ones included), or None at end of file; a partial last line stays in :meth:`leftover`.

        Raises:
            FrameTooLong: a line longer than ``max_bytes``.
        """
        while True:
            line = self._splitter.next_line()
            if line is not None:
                return line
            if self._eof:
                return None
            data = await self._receive()
            if not data:
                self._eof = True
                return None
            self._splitter.feed(data)

    def leftover(self) -> bytes:
        """Bytes received but not returned as lines; clears them."""
        return self._splitter.leftover()


class FrameRate:
    """A sliding one-second window of frames: the (max+1)th frame within any second is refused.

    Args:
        max_per_second: frames admitted in any one-second window.
    """

    def __init__(self, max_per_second: int) -> None:
        self._max = max_per_second
        self._recent: deque[float] = deque()

    def admit(self) -> bool:
        """Count one frame now; False (and not counted) when it would cross the limit."""
        now = time.monotonic()
        while self._recent and now - self._recent[0] >= 1.0:
            self._recent.popleft()
        if len(self._recent) >= self._max:
            return False
        self._recent.append(now)
        return True


async def read_fd_chunk(fd: int) -> bytes:
    """Read what a non-blocking descriptor has (up to 64 KiB), waiting on the event loop.

    Returns:
        The bytes read; ``b""`` at end of file or when the read fails (EINTR is retried).
    """
    while True:
        try:
            return os.read(fd, _READ_CHUNK_BYTES)
        except BlockingIOError:
            await anyio.wait_readable(fd)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return b""
