"""The stdio front of ``mcp serve``: discovery at once, the full server behind it (issue 15).

Hosts give an MCP server about a second before their first model request; loading the SDK
and opening the engine takes longer. So when no headless engine runs, ``mcp serve`` starts
as this small standard-library process. It starts the full server (the same command, as a
child process that cannot outlive it, its stdin and stdout one unix socket) and passes every
byte from the client to it, while it answers discovery itself from the answers recorded from
the full server at build time (:mod:`shadowcode.mcp.server.discovery`):

* until the child says it is ready, a request in a recorded shape (``initialize`` at a
  recorded revision, then ``ping`` and the five listings; or ``server/discover`` and the
  listings of a modern revision) is answered here, and reaches the child under an id of the
  front's own, so the child's own answer to it is dropped; every other request reaches the
  child unchanged and waits for it; nothing the child writes reaches the client before the
  front has read its ready word, so once a client has an answer of the child's, the child
  answers everything after it;
* once the child is ready and has answered the requests sent on under the front's ids, the
  front hands it the client's stdin and stdout and steps out of the path
  (:mod:`shadowcode.mcp.server.handover`; a child that says plain ``ready`` only gets bytes
  copied both ways), so every promise of the in-process server holds: the child enforces the
  SRV-25 limits on the very bytes the client sent, owns the session (SRV-21, SRV-22) and
  stops its temporary engine on exit (SRV-07, SRV-23);
* when the child fails before it is ready, or is not ready within
  ``FRONT_ENGINE_START_SECONDS``, each waiting request and every later one gets a clear
  error naming why (a tool call an ``isError`` result), discovery still answers, and the
  child's stderr has already reached this process's stderr; the session lasts until stdin
  closes;
* the child gets ``SIGTERM`` when this process dies, however it dies (``PR_SET_PDEATHSIG``),
  and when this process gets ``SIGTERM`` or ``SIGINT``.

This module imports only the standard library and :mod:`shadowcode.limits`; keep it that way.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from shadowcode.limits import (
    FRONT_ENGINE_START_SECONDS,
    FRONT_STOP_GRACE_SECONDS,
    STDIO_FRAME_MAX_BYTES,
)
from shadowcode.mcp.server import READY_FD_ENV
from shadowcode.mcp.server.discovery import Manifest
from shadowcode.mcp.server.early_answers import EarlyAnswers, frame
from shadowcode.mcp.server.handover import send_handover
from shadowcode.mcp.server.stdio_pipes import ClientLines, ServerOutput, Stdout
from shadowcode.parent_death import pdeathsig_preexec

__all__ = ["READY_FD_ENV", "serve_front"]


_FRONT_ID = "shadowcode-front-"
_CHUNK_BYTES = 65536
_WATCH_SECONDS = 0.1
_STDERR_TAIL_BYTES = 2048


def serve_front(
    child_argv: list[str],
    manifest: Manifest | Callable[[], Manifest | None],
    *,
    start_seconds: float = FRONT_ENGINE_START_SECONDS,
) -> int | None:
    """Serve stdio through the front until the session ends; returns the exit status.

    Args:
        child_argv: the full ``mcp serve`` command to start behind the front.
        manifest: the recorded discovery answers, or a function reading them, called once the
            child is started (its start is the longer way to the first tool result, issue 32).
        start_seconds: how long the child may take to say it is ready.

    Returns:
        The child's exit status when it served (0 for a clean end), or the child's status when
        it failed before the client sent anything (a refused command line keeps its status 2),
        else 0 once stdin closes; None when ``manifest`` read None: the child is stopped
        before anything was read from stdin, and the caller serves without the front.
    """
    ready_read, ready_write = os.pipe()
    conn, child_end = socket.socketpair()  # the child's stdin and stdout until the handover
    env = dict(os.environ)
    env[READY_FD_ENV] = str(ready_write)
    try:
        child = subprocess.Popen(
            child_argv,
            stdin=child_end.fileno(),
            stdout=child_end.fileno(),
            stderr=subprocess.PIPE,
            env=env,
            pass_fds=(ready_write,),
            preexec_fn=pdeathsig_preexec(os.getpid(), signal.SIGTERM),  # noqa: PLW1509 (no thread runs yet)
        )
    except OSError as exc:
        os.close(ready_read)
        os.close(ready_write)
        conn.close()
        child_end.close()
        sys.stderr.write(f"shadowcode: cannot start the server: {exc.strerror or exc}\n")
        return 1
    os.close(ready_write)
    child_end.close()
    answers = manifest if isinstance(manifest, Manifest) else manifest()
    if answers is None:
        _stop_unused(child, ready_read, conn)
        return None
    return _Front(child, answers, ready_read, conn, start_seconds).run()


def _stop_unused(child: subprocess.Popen[bytes], ready_fd: int, conn: socket.socket) -> None:
    """Stop a child the front will not serve through (nothing was read from stdin): SIGTERM, then SIGKILL; reaped."""
    os.close(ready_fd)
    conn.close()
    child.terminate()
    try:
        child.wait(FRONT_STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    if child.stderr is not None:
        child.stderr.close()


class _Front:
    """One session: the child, the four copying threads and the state they share."""

    def __init__(
        self,
        child: subprocess.Popen[bytes],
        manifest: Manifest,
        ready_fd: int,
        conn: socket.socket,
        start_seconds: float,
    ) -> None:
        self.child = child
        self.start_seconds = start_seconds
        self.early = EarlyAnswers(manifest, _FRONT_ID)
        self.ready_fd = ready_fd
        self.conn = conn  # the child's stdin and stdout
        self.handover = False  # the child said it takes the client's stdin and stdout
        self.out = Stdout()
        self.ready_checked = threading.Event()  # the ready word was read, or its pipe ended
        self.output = ServerOutput(conn, self.out, self.early, said_ready=self.ready_checked)
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.failure: str | None = None  # why the child never became ready
        self.pending: list[tuple[object, str]] = []  # (id, method) sent to the child before it was ready
        self.client_spoke = False
        self.stdin_closed = threading.Event()
        self.stderr_tail = bytearray()
        self.stop_requested = False
        self.start_timed_out = False
        self.stderr_done = threading.Event()

    # --- main thread ------------------------------------------------------------------

    def run(self) -> int:
        for target, name in (
            (self._watch_ready, "child-ready"),
            (self._copy_stderr, "child-stderr"),
            (self._upstream, "stdin-to-child"),
        ):
            threading.Thread(target=target, name=name, daemon=True).start()
        self.output.start()
        self._install_signals()
        deadline = time.monotonic() + self.start_seconds
        stop_sent: float | None = None
        while True:
            if not self.output.handed_over and (self.out.stuck() or self.out.broken()):
                return self._stdout_gone()
            code = self.child.poll()
            if code is not None:
                self.ready_checked.wait(FRONT_STOP_GRACE_SECONDS)  # its "ready" may still be in the pipe
                if self.ready.is_set() or not self.client_spoke or self.stop_requested:
                    return self._child_ended(code)
                if self.failure is None:
                    self._fail(self._reason(code))
                if self.stdin_closed.is_set():
                    return 0
            elif self.failure is None and not self.ready.is_set() and time.monotonic() > deadline:
                self.start_timed_out = True
                self._terminate()
                continue
            if self.stop_requested and stop_sent is None:
                stop_sent = time.monotonic()
                self._signal_child(signal.SIGTERM)
            elif stop_sent is not None and time.monotonic() - stop_sent > FRONT_STOP_GRACE_SECONDS:
                self._signal_child(signal.SIGKILL)
            time.sleep(_WATCH_SECONDS)

    def _install_signals(self) -> None:
        def request_stop(_signum: int, _frame: object) -> None:
            self.stop_requested = True

        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                signal.signal(signum, request_stop)
            except (ValueError, OSError):  # not the main thread of the main interpreter
                pass

    def _signal_child(self, signum: signal.Signals) -> None:
        try:
            self.child.send_signal(signum)
        except OSError:
            pass

    def _terminate(self) -> None:
        """Stop the child: SIGTERM, then SIGKILL after the grace period; reaped either way."""
        self._signal_child(signal.SIGTERM)
        try:
            self.child.wait(FRONT_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self._signal_child(signal.SIGKILL)
            self.child.wait()

    def _child_ended(self, code: int) -> int:
        """The child served and ended (or refused its command line): pass on what it wrote, then its status."""
        self.output.join(FRONT_STOP_GRACE_SECONDS)
        self.stderr_done.wait(FRONT_STOP_GRACE_SECONDS)
        return code if code > 0 else 0

    def _stdout_gone(self) -> int:
        reason = self.out.closing_reason()
        sys.stderr.write(f"shadowcode: closing the connection: {reason}\n")
        sys.stderr.flush()
        self._terminate()
        return 0

    def _reason(self, code: int) -> str:
        if self.start_timed_out:
            return f"it was not ready within {self.start_seconds:g} seconds"
        lines = [ln for ln in bytes(self.stderr_tail).decode("utf-8", "replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1].removeprefix("shadowcode: ").strip()
        return f"it exited with status {code}" if code >= 0 else f"it was stopped by signal {-code}"

    def _fail(self, reason: str) -> None:
        """The child will not serve: answer every waiting request with ``reason``; later ones too."""
        with self.lock:
            self.failure = reason
            waiting, self.pending = self.pending, []
        sys.stderr.write(f"shadowcode: the engine did not start: {reason}\n")
        sys.stderr.flush()
        for request_id, method in waiting:
            self.out.write(self._refusal(request_id, method))

    def _refusal(self, request_id: object, method: str) -> bytes:
        message = f"the engine did not start: {self.failure}"
        if method == "tools/call":
            result = {"content": [{"type": "text", "text": message}], "isError": True}
            return frame({"jsonrpc": "2.0", "id": request_id, "result": result})
        return frame({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}})

    # --- threads ----------------------------------------------------------------------

    def _watch_ready(self) -> None:
        try:
            said = os.read(self.ready_fd, 16)
        except OSError:
            said = b""
        finally:
            os.close(self.ready_fd)
        if said.startswith(b"ready"):
            self.handover = said.startswith(b"ready handover")
            with self.lock:
                if self.failure is None:
                    self.ready.set()
        self.ready_checked.set()

    def _copy_stderr(self) -> None:
        stream = self.child.stderr
        assert stream is not None
        try:
            while data := os.read(stream.fileno(), _CHUNK_BYTES):
                self.stderr_tail += data
                del self.stderr_tail[:-_STDERR_TAIL_BYTES]
                try:
                    os.write(2, data)
                except OSError:
                    pass
        except OSError:
            pass
        finally:
            self.stderr_done.set()

    def _upstream(self) -> None:
        """stdin → child: whole lines while discovery may be answered here, then raw bytes, then the handover."""
        lines = ClientLines(STDIO_FRAME_MAX_BYTES)
        raw = False
        try:
            while data := os.read(0, _CHUNK_BYTES):
                self.client_spoke = True
                if raw:
                    self._to_child(data)
                else:
                    for whole, piece in lines.feed(data):
                        if whole and not self.ready.is_set():
                            self._line(piece)
                        else:
                            self._to_child(piece)
                    if self.ready.is_set():
                        raw = True
                        self._to_child(lines.rest())
                if raw and self.handover and not self.early.waiting and self._hand_over():
                    return
        except OSError:
            pass
        held = lines.rest()
        if held and self.failure is None:
            self._to_child(held)
        self.stdin_closed.set()
        try:
            self.conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _hand_over(self) -> bool:
        """Give the child the client's stdin and stdout and read no more (:mod:`shadowcode.mcp.server.handover`)."""
        try:
            send_handover(self.conn)
        except OSError:
            return False  # the child is gone: the main thread notices
        return True

    def _to_child(self, data: bytes) -> None:
        try:
            self.conn.sendall(data)
        except OSError:
            pass  # the child is gone: the main thread notices

    def _line(self, line: bytes) -> None:
        """Handle one whole client line before the child is ready."""
        answer, forward, request = self.early.take(line)
        if answer is None:
            self._pass(forward, request)
            return
        self.out.write(answer)
        if self.failure is None:
            self._to_child(forward)

    def _pass(self, line: bytes, request: tuple[object, str] | None) -> None:
        """Send ``line`` to the child, or refuse it when the child failed; waiting requests are noted."""
        with self.lock:
            failed = self.failure is not None
            if not failed and request is not None and not self.ready.is_set():
                self.pending.append(request)
        if failed:
            if request is not None:
                self.out.write(self._refusal(*request))
            return
        self._to_child(line)
