"""The attached fast path of ``mcp serve``: a stdlib-only relay between stdio and the engine.

When the profile's headless engine runs, ``mcp serve`` needs none of the SDK in its own
process: it connects to the engine's socket, asks it to serve an MCP session for the
canonical project (``mcp/attach``), then copies bytes both ways until it can hand the
engine its stdin and stdout (:mod:`shadowcode.mcp.server.handover`), and waits for the
session's end.
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
  stopped reading) ends the relay, as it ends an in-process connection; after the handover
  the engine's transport keeps that deadline on the client's stdout itself.

The socket is the owner's socket: when this process dies, however it dies, the engine sees
EOF and cancels the owner's work (SRV-21, SRV-22).

This module imports only the standard library and the bottom modules (:mod:`shadowcode.limits`,
:mod:`shadowcode.control_methods`); keep it that way (start-up time and memory per session, issue 7).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

from shadowcode.control_methods import MCP_ATTACH, MCP_NOTICES
from shadowcode.json_values import json_array, json_object
from shadowcode.limits import (
    RELAY_ATTACH_DEADLINE_SECONDS,
    RELAY_ATTACH_REPLY_MAX_BYTES,
    STDIO_FRAME_MAX_BYTES,
)
from shadowcode.mcp.server.early_answers import EarlyAnswers
from shadowcode.mcp.server.handover import send_handover
from shadowcode.mcp.server.stdio_pipes import ClientLines, ServerOutput, Stdout

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from shadowcode.mcp.server.discovery import Manifest

__all__ = ["try_relay"]

_CHUNK_BYTES = 65536
_WATCH_SECONDS = 0.25
_RELAY_ID = "shadowcode-relay-"


def try_relay(
    socket_path: str,
    project: str,
    *,
    allow_write: bool,
    allow_approvals: bool,
    approve_in_host: bool = False,
    approval_page: bool = False,
    manifest: Manifest | None = None,
) -> int | None:
    """Relay stdio through the engine at ``socket_path``; returns the exit status, or None to fall back.

    None means nothing was relayed (no engine, or it refused the attach) and the caller should
    serve in-process; nothing has been read from stdin or written to stdout in that case.
    Otherwise 0, as an in-process server exits when its connection ends, a limit included.
    With ``manifest`` (the recorded discovery answers) discovery is answered here until the
    engine's session answers; without it every byte is only copied.
    """
    params: dict[str, object] = {  # shadowcode.engine.api.McpAttach, which the engine validates
        "project": project,
        "allow_write": allow_write,
        "allow_approvals": allow_approvals,
        "approve_in_host": approve_in_host,
        "approval_page": approval_page,
    }
    sock = _request(socket_path, MCP_ATTACH, params)
    if sock is None:
        return None
    conn, answer = sock
    result = json_object(answer.get("result"))
    if result is None:
        conn.close()
        return None
    conn.settimeout(None)
    session = result.get("session")
    early = EarlyAnswers(manifest, _RELAY_ID) if manifest is not None else None
    if _pump(conn, early, result.get("handover") is True) and isinstance(session, str):
        _print_notices(socket_path, session)
    return 0


def _request(
    socket_path: str, method: str, params: dict[str, object]
) -> tuple[socket.socket, dict[str, object]] | None:
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
        answer = json_object(json.loads(reply))
    except (OSError, ValueError):
        conn.close()
        return None
    if answer is None:
        conn.close()
        return None
    return conn, answer


def _pump(conn: socket.socket, early: EarlyAnswers | None, handover: bool) -> bool:
    """Copy stdin → engine and engine → stdout until one side ends; True when the engine ended it.

    With ``handover`` (the engine said it takes one) the relay gives the engine its stdin and
    stdout once it answers nothing itself and waits for no answer of its own
    (:mod:`shadowcode.mcp.server.handover`), and from then on only waits for the session's end.
    When stdout is at fault (a write past its deadline, or a failed write) the relay says so
    on stderr in the in-process server's words and closes the socket, which ends the session.
    """
    out = Stdout()

    def upstream() -> None:
        lines = ClientLines(STDIO_FRAME_MAX_BYTES)
        by_line = early is not None
        try:
            if handover and early is None:
                send_handover(conn)
                return
            while data := os.read(0, _CHUNK_BYTES):
                if not by_line:
                    conn.sendall(data)
                else:
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
                if handover and not by_line and early is not None and not early.waiting:
                    send_handover(conn)
                    return
            conn.sendall(lines.rest())
        except OSError:
            pass
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upstream, name="stdin-to-engine", daemon=True).start()
    down = ServerOutput(conn, out, early, stop_on_own_answer=True)
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
    return down.server_closed


def _print_notices(socket_path: str, session: str) -> None:
    """Write the engine's closing lines for ``session`` on stderr (none when it ended normally)."""
    found = _request(socket_path, MCP_NOTICES, {"session": session})
    if found is None:
        return
    conn, answer = found
    conn.close()
    result = json_object(answer.get("result"))
    notices = json_array(result.get("notices")) if result is not None else None
    if notices is not None:
        sys.stderr.write("".join(n for n in notices if isinstance(n, str)))
