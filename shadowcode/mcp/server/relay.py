"""The attached fast path of ``mcp serve``: a stdlib-only relay between stdio and the engine.

When the profile's headless engine runs, ``mcp serve`` needs none of the SDK in its own
process: it connects to the engine's socket, asks it to serve an MCP session for the
canonical project (``mcp/attach``), then copies bytes both ways until either side ends.
Everything the client sees on stdout comes from the engine's bounded transport, so stdout
stays JSON-RPC only. The socket is the owner's socket: when this process dies, however it
dies, the engine sees EOF and cancels the owner's work.

This module imports only the standard library; keep it that way (start-up cost, issue 7).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

__all__ = ["try_relay"]

_CHUNK_BYTES = 65536
_ATTACH_REPLY_MAX_BYTES = 4096
_ATTACH_TIMEOUT_SECONDS = 10.0


def try_relay(socket_path: str, project: str, *, allow_write: bool, allow_approvals: bool) -> int | None:
    """Relay stdio through the engine at ``socket_path``; returns the exit status, or None to fall back.

    None means nothing was relayed (no engine, or it refused the attach) and the caller should
    serve in-process; nothing has been read from stdin or written to stdout in that case.
    """
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_ATTACH_TIMEOUT_SECONDS)
        sock.connect(socket_path)
    except OSError:
        return None
    params = {"project": project, "allow_write": allow_write, "allow_approvals": allow_approvals}
    request = {"id": 1, "method": "mcp/attach", "params": params}
    try:
        sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(1)
            if not chunk or len(reply) > _ATTACH_REPLY_MAX_BYTES:
                sock.close()
                return None
            reply += chunk
        answer = json.loads(reply)
    except (OSError, ValueError):
        sock.close()
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), dict):
        sock.close()
        return None
    sock.settimeout(None)
    return _pump(sock)


def _pump(sock: socket.socket) -> int:
    """Copy stdin → socket on a thread and socket → stdout here, until the engine closes."""

    def upstream() -> None:
        try:
            while True:
                data = os.read(0, _CHUNK_BYTES)
                if not data:
                    break
                sock.sendall(data)
        except OSError:
            pass
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upstream, name="stdin-to-engine", daemon=True).start()
    try:
        while True:
            data = sock.recv(_CHUNK_BYTES)
            if not data:
                return 0
            view = memoryview(data)
            while view:
                view = view[os.write(1, view) :]
    except BrokenPipeError:
        return 0
    except OSError as exc:
        sys.stderr.write(f"shadowcode: the relay to the engine failed: {exc.strerror}\n")
        return 1
    finally:
        sock.close()
