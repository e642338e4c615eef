"""The attached fast path of ``mcp serve``: a stdlib-only relay between stdio and the engine.

When the profile's headless engine runs, ``mcp serve`` needs none of the SDK in its own
process: it connects to the engine's socket, asks it to serve an MCP session for the
canonical project (``mcp/attach``), then copies bytes both ways until either side ends.
Until the engine's session has answered its first request, the relay answers discovery
itself from the build-time recording, as the stdio front does
(:mod:`shadowcode.mcp.server.early_answers`): every client line still reaches the engine,
an answered one under an id of the relay's own whose answer is dropped. Everything else the
client sees on stdout comes from the engine's bounded transport, so stdout stays JSON-RPC
only, and SRV-25's limits hold as in-process:

* the engine enforces every limit on the bytes it reads; when one closes the session, the
  relay fetches the engine's closing lines (``mcp/notices``) and writes them on its stderr,
  as an in-process server writes them on its own;
* a stdout write that does not finish within ``STDIO_WRITE_DEADLINE_SECONDS`` (a client that
  stopped reading) ends the relay, as it ends an in-process connection.

The socket is the owner's socket: when this process dies, however it dies, the engine sees
EOF and cancels the owner's work (SRV-21, SRV-22).

This module imports only the standard library and :mod:`shadowcode.limits`; keep it that way
(start-up time and memory per session, issue 7).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

from shadowcode.limits import (
    RELAY_ATTACH_DEADLINE_SECONDS,
    RELAY_ATTACH_REPLY_MAX_BYTES,
    STDIO_FRAME_MAX_BYTES,
)
from shadowcode.mcp.server.early_answers import EarlyAnswers
from shadowcode.mcp.server.stdio_pipes import ClientLines, Stdout

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from shadowcode.mcp.server.discovery import Manifest

__all__ = ["try_relay"]

_CHUNK_BYTES = 65536
_WATCH_SECONDS = 0.25
_RELAY_ID = "shadowcode-relay-"


def try_relay(
    socket_path: str, project: str, *, allow_write: bool, allow_approvals: bool, manifest: Manifest | None = None
) -> int | None:
    """Relay stdio through the engine at ``socket_path``; returns the exit status, or None to fall back.

    None means nothing was relayed (no engine, or it refused the attach) and the caller should
    serve in-process; nothing has been read from stdin or written to stdout in that case.
    Otherwise 0, as an in-process server exits when its connection ends, a limit included.
    With ``manifest`` (the recorded discovery answers) discovery is answered here until the
    engine's session answers; without it every byte is only copied.
    """
    params = {"project": project, "allow_write": allow_write, "allow_approvals": allow_approvals}
    sock = _request(socket_path, "mcp/attach", params)
    if sock is None:
        return None
    conn, answer = sock
    result = answer.get("result")
    if not isinstance(result, dict):
        conn.close()
        return None
    conn.settimeout(None)
    session = result.get("session")
    early = EarlyAnswers(manifest, _RELAY_ID) if manifest is not None else None
    if _pump(conn, early) and isinstance(session, str):
        _print_notices(socket_path, session)
    return 0


def _request(socket_path: str, method: str, params: dict[str, object]) -> tuple[socket.socket, dict] | None:
    """Connect, send one control request, read its one-line reply; None on any failure.

    The connection stays open (positioned after the reply) for the caller.
    """
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        conn.settimeout(RELAY_ATTACH_DEADLINE_SECONDS)
        conn.connect(socket_path)
        conn.sendall(json.dumps({"id": 1, "method": method, "params": params}).encode("utf-8") + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):  # byte by byte: nothing past the reply may be consumed
            chunk = conn.recv(1)
            if not chunk or len(reply) >= RELAY_ATTACH_REPLY_MAX_BYTES:
                conn.close()
                return None
            reply += chunk
        answer = json.loads(reply)
    except (OSError, ValueError):
        conn.close()
        return None
    if not isinstance(answer, dict):
        conn.close()
        return None
    return conn, answer


class _Downstream(threading.Thread):
    """Copies engine → stdout; the engine's answers to the relay's own ids are dropped.

    While early answers may still need dropping the engine's output is read line by line;
    once the relay answers nothing more and every answer of its own has come back, it is
    copied as it comes.
    """

    def __init__(self, conn: socket.socket, out: Stdout, early: EarlyAnswers | None) -> None:
        super().__init__(name="engine-to-stdout", daemon=True)
        self.conn = conn
        self.out = out
        self.early = early
        self.engine_closed = False

    def run(self) -> None:
        pending = bytearray()  # the start of a line, while lines are looked at
        by_line = self.early is not None
        while self.out.failed is None:
            try:
                data = self.conn.recv(_CHUNK_BYTES)
            except OSError:
                data = b""
            if not data:
                if pending:
                    self.out.write(bytes(pending))
                self.engine_closed = True
                return
            if by_line:
                data, by_line = self._without_own_answers(pending, data)
            if data:
                self.out.write(data)

    def _without_own_answers(self, pending: bytearray, data: bytes) -> tuple[bytes, bool]:
        """The lines ``data`` completes, less the engine's answers to our own ids; and whether to go on by line."""
        early = self.early
        assert early is not None
        pending += data
        kept = bytearray()
        while (end := pending.find(b"\n")) >= 0:
            line = bytes(pending[: end + 1])
            del pending[: end + 1]
            if early.drop(line):
                early.stop()  # the engine's session has taken the handshake: it answers from now on
                continue
            kept += line
        if early.answering or early.waiting:
            return bytes(kept), True
        kept += pending
        pending.clear()
        return bytes(kept), False


def _pump(conn: socket.socket, early: EarlyAnswers | None) -> bool:
    """Copy stdin → engine and engine → stdout until one side ends; True when the engine ended it.

    When stdout is at fault (a write past its deadline, or a failed write) the relay says so
    on stderr in the in-process server's words and closes the socket, which ends the session.
    """
    out = Stdout()

    def upstream() -> None:
        lines = ClientLines(STDIO_FRAME_MAX_BYTES)
        by_line = early is not None
        try:
            while data := os.read(0, _CHUNK_BYTES):
                if not by_line:
                    conn.sendall(data)
                    continue
                assert early is not None
                for whole, piece in lines.feed(data):
                    answer, forward = None, piece
                    if whole and early.answering:
                        answer, forward, _request = early.take(piece)
                    if answer is not None:
                        out.write(answer)
                    conn.sendall(forward)
                if not early.answering:
                    by_line = False
                    conn.sendall(lines.rest())
            conn.sendall(lines.rest())
        except OSError:
            pass
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upstream, name="stdin-to-engine", daemon=True).start()
    down = _Downstream(conn, out, early)
    down.start()
    stuck = False
    try:
        while down.is_alive() and not stuck:
            down.join(_WATCH_SECONDS)
            stuck = out.stuck()  # the blocked writer thread ends with the process
    finally:
        conn.close()
    if stuck or out.failed is not None:
        sys.stderr.write(f"shadowcode: closing the connection: {out.closing_reason()}\n")
        return False
    return down.engine_closed


def _print_notices(socket_path: str, session: str) -> None:
    """Write the engine's closing lines for ``session`` on stderr (none when it ended normally)."""
    found = _request(socket_path, "mcp/notices", {"session": session})
    if found is None:
        return
    conn, answer = found
    conn.close()
    result = answer.get("result")
    notices = result.get("notices") if isinstance(result, dict) else None
    if isinstance(notices, list):
        sys.stderr.write("".join(n for n in notices if isinstance(n, str)))
