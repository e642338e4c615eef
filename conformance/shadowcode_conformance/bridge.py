"""A loopback Streamable HTTP endpoint in front of a stdio MCP server, for the official package (CONF-01).

The official ``@modelcontextprotocol/conformance`` package runs server scenarios only over HTTP
(``--url``). :class:`StdioBridge` serves any stdio server at ``http://127.0.0.1:PORT/mcp`` so
``--official`` works for it too. A stdio server keeps state per connection, so one stdio process
cannot serve independent HTTP requests statelessly; the bridge keeps that state where the
protocol puts it:

* **Initialize era** (2024-11-05 to 2025-11-25): one stdio child per HTTP session. An
  ``initialize`` without ``Mcp-Session-Id`` starts a child and answers with a new session id;
  later requests with that id go to that child unchanged; ``DELETE`` ends it (its stdin
  closes, then its process group is killed); an unknown id gets 404, a request without one 400.
* **2026-07-28** (no handshake; a request carries ``MCP-Protocol-Version: 2026-07-28`` or the
  per-request envelope in ``params._meta``): one long-lived child shared by every such request,
  with id rewriting: each request goes to it under a fresh id (``bridge-N``), and its answer
  comes back under the id the HTTP client sent, so clients whose ids collide never see each
  other's answers. A stdio connection may fix its era at its first request, so a request that
  claims 2026-07-28 by its header but lacks the envelope, or an ``initialize`` sent that way, is
  answered by a fresh child of its own, which then stops: the shared child keeps its era.

What the child writes besides the answer is routed too: a notification naming a request's
``progressToken`` goes to that request's stream, any other notification to every open
``subscriptions/listen`` stream of that child, anything else to the one request in flight on
that child (or, in a session, to the session's GET stream, or nowhere). A request is answered
as ``application/json`` when nothing comes before its answer, and switches to
``text/event-stream`` as soon as something does (when the client accepts it).

The bridge is the HTTP transport, so a scenario that tests the transport itself (Host and Origin
checks, SSE streams, HTTP status mapping) would judge the bridge: those are reported not
applicable by the official checks. It binds 127.0.0.1 only, refuses a Host or Origin that is not
its own (403), relays no batch (400) and bounds bodies, sessions and waits
(``BRIDGE_*`` in :mod:`shadowcode_conformance.limits`). Every child it starts is stopped when it closes.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from shadowcode_conformance.context import MODERN_REVISION
from shadowcode_conformance.json_values import json_object
from shadowcode_conformance.limits import (
    BRIDGE_ANSWER_SECONDS,
    BRIDGE_BODY_MAX_BYTES,
    BRIDGE_SESSIONS_MAX,
    BRIDGE_STOP_SECONDS,
    STDERR_TAIL_CHARS,
)

__all__ = ["StdioBridge"]

_PATH: Final = "/mcp"
_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
_UNSOLICITED_MAX: Final = 256
_END: Final = object()


class _Waiter:
    """Messages for one relayed request, and what routes to it."""

    def __init__(self, progress_token: Any, method: str) -> None:
        self.queue: queue.Queue[Any] = queue.Queue()
        self.progress_token = progress_token
        self.listens = method == "subscriptions/listen"


class _Child:
    """One stdio server: stdin written under a lock, stdout read and routed by a thread."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self.unsolicited: queue.Queue[Any] = queue.Queue(_UNSOLICITED_MAX)
        self.stderr = bytearray()
        self.alive = True
        threading.Thread(target=self._read, name="bridge-stdout", daemon=True).start()
        threading.Thread(target=self._drain, name="bridge-stderr", daemon=True).start()

    def send(self, message: Any) -> bool:
        """Write one JSON-RPC frame; False when the child no longer takes input."""
        data = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        with self._lock:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
                return True
            except (OSError, ValueError):
                return False

    def expect(self, child_id: Any, progress_token: Any, method: str) -> _Waiter:
        waiter = _Waiter(progress_token, method)
        with self._lock:
            self._waiters[json.dumps(child_id)] = waiter
        return waiter

    def forget(self, child_id: Any) -> None:
        with self._lock:
            self._waiters.pop(json.dumps(child_id), None)

    def _route(self, message: Any) -> None:
        with self._lock:
            waiters = dict(self._waiters)
        doc = json_object(message)
        if doc is not None and "id" in doc and "method" not in doc:
            waiter = waiters.get(json.dumps(doc.get("id")))
            if waiter is not None:
                waiter.queue.put(message)
            return
        params = json_object(doc.get("params")) if doc is not None else None
        token = params.get("progressToken") if params is not None else None
        chosen = [w for w in waiters.values() if token is not None and w.progress_token == token]
        if not chosen and doc is not None and str(doc.get("method")).startswith("notifications/"):
            chosen = [w for w in waiters.values() if w.listens]
        if not chosen and len(waiters) == 1:
            chosen = list(waiters.values())
        for waiter in chosen:
            waiter.queue.put(message)
        if chosen:
            return
        with contextlib.suppress(queue.Full):
            self.unsolicited.put_nowait(message)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self._route(message)
        self.alive = False
        with self._lock:
            waiters = list(self._waiters.values())
        for waiter in waiters:
            waiter.queue.put(_END)
        with contextlib.suppress(queue.Full):
            self.unsolicited.put_nowait(_END)

    def _drain(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        for chunk in iter(lambda: stderr.read(4096), b""):
            self.stderr.extend(chunk)
            del self.stderr[:-STDERR_TAIL_CHARS]

    def stop(self) -> None:
        """Close stdin, give the child ``BRIDGE_STOP_SECONDS`` to exit, then kill its process group."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=BRIDGE_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=BRIDGE_STOP_SECONDS)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _enveloped(message: dict[str, Any]) -> bool:
    """Whether a message carries the 2026-07-28 per-request envelope in ``params._meta``."""
    params = json_object(message.get("params"))
    meta = json_object(params.get("_meta")) if params is not None else None
    return meta is not None and _VERSION_KEY in meta


def _modern(headers: Any, message: dict[str, Any]) -> bool:
    """Whether a request speaks 2026-07-28: its version header or its ``_meta`` envelope says so."""
    return (headers.get("MCP-Protocol-Version") or "").strip() == MODERN_REVISION or _enveloped(message)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def bridge(self) -> _BridgeServer:
        """The server this handler answers for (the base class types it as any socket server)."""
        return cast(_BridgeServer, self.server)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return

    # --- replies ------------------------------------------------------------------------

    def _json(self, status: int, body: Any, extra: Mapping[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _event(self, message: Any) -> None:
        self.wfile.write(b"event: message\ndata: " + json.dumps(message).encode("utf-8") + b"\n\n")
        self.wfile.flush()

    def _open_stream(self, extra: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    # --- guards -------------------------------------------------------------------------

    def _refused(self) -> bool:
        """403 for a Host or Origin other than the bridge's own loopback address."""
        port = self.bridge.server_address[1]
        own = {f"127.0.0.1:{port}", f"localhost:{port}"}
        host = (self.headers.get("Host") or "").strip().lower()
        origin = (self.headers.get("Origin") or "").strip().lower()
        if host not in own or (origin and origin.removeprefix("http://") not in own):
            self._json(403, _error(None, -32600, "the bridge serves only its own loopback Host and Origin"))
            return True
        if self.path.split("?", 1)[0] != _PATH:
            self._json(404, _error(None, -32600, f"the bridge serves {_PATH} only"))
            return True
        return False

    # --- methods ------------------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if self._refused():
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > BRIDGE_BODY_MAX_BYTES:
            self._json(413, _error(None, -32600, f"bodies over {BRIDGE_BODY_MAX_BYTES} bytes are not relayed"))
            return
        try:
            message = json_object(json.loads(self.rfile.read(length)))
        except ValueError:
            self._json(400, _error(None, -32700, "Parse error"))
            return
        if message is None:
            self._json(400, _error(None, -32600, "the bridge relays one JSON-RPC message per request, not a batch"))
            return
        found = self.bridge.route(self.headers, message)
        if isinstance(found, _Refusal):
            self._json(found.status, _error(message.get("id"), -32600, found.why))
            return
        child, session_id, rewrite = found
        extra = {"Mcp-Session-Id": session_id} if session_id else {}
        if "method" not in message or "id" not in message:
            ok = child.send(message)
            self._json(202 if ok else 502, None if ok else _error(None, -32603, "the stdio server exited"), extra)
            return
        if rewrite and (not _enveloped(message) or message.get("method") == "initialize"):
            # A 2026-07-28 request without its envelope (or an initialize) would fix the era of the
            # shared child's connection: a fresh child of its own answers it, then stops.
            child = _Child(self.bridge.argv, self.bridge.env, self.bridge.cwd)
            try:
                self._relay(child, message, rewrite, extra)
            finally:
                child.stop()
            return
        self._relay(child, message, rewrite, extra)

    def _relay(self, child: _Child, message: dict[str, Any], rewrite: bool, extra: dict[str, str]) -> None:
        original = message["id"]
        child_id: Any = f"bridge-{next(self.bridge.counter)}" if rewrite else original
        params = json_object(message.get("params"))
        meta = json_object(params.get("_meta")) if params is not None else None
        token = (meta or {}).get("progressToken") if params is not None else None
        waiter = child.expect(child_id, token, str(message.get("method")))
        streaming = False
        sse = "text/event-stream" in (self.headers.get("Accept") or "")
        try:
            if not child.send({**message, "id": child_id}):
                self._json(502, _error(original, -32603, "the stdio server exited"), extra)
                return
            while True:
                try:
                    got = waiter.queue.get(timeout=BRIDGE_ANSWER_SECONDS)
                except queue.Empty:
                    got = None
                if got is None or got is _END:
                    why = "no answer in time" if got is None else "the stdio server exited before answering"
                    if streaming:
                        self._event(_error(original, -32603, why))
                    else:
                        self._json(504 if got is None else 502, _error(original, -32603, why), extra)
                    return
                reply = json_object(got)
                answered = reply is not None and "method" not in reply and reply.get("id") == child_id
                if reply is not None and answered:
                    got = {**reply, "id": original}
                    if streaming:
                        self._event(got)
                    else:
                        self._json(200, got, extra)
                    return
                if not sse:
                    continue
                if not streaming:
                    self._open_stream(extra)
                    streaming = True
                self._event(got)
        except (BrokenPipeError, ConnectionResetError):
            return
        finally:
            child.forget(child_id)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self._refused():
            return
        session_id = self.headers.get("Mcp-Session-Id")
        child = self.bridge.sessions.get(session_id or "")
        if child is None or "text/event-stream" not in (self.headers.get("Accept") or ""):
            self._json(405 if child is None else 406, _error(None, -32600, "GET opens a session's event stream only"))
            return
        self._open_stream({})
        try:
            while not self.bridge.stopping.is_set():
                try:
                    got = child.unsolicited.get(timeout=0.5)
                except queue.Empty:
                    continue
                if got is _END:
                    return
                self._event(got)
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_DELETE(self) -> None:  # noqa: N802 - http.server's name
        if self._refused():
            return
        session_id = self.headers.get("Mcp-Session-Id") or ""
        child = self.bridge.end_session(session_id)
        if child is None:
            self._json(404 if session_id else 405, _error(None, -32600, "no such session"))
            return
        self._json(200, None)

    def do_PUT(self) -> None:  # noqa: N802 - http.server's name
        if not self._refused():
            self._json(405, _error(None, -32600, "method not allowed"))

    do_PATCH = do_PUT


@dataclass(frozen=True)
class _Refusal:
    status: int
    why: str


class _BridgeServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.argv, self.env, self.cwd = list(argv), dict(env), cwd
        self.sessions: dict[str, _Child] = {}
        self.shared: _Child | None = None
        self.counter = itertools.count(1)
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def route(self, headers: Any, message: dict[str, Any]) -> tuple[_Child, str, bool] | _Refusal:
        """(child, new session id or "", rewrite ids) for a message, or why it is refused."""
        session_id = headers.get("Mcp-Session-Id")
        with self._lock:
            if session_id:
                child = self.sessions.get(session_id)
                if child is None:
                    return _Refusal(404, "unknown or ended session")
                return child, "", False
            if _modern(headers, message):
                if self.shared is None or not self.shared.alive:
                    self.shared = _Child(self.argv, self.env, self.cwd)
                return self.shared, "", True
            if message.get("method") != "initialize":
                return _Refusal(400, "Mcp-Session-Id is required (initialize starts a session)")
            if len(self.sessions) >= BRIDGE_SESSIONS_MAX:
                return _Refusal(503, f"the bridge runs at most {BRIDGE_SESSIONS_MAX} sessions")
            session_id = uuid.uuid4().hex
            self.sessions[session_id] = _Child(self.argv, self.env, self.cwd)
            return self.sessions[session_id], session_id, False

    def end_session(self, session_id: str) -> _Child | None:
        with self._lock:
            child = self.sessions.pop(session_id, None)
        if child is not None:
            child.stop()
        return child

    def children(self) -> list[_Child]:
        with self._lock:
            found = list(self.sessions.values()) + ([self.shared] if self.shared else [])
            self.sessions.clear()
            self.shared = None
        return found


class StdioBridge:
    """Serve the stdio server ``argv`` at :attr:`url` over loopback Streamable HTTP (CONF-01).

    Use as a context manager; leaving it stops the HTTP server and every child it started.

    Args:
        argv: the stdio server's command, run as given.
        env: its environment (the check's, so the runner's sweep finds what it leaves).
        cwd: its working folder.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self._server = _BridgeServer(argv, env, cwd)
        self._thread = threading.Thread(target=self._server.serve_forever, name="stdio-bridge", daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{_PATH}"

    def __enter__(self) -> StdioBridge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        for child in self._server.children():
            child.stop()
        self._thread.join(timeout=10)

    def stderr(self) -> str:
        """The tail of what the bridged children wrote to stderr (for a failing detail)."""
        return b"".join(bytes(c.stderr) for c in list(self._server.sessions.values())).decode("utf-8", "replace")
