"""A child process leading its own process group, and how to stop it (ENG-04, SRV-21, CLI-19).

Contract:
- A child is a literal ``argv`` (no shell, no NUL bytes), started in the given folder with
  exactly the given environment, as the leader of its own session and process group, so a
  stop reaches its descendants. A command gets stdin from ``/dev/null`` with stdout and stderr
  merged into one pipe; a protocol peer gets three separate pipes. Every pipe is non-blocking.
- On Linux the child also asks the kernel for ``SIGKILL`` when the thread that started it
  dies (``PR_SET_PDEATHSIG``), so a killed parent leaves no children behind. Start children
  from a long-lived thread (the event loop's): the signal follows the thread.
- Stopping is always: ``SIGTERM`` to the group, up to ``PROCESS_TERM_GRACE_SECONDS`` for the
  leader to exit, ``SIGKILL`` to the group, wait for the leader, then reap it. The leader is
  left unreaped (a zombie) until group signalling is over, so its pid, which is also the
  group id, cannot be reused by an unrelated process that a late signal would reach.
- :class:`OutputTail` keeps the newest bytes of a child's output within a bound.

Processes that deliberately leave their group (a new ``setsid``) are outside this boundary.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

import anyio

from shadowcode.errors import ShadowcodeError, ToolError
from shadowcode.json_values import json_array
from shadowcode.limits import PROCESS_REAP_DEADLINE_SECONDS, PROCESS_TERM_GRACE_SECONDS
from shadowcode.parent_death import pdeathsig_preexec

__all__ = ["GroupChild", "OutputTail", "kill_group", "pdeathsig_preexec", "pids_alive", "read_output"]

logger = logging.getLogger(__name__)

_EXIT_POLL_SECONDS = 0.01
"""Poll interval for leader exit where pidfds are missing (not Linux); not a limit."""


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


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (started with ``start_new_session=True``).

    Call it only before ``proc`` is reaped: until then its pid, the group id, cannot be reused.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def read_output(proc: subprocess.Popen[bytes], deadline: float, max_bytes: int) -> tuple[bytes, bool, bool]:
    """Read a child's stdout until EOF, more than ``max_bytes`` bytes, or the monotonic ``deadline``.

    Returns:
        ``(data, truncated, timed_out)``: ``data`` is at most ``max_bytes`` bytes, what arrived
        before the end; ``truncated`` when more than ``max_bytes`` came (reading stopped there);
        ``timed_out`` when the deadline passed first.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False, True
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False, False
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True, False


def _check_argv(given: object) -> list[str]:
    items = json_array(given)
    if not items:
        raise ToolError("the command must be a non-empty list of strings")
    argv: list[str] = []
    for arg in items:
        if not isinstance(arg, str):
            raise ToolError("every command argument must be a string", argument=repr(arg))
        if "\x00" in arg:
            raise ToolError("a command argument contains a NUL byte")
        argv.append(arg)
    return argv


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
