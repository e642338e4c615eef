"""Long-lived processes of a benchmark run (the headless engine, the HTTP servers).

A :class:`ServerProcess` starts a command in a process group of its own with stdin closed,
stdout discarded and stderr written to a file, waits (with a deadline) for the line that
says it is ready, reads its memory from /proc, and always stops the whole group: SIGTERM,
a bounded wait, then SIGKILL. Use it as a context manager so a failure anywhere in the run
still stops it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Final

from bench.driver import BenchError

__all__ = ["ServerProcess", "memory_kib"]

_POLL_SECONDS: Final = 0.05
_STOP_WAIT_SECONDS: Final = 20.0
_KILL_WAIT_SECONDS: Final = 10.0
_TAIL_CHARS: Final = 1500


def memory_kib(pid: int) -> dict[str, int | None]:
    """Peak and current resident set of a live process, from ``/proc/<pid>/status`` (Linux).

    Args:
        pid: the process.

    Returns:
        ``{"rss_hwm_kib": int | None, "rss_kib": int | None}`` (KiB; None when unreadable).
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return {"rss_hwm_kib": None, "rss_kib": None}

    def field(name: str) -> int | None:
        m = re.search(rf"^{name}:\s+(\d+) kB", status, re.MULTILINE)
        return int(m.group(1)) if m else None

    return {"rss_hwm_kib": field("VmHWM"), "rss_kib": field("VmRSS")}


class ServerProcess:
    """One server process of the run, in its own process group.

    Args:
        name: what it is, for messages (``engine``, ``gateway`` ...).
        argv: the command, spawned without a shell.
        env: its whole environment.
        cwd: its working folder.
        stderr_path: where its stderr goes (read to find the ready line).
        ready: a pattern matched against stderr; its first group, if any, is kept as ``ready_value``.
        ready_timeout_seconds: how long to wait for the ready line.

    Raises:
        BenchError: (on entering) the process exited or did not print the ready line in time;
            it is stopped before the error is raised.
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        stderr_path: Path,
        ready: str,
        ready_timeout_seconds: float,
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.stderr_path = stderr_path
        self.ready = re.compile(ready)
        self.ready_timeout_seconds = ready_timeout_seconds
        self.ready_value: str | None = None
        self.ready_seconds: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The process id (only valid once started)."""
        if self.proc is None:
            raise BenchError(f"{self.name} was not started", target=self.name)
        return self.proc.pid

    def stderr_tail(self) -> str:
        """The last characters the process wrote on stderr."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-_TAIL_CHARS:]
        except OSError:
            return ""

    def memory(self) -> dict[str, int | None]:
        """Its peak and current resident set now; see :func:`memory_kib`."""
        return memory_kib(self.pid)

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> ServerProcess:
        started = time.monotonic()
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - started
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _wait_ready(self, started: float) -> None:
        assert self.proc is not None
        deadline = started + self.ready_timeout_seconds
        while True:
            m = self.ready.search(self.stderr_tail())
            if m:
                self.ready_value = m.group(1) if m.groups() else m.group(0)
                return
            if self.proc.poll() is not None:
                raise BenchError(
                    f"{self.name} exited {self.proc.returncode} before it was ready: {self.stderr_tail()}",
                    target=self.name,
                )
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{self.name} was not ready within {self.ready_timeout_seconds:g} s: {self.stderr_tail()}",
                    target=self.name,
                )
            time.sleep(_POLL_SECONDS)

    def stop(self) -> int | None:
        """Stop the process group: SIGTERM, a bounded wait, then SIGKILL; always reaps.

        Returns:
            The exit status, or None when it was never started.
        """
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=_STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        # Whatever the leader did, nothing of its group may outlive the run.
        self._signal_group(signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.wait(timeout=_KILL_WAIT_SECONDS)
        return self.proc.returncode

    def _signal_group(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
