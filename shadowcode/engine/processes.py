"""Child processes of the engine: bounded commands and independent background processes.

Contract (ENG-04, SRV-21, SRV-23):

- A command is a literal ``argv`` (no shell), started in the given folder with exactly the
  given environment, stdin from ``/dev/null``, stdout and stderr merged into one pipe.
- Every child leads its own session and process group, so a stop reaches its descendants.
  On Linux the child also asks the kernel for ``SIGKILL`` when the engine thread that
  started it dies (``PR_SET_PDEATHSIG``), so a killed engine leaves no commands behind.
  Start children from a long-lived thread (the event loop's): the signal follows the thread.
- Output is read continuously, so a chatty child never blocks on a full pipe; only the last
  ``output_max_bytes`` bytes are kept.
- Stopping is always: ``SIGTERM`` to the group, up to ``PROCESS_TERM_GRACE_SECONDS`` for the
  leader to exit, ``SIGKILL`` to the group, wait for the leader, then reap it. The leader is
  left unreaped (a zombie) until group signalling is over, so its pid, which is also the
  group id, cannot be reused by an unrelated process that a late signal would reach.
- A command ended by its own exit also takes its leftover group members down (``SIGKILL``):
  work meant to outlive a command is a background process.
- Background processes (SRV-23) belong to the manager, not to any task: cancelling the task
  or the connection that started one leaves it running until :meth:`ProcessManager.stop_background`
  or :meth:`ProcessManager.aclose`. Their output goes to a bounded ring buffer.

Processes that deliberately leave their group (a new ``setsid``) are outside this boundary.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import logging
import os
import secrets
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from shadowcode.errors import NotFound, ShadowcodeError, ToolError
from shadowcode.limits import (
    BACKGROUND_OUTPUT_MAX_BYTES,
    BACKGROUND_PROCESSES_MAX,
    COMMAND_OUTPUT_TAIL_BYTES,
    COMMAND_TIMEOUT_MAX_SECONDS,
    PROCESS_OUTPUT_MAX_BYTES,
    PROCESS_PIPE_DRAIN_SECONDS,
    PROCESS_REAP_DEADLINE_SECONDS,
    PROCESS_TERM_GRACE_SECONDS,
)

__all__ = ["CommandResult", "GroupChild", "OutputTail", "ProcessManager", "pdeathsig_preexec", "pids_alive"]

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_READ_CHUNK_BYTES = 65536
_EXIT_POLL_SECONDS = 0.01
"""Poll interval for leader exit where pidfds are missing (not Linux); not a limit."""


@dataclass(frozen=True)
class CommandResult:
    """What one command did.

    Attributes:
        exit_code: the exit status, or None when a signal ended the leader.
        signal: the signal number that ended the leader, or None.
        output: the tail of stdout and stderr together, decoded as UTF-8 (bad bytes replaced).
        truncated: True when earlier output was dropped to keep the tail within its bound.
        timed_out: True when the deadline stopped the command.
        cancelled: True when the command was stopped because its caller was cancelled; ``run``
            re-raises the cancellation, so results it returns carry False.
        pid: the leader's pid (also the process group id).
        duration_seconds: wall time from start until the leader was reaped.
    """

    exit_code: int | None
    signal: int | None
    output: str
    truncated: bool
    timed_out: bool
    cancelled: bool
    pid: int
    duration_seconds: float

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict with the attribute names as keys."""
        return {
            "exit_code": self.exit_code,
            "signal": self.signal,
            "output": self.output,
            "truncated": self.truncated,
            "timed_out": self.timed_out,
            "cancelled": self.cancelled,
            "pid": self.pid,
            "duration_seconds": self.duration_seconds,
        }


def pids_alive(pgid: int) -> list[int]:
    """List the live (not zombie) processes of a process group.

    Reads ``/proc`` on Linux; elsewhere it can only tell whether the group answers a
    signal, and returns ``[pgid]`` when it does.

    Args:
        pgid: the process group id (a command's leader pid).

    Returns:
        The pids, ascending; empty when no live member is left.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            return [pgid]
        return [pgid]
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_bytes()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp ...
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return sorted(found)


class OutputTail:
    """The last ``max_bytes`` bytes of a byte stream; safe to feed from one thread and read from another."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self._buf = bytearray()
        self._total = 0
        self._lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self._lock:
            self._total += len(chunk)
            self._buf += chunk
            extra = len(self._buf) - self._max
            if extra > 0:
                del self._buf[:extra]

    @property
    def truncated(self) -> bool:
        with self._lock:
            return self._total > self._max

    def text(self) -> str:
        with self._lock:
            data = bytes(self._buf)
            cut = self._total > self._max
        if cut:
            # Do not start in the middle of a UTF-8 sequence (at most three continuation bytes).
            skip = 0
            while skip < 3 and skip < len(data) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", errors="replace")


class _Forwarder:
    """Hands decoded output to a caller's coroutine without ever slowing the pipe reader.

    Text waiting for a slow callback is bounded; the oldest waiting text is dropped first. A
    callback that raises is logged and not called again; the command is not disturbed.
    """

    def __init__(self, callback: Callable[[str], Awaitable[None]], max_chars: int) -> None:
        self._callback = callback
        self._max = max_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []
        self._pending_chars = 0
        self._done = False
        self._failed = False
        self._event = anyio.Event()

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(chunk, final=final)
        if text:
            self._pending.append(text)
            self._pending_chars += len(text)
            while self._pending_chars > self._max and len(self._pending) > 1:
                self._pending_chars -= len(self._pending.pop(0))
            if self._pending_chars > self._max:
                self._pending[0] = self._pending[0][-self._max :]
                self._pending_chars = len(self._pending[0])
        if final:
            self._done = True
        self._event.set()

    async def run(self) -> None:
        while True:
            await self._event.wait()
            self._event = anyio.Event()
            batch = "".join(self._pending)
            self._pending.clear()
            self._pending_chars = 0
            if batch and not self._failed:
                try:
                    await self._callback(batch)
                except Exception:  # the caller's live view failed; the command and its result go on
                    logger.exception("an output callback failed; live output is no longer forwarded")
                    self._failed = True
            if self._done and not self._pending:
                return


def pdeathsig_preexec(parent_pid: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that sets ``PR_SET_PDEATHSIG(SIGKILL)`` in the child, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    kill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent_pid:  # the engine died before the request took effect
            os.kill(os.getpid(), kill)

    return preexec


def _check_argv(argv: list[str]) -> list[str]:
    if not isinstance(argv, list) or not argv:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError("the command must be a non-empty list of strings")
    for arg in argv:
        if not isinstance(arg, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolError("every command argument must be a string", argument=repr(arg))
        if "\x00" in arg:
            raise ToolError("a command argument contains a NUL byte")
    return list(argv)


class GroupChild:
    """One started process group: its leader, its pipes, and the stop sequence.

    Args:
        argv: literal argv (no shell).
        cwd: working directory.
        env: the complete environment.
        protocol_pipes: False for a command (stdin from /dev/null, stdout and stderr merged in
            ``out_fd``); True for a protocol peer (``in_fd``, ``out_fd`` and ``err_fd`` apart).
        error: the error class raised when the process cannot start.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        *,
        protocol_pipes: bool = False,
        error: type[ShadowcodeError] = ToolError,
    ) -> None:
        argv = _check_argv(argv)
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.PIPE if protocol_pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if protocol_pipes else subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                preexec_fn=pdeathsig_preexec(os.getpid()),
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise error(f"cannot start {argv[0]!r}: {exc}", command=argv[0]) from exc
        self.pid = self.proc.pid
        self.started = time.monotonic()
        self.ended: float | None = None
        assert self.proc.stdout is not None
        self.out_fd = self.proc.stdout.fileno()
        self.in_fd = self.proc.stdin.fileno() if self.proc.stdin is not None else None
        self.err_fd = self.proc.stderr.fileno() if self.proc.stderr is not None else None
        for fd in (self.in_fd, self.out_fd, self.err_fd):
            if fd is not None:
                os.set_blocking(fd, False)
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(self.pid)
        self.reaped = False
        self.term_sent = False
        self.term_at = 0.0
        self.kill_sent = False
        self._stop_lock = anyio.Lock()

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """``(exit_code, signal)`` once the leader has exited (without reaping it), else None."""
        if self.reaped:
            rc = self.proc.returncode
            return (rc, None) if rc >= 0 else (None, -rc)
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return (None, None)
        if info is None or info.si_pid == 0:
            return None
        if info.si_code == os.CLD_EXITED:
            return (info.si_status, None)
        return (None, info.si_status)

    async def wait_exit(self) -> None:
        """Wait until the leader has exited; it stays unreaped."""
        while self.exit_status() is None:
            if self.pidfd is None:
                await anyio.sleep(_EXIT_POLL_SECONDS)
                continue
            # Each waiter watches its own duplicate: one descriptor admits one waiter at a time.
            fd = os.dup(self.pidfd)
            try:
                await anyio.wait_readable(fd)
            finally:
                os.close(fd)

    def _signal_group(self, sig: int) -> None:
        if self.reaped:  # never signal a group whose id may have been reused
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def stop(self) -> None:
        """TERM the group, wait the grace period for the leader, KILL the group, wait, reap.

        Safe to call again or concurrently; a repeated call only finishes what is left.
        """
        async with self._stop_lock:
            if self.reaped:
                return
            if self.exit_status() is None and not self.kill_sent:
                if not self.term_sent:
                    self.term_sent = True
                    self.term_at = time.monotonic()
                    self._signal_group(signal.SIGTERM)
                left = PROCESS_TERM_GRACE_SECONDS - (time.monotonic() - self.term_at)
                with anyio.move_on_after(max(0.0, left)):
                    await self.wait_exit()
            self.kill_sent = True
            self._signal_group(signal.SIGKILL)
            with anyio.move_on_after(PROCESS_REAP_DEADLINE_SECONDS):
                await self.wait_exit()
            self.reap()

    def reap(self) -> None:
        """Collect the leader's exit status (after group signalling) and release its pidfd."""
        if self.reaped:
            return
        if self.exit_status() is None:
            logger.warning("process %d did not exit after SIGKILL; leaving it unreaped", self.pid)
            return
        self.proc.wait()  # the leader has exited: this returns at once
        self.reaped = True
        self.ended = time.monotonic()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def close_pipe(self) -> None:
        """Close every pipe to the child (repeatable)."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()

    @property
    def duration_seconds(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started


async def _pump(child: GroupChild, tail: OutputTail, forwarder: _Forwarder | None, done: anyio.Event) -> None:
    """Read the child's pipe until end of file, feeding the tail and the forwarder."""
    try:
        while True:
            try:
                chunk = os.read(child.out_fd, _READ_CHUNK_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(child.out_fd)
                continue
            except OSError:
                break
            if not chunk:
                break
            tail.add(chunk)
            if forwarder is not None:
                forwarder.feed(chunk)
    finally:
        if forwarder is not None:
            forwarder.feed(b"", final=True)
        done.set()


def _drain_thread(fd: int, wake_fd: int, tail: OutputTail) -> None:
    """Background output reader: runs until end of file or until woken through ``wake_fd``."""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        sel.register(wake_fd, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                if key.fd == wake_fd:
                    return
                try:
                    chunk = os.read(fd, _READ_CHUNK_BYTES)
                except BlockingIOError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                tail.add(chunk)


@dataclass
class _Background:
    id: str
    child: GroupChild
    argv: list[str]
    cwd: Path
    project: Path
    started_at: int
    tail: OutputTail
    thread: threading.Thread
    wake_r: int
    wake_w: int

    def info(self) -> dict[str, Any]:
        status = self.child.exit_status()
        return {
            "id": self.id,
            "pid": self.child.pid,
            "argv": list(self.argv),
            "cwd": str(self.cwd),
            "project": str(self.project),
            "started_at": self.started_at,
            "running": status is None,
            "exit_code": None if status is None else status[0],
            "signal": None if status is None else status[1],
        }


class ProcessManager:
    """Starts, watches and stops the engine's child processes (ENG-04, SRV-21, SRV-23).

    One manager per engine. Commands run by :meth:`run` belong to the awaiting task;
    background processes belong to the manager until stopped or until :meth:`aclose`.
    """

    def __init__(self) -> None:
        self._background: dict[str, _Background] = {}
        self._running: set[GroupChild] = set()
        self._closed = False

    async def run(
        self,
        argv: list[str],
        cwd: Path,
        *,
        env: dict[str, str],
        timeout_seconds: float,
        output_max_bytes: int = COMMAND_OUTPUT_TAIL_BYTES,
        on_output: Callable[[str], Awaitable[None]] | None = None,
    ) -> CommandResult:
        """Run one command to completion, its deadline, or the caller's cancellation (ENG-04).

        Args:
            argv: the literal command line; ``argv[0]`` is looked up on ``env["PATH"]``.
            cwd: the folder to run in.
            env: the child's complete environment (nothing is inherited).
            timeout_seconds: more than 0 and at most ``COMMAND_TIMEOUT_MAX_SECONDS``; when it
                passes the group is stopped (TERM, grace, KILL) and ``timed_out`` is set.
            output_max_bytes: bytes of output kept (the tail), 1..``PROCESS_OUTPUT_MAX_BYTES``;
                ``COMMAND_OUTPUT_TAIL_BYTES`` by default.
            on_output: optional coroutine given output text as it arrives; it never holds
                up the pipe (text waiting for it is bounded and the oldest is dropped).

        Returns:
            A :class:`CommandResult`; the leader is reaped and its group signalled to end.

        Raises:
            ToolError: bad arguments, or the command cannot be started.
            anyio cancellation: re-raised once the group is stopped and the leader reaped.
        """
        if self._closed:
            raise ToolError("the process manager is closed")
        if not 0 < timeout_seconds <= COMMAND_TIMEOUT_MAX_SECONDS:
            raise ToolError(
                f"timeout_seconds must be more than 0 and at most {COMMAND_TIMEOUT_MAX_SECONDS}",
                timeout_seconds=timeout_seconds,
            )
        if not 1 <= output_max_bytes <= PROCESS_OUTPUT_MAX_BYTES:
            raise ToolError(
                f"output_max_bytes must be between 1 and {PROCESS_OUTPUT_MAX_BYTES}", output_max_bytes=output_max_bytes
            )
        child = GroupChild(argv, cwd, env)
        self._running.add(child)
        tail = OutputTail(output_max_bytes)
        forwarder = _Forwarder(on_output, output_max_bytes) if on_output is not None else None
        read_done = anyio.Event()
        timed_out = False
        try:
            async with anyio.create_task_group() as tg:
                reader = anyio.CancelScope()

                async def read() -> None:
                    with reader:
                        await _pump(child, tail, forwarder, read_done)

                tg.start_soon(read)
                if forwarder is not None:
                    tg.start_soon(forwarder.run)
                with anyio.move_on_after(timeout_seconds) as deadline:
                    await child.wait_exit()
                timed_out = deadline.cancelled_caught
                await child.stop()
                with anyio.move_on_after(PROCESS_PIPE_DRAIN_SECONDS):
                    await read_done.wait()
                reader.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await child.stop()
                child.close_pipe()
                self._running.discard(child)
        status = child.exit_status() or (None, None)
        return CommandResult(
            exit_code=status[0],
            signal=status[1],
            output=tail.text(),
            truncated=tail.truncated,
            timed_out=timed_out,
            cancelled=False,
            pid=child.pid,
            duration_seconds=child.duration_seconds,
        )

    def start_background(self, argv: list[str], cwd: Path, env: dict[str, str], project: Path) -> dict[str, Any]:
        """Start a process that outlives the task and connection that asked for it (SRV-23).

        Args:
            argv: the literal command line.
            cwd: the folder to run in.
            env: the child's complete environment.
            project: the canonical project it belongs to; listings and stops can filter on it.

        Returns:
            ``{"id": "bg_<hex>", "pid": int, "argv": [str], "cwd": str, "started_at": int}``
            (``started_at`` in Unix seconds).

        Raises:
            ToolError: bad arguments, the command cannot be started, ``BACKGROUND_PROCESSES_MAX``
                processes already run, or the manager is closed.
        """
        if self._closed:
            raise ToolError("the process manager is closed")
        if len(self._background) >= BACKGROUND_PROCESSES_MAX:
            raise ToolError(
                f"at most {BACKGROUND_PROCESSES_MAX} background processes may run; stop one first",
                limit=BACKGROUND_PROCESSES_MAX,
            )
        child = GroupChild(argv, cwd, env)
        tail = OutputTail(BACKGROUND_OUTPUT_MAX_BYTES)
        wake_r, wake_w = os.pipe()
        thread = threading.Thread(
            target=_drain_thread, args=(child.out_fd, wake_r, tail), name=f"bg-output-{child.pid}", daemon=True
        )
        entry = _Background(
            id=f"bg_{secrets.token_hex(8)}",
            child=child,
            argv=list(argv),
            cwd=Path(cwd),
            project=Path(project),
            started_at=int(time.time()),
            tail=tail,
            thread=thread,
            wake_r=wake_r,
            wake_w=wake_w,
        )
        thread.start()
        self._background[entry.id] = entry
        return {
            "id": entry.id,
            "pid": child.pid,
            "argv": list(entry.argv),
            "cwd": str(entry.cwd),
            "started_at": entry.started_at,
        }

    def list_background(self, project: Path | None = None) -> list[dict[str, Any]]:
        """The background processes not yet stopped, oldest first (SRV-23).

        Args:
            project: when given, only that project's processes.

        Returns:
            ``[{"id", "pid", "argv", "cwd", "project", "started_at", "running", "exit_code", "signal"}]``;
            an exited process stays listed (unreaped) until it is stopped.
        """
        return [b.info() for b in self._background.values() if project is None or b.project == Path(project)]

    def background_output(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """The kept tail of a background process's output (SRV-23).

        Args:
            bg_id: the id returned by :meth:`start_background`.
            project: when given, an id of another project is treated as unknown.

        Returns:
            ``{"id", "output": str, "truncated": bool, "running": bool}``.

        Raises:
            NotFound: no such running background process (in this project).
        """
        entry = self._find(bg_id, project)
        return {
            "id": entry.id,
            "output": entry.tail.text(),
            "truncated": entry.tail.truncated,
            "running": entry.child.exit_status() is None,
        }

    async def stop_background(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """Stop a background process group: TERM, grace, KILL, reap (SRV-23).

        Args:
            bg_id: the id returned by :meth:`start_background`.
            project: when given, an id of another project is treated as unknown.

        Returns:
            ``{"id", "pid", "exit_code", "signal", "output", "truncated"}`` (final output tail).

        Raises:
            NotFound: no such background process (in this project).
        """
        entry = self._find(bg_id, project)
        del self._background[entry.id]
        with anyio.CancelScope(shield=True):
            await self._finish(entry)
        status = entry.child.exit_status() or (None, None)
        return {
            "id": entry.id,
            "pid": entry.child.pid,
            "exit_code": status[0],
            "signal": status[1],
            "output": entry.tail.text(),
            "truncated": entry.tail.truncated,
        }

    async def aclose(self) -> None:
        """Stop every background process and every command still running; refuse new ones.

        Called when the engine closes (a temporary engine stops its background processes, SRV-23).
        """
        self._closed = True
        entries = list(self._background.values())
        self._background.clear()
        children = list(self._running)
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(self._finish, entry)
                for child in children:
                    tg.start_soon(child.stop)

    def _find(self, bg_id: str, project: Path | None) -> _Background:
        entry = self._background.get(bg_id)
        if entry is None or (project is not None and entry.project != Path(project)):
            raise NotFound(f"no background process {bg_id!r}", background_id=bg_id)
        return entry

    async def _finish(self, entry: _Background) -> None:
        await entry.child.stop()
        await anyio.to_thread.run_sync(entry.thread.join, PROCESS_PIPE_DRAIN_SECONDS)
        os.write(entry.wake_w, b"x")
        await anyio.to_thread.run_sync(entry.thread.join)
        entry.child.close_pipe()
        os.close(entry.wake_r)
        os.close(entry.wake_w)
