"""The stdio front and the relay step out of the path once the server behind them serves (issue 15).

Both standard-library processes of ``mcp serve`` (the stdio front, whose child is the full
server, and the relay into the headless engine) read the client themselves at first, to
answer discovery while the server starts, and pass everything on over a unix stream socket.
Copying for the rest of the session would put two more process wake-ups in every round
trip, so they hand the client's stdin and stdout to the server and stop copying:

1. once nothing is answered by them any more and every request they sent on under an id of
   their own has been answered, they send every byte read from stdin so far, then one
   :data:`MARK` byte carrying their fd 0 and fd 1 (``SCM_RIGHTS``), and never read stdin again;
2. the server reads the socket with ``recvmsg``; the chunk that brings the descriptors ends
   with the mark (the kernel ends a read at the message that carries descriptors), so it
   drops the mark and goes on reading the client's stdin with the same line reader and the
   same SRV-25 counts: every byte and frame the client sent is counted once, whichever way
   it came;
3. before its next write the server sends :data:`MARK` down the socket as its last byte there
   and waits for the :data:`MARK` that comes back once everything it wrote before has reached
   the client (JSON text never holds a raw NUL, so the mark cannot be mistaken); from then on
   it writes to the client's stdout itself;
4. the socket stays open: its end is the end of the front or the relay, and ends the session
   as before (SRV-21, SRV-22).

The relay hands over only to an engine whose attach reply says ``"handover": true``. This
module imports only the standard library; keep it that way (the front and the relay import it).
"""

from __future__ import annotations

import array
import os
import socket

__all__ = ["MARK", "Handover", "send_handover"]

MARK = b"\x00"
"""The byte that carries the handover one way and marks the end of the copied output both ways."""

_CHUNK_BYTES = 65536
_FDS_SPACE = socket.CMSG_SPACE(2 * array.array("i").itemsize)


def send_handover(sock: socket.socket) -> None:
    """Send this process's stdin and stdout (fd 0 and fd 1) to the server behind ``sock`` (SRV-01).

    One :data:`MARK` byte carries both descriptors; nothing of stdin may be read after it.

    Raises:
        OSError: the server is gone.
    """
    sock.sendmsg([MARK], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", (0, 1)))])


class Handover:
    """The server's side of the socket a front or relay feeds: reads it, and takes the handover.

    Args:
        fd: the socket's descriptor; it is duplicated, the caller keeps its own.
    """

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=os.dup(fd))
        self.sock.setblocking(False)
        self.stdin: int | None = None
        self.stdout: int | None = None

    @property
    def taken(self) -> bool:
        """Whether the client's stdin and stdout are this process's now."""
        return self.stdin is not None

    def receive(self) -> bytes:
        """One chunk of client bytes from the socket (at most 64 KiB), the mark removed; ``b""`` at the end.

        The bytes count for SRV-25 as any client bytes do. Descriptors that do not come as
        exactly two with the mark at the end of the chunk are closed and ignored.

        Raises:
            BlockingIOError: nothing to read yet.
        """
        try:
            data, ancillary, flags, _ = self.sock.recvmsg(_CHUNK_BYTES, _FDS_SPACE, socket.MSG_CMSG_CLOEXEC)
        except BlockingIOError:
            raise
        except OSError:
            return b""
        fds = array.array("i")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if not fds:
            return data
        if self.taken or len(fds) != 2 or flags & socket.MSG_CTRUNC or not data.endswith(MARK):
            for fd in fds:
                os.close(fd)
            return data
        self.stdin, self.stdout = fds
        for fd in fds:
            os.set_blocking(fd, False)
        return data[: -len(MARK)]

    def close(self) -> None:
        """Close the socket and the client's descriptors, if they were handed over."""
        for fd in (self.stdin, self.stdout):
            if fd is not None:
                os.close(fd)
        self.stdin = self.stdout = None
        self.sock.close()
