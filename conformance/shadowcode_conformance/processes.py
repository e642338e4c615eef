"""Starting target processes with bounded waits, and making sure none outlive a check.

Every process runs in a new session (its own process group), so a whole tree can be
signalled at once. As a last resort, :func:`kill_marked` finds processes by a marker
value in their environment (the check's private ``SHADOWCODE_HOME``), which catches
helpers that left the group.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process, TaskGroup

from shadowcode_conformance.limits import (
    CLEANUP_WAIT_SECONDS,
    COMMAND_OUTPUT_MAX_BYTES,
    EXEC_SETTLE_SECONDS,
    STDERR_TAIL_CHARS,
)

__all__ = [
    "Completed",
    "announced_port",
    "drain",
    "end_input",
    "kill_group",
    "kill_marked",
    "reap",
    "run_command",
    "spawn",
    "start_process",
    "tail",
]


@dataclass(frozen=True)
class Completed:
    """A finished command.

    Attributes:
        argv: the command as run.
        returncode: exit status; negative for a signal; None if it could not be reaped.
        stdout: captured bytes (at most ``COMMAND_OUTPUT_MAX_BYTES``).
        stderr: captured bytes (same bound).
        timed_out: True when the time bound ran out and the group was killed.
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool


def tail(data: bytes | bytearray | str, chars: int = STDERR_TAIL_CHARS) -> str:
    """The last ``chars`` characters of ``data`` on one line, for a check's detail."""
    text = bytes(data).decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else data
    text = " | ".join(line for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= chars else "..." + text[-chars:]


def kill_group(pid: int) -> None:
    """Send SIGKILL to the process group led by ``pid``; a vanished group is ignored."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


_PF_KTHREAD = 0x00200000
"""The kernel-thread bit of ``/proc/PID/stat``'s flags field."""

_EXEC_POLL_SECONDS = 0.02


def _between_fork_and_environ(entry: Path) -> bool:
    """Whether a process with an empty environment is a program still being started.

    Kernel threads and zombies have no environment for good; any other process with an empty
    ``environ`` is inside ``execve``, past the point where its parent saw it start.
    """
    try:
        stat = (entry / "stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2 :].split()
        return fields[0] != b"Z" and not int(fields[6]) & _PF_KTHREAD
    except (OSError, ValueError, IndexError):
        return False


def kill_marked(marker: str) -> list[int]:
    """Kill every process of this user whose environment holds ``marker`` (Linux ``/proc``).

    A process whose environment is not readable yet (a program still starting) is read again
    for up to ``EXEC_SETTLE_SECONDS``, so a process started just before the sweep is not missed.

    Args:
        marker: an ``NAME=value`` string unique to one check, e.g. its ``SHADOWCODE_HOME``.

    Returns:
        The pids that were signalled (empty where ``/proc`` is unavailable).
    """
    needle = marker.encode("utf-8")
    killed: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    me = os.getpid()
    starting: list[Path] = []
    candidates = [e for e in proc.iterdir() if e.name.isdigit() and int(e.name) != me]
    deadline = time.monotonic() + EXEC_SETTLE_SECONDS
    while candidates:
        for entry in candidates:
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if not environ:
                if _between_fork_and_environ(entry):
                    starting.append(entry)
            elif needle in environ.split(b"\0"):
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
        if not starting or time.monotonic() >= deadline:
            break
        candidates, starting = starting, []
        time.sleep(_EXEC_POLL_SECONDS)
    return killed


_PORT_LINE = re.compile(rb"PORT (\d+)")
"""The line a fixture server prints once it listens."""


async def drain(
    stream: ByteReceiveStream | None,
    sink: bytearray,
    limit: int = COMMAND_OUTPUT_MAX_BYTES,
    *,
    announce: tuple[re.Pattern[str], anyio.Event] | None = None,
) -> None:
    """Read ``stream`` to its end, keeping at most ``limit`` bytes in ``sink``.

    With ``announce=(pattern, event)``, ``event`` is set once the kept bytes, decoded as UTF-8,
    match ``pattern`` (a server's ready line), and at the stream's end in any case, so that
    whoever waits on it wakes then too.
    """
    if stream is None:
        if announce is not None:
            announce[1].set()
        return
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        while True:
            chunk = await stream.receive()
            room = limit - len(sink)
            if room > 0:
                sink.extend(chunk[:room])
            if announce is not None and not announce[1].is_set():
                if announce[0].search(sink.decode("utf-8", "replace")):
                    announce[1].set()
    if announce is not None:
        announce[1].set()


async def announced_port(proc: Process, tg: TaskGroup, out: bytearray, seconds: float = 30.0) -> int | None:
    """The port a fixture server announces with a ``PORT <n>`` line on its stdout.

    Drains the process's stdout into ``out`` and its stderr away, as tasks of ``tg``, for as
    long as ``tg`` lives; the caller cancels ``tg`` when it is done with the server.

    Args:
        proc: the fixture server, started with piped stdout and stderr.
        tg: the task group the drains run in.
        out: receives stdout (bounded like :func:`drain`); its tail explains a failed start.
        seconds: how long to wait for the line.

    Returns:
        The port, or None when the process ended or said nothing within ``seconds``.
    """
    tg.start_soon(drain, proc.stdout, out)
    tg.start_soon(drain, proc.stderr, bytearray())
    with anyio.move_on_after(seconds):
        while not _PORT_LINE.search(out) and proc.returncode is None:
            await anyio.sleep(0.05)
    found = _PORT_LINE.search(out)
    return int(found.group(1)) if found is not None else None


async def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_seconds: float,
    stdin: bytes = b"",
) -> Completed:
    """Run ``argv`` to completion within ``timeout_seconds``, stdin fed then closed.

    When the command exits, what is left of its process group is killed so pipes close;
    on timeout the whole group is killed and ``timed_out`` is set.

    Args:
        argv: program and arguments (no shell).
        env: the complete environment.
        cwd: working directory.
        timeout_seconds: wall-clock bound for the whole command.
        stdin: bytes written before stdin is closed.

    Returns:
        A :class:`Completed`.

    Raises:
        OSError: the program could not be started.
    """
    out, err = bytearray(), bytearray()
    proc = await start_process(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=dict(env), cwd=cwd)
    timed_out = False
    try:
        with anyio.move_on_after(timeout_seconds) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out)
                tg.start_soon(drain, proc.stderr, err)
                if proc.stdin is not None:
                    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        if stdin:
                            await proc.stdin.send(stdin)
                    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        await proc.stdin.aclose()
                await proc.wait()
                kill_group(proc.pid)
        timed_out = scope.cancelled_caught
    finally:
        await reap(proc)
    return Completed(tuple(argv), proc.returncode, bytes(out), bytes(err), timed_out)


@asynccontextmanager
async def spawn(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> AsyncGenerator[Process, None]:
    """Start ``argv`` with piped stdio for an interactive exchange; clean up on exit.

    On leaving the block stdin is closed, the process gets ``CLEANUP_WAIT_SECONDS`` to exit,
    then its group is killed and it is reaped. The caller drains stdout and stderr.

    Args:
        argv: program and arguments (no shell).
        env: the complete environment.
        cwd: working directory.

    Yields:
        The running anyio ``Process``.

    Raises:
        OSError: the program could not be started.
    """
    proc = await start_process(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=dict(env), cwd=cwd)
    try:
        yield proc
    finally:
        with anyio.CancelScope(shield=True):
            if proc.stdin is not None:
                with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await proc.stdin.aclose()
            with anyio.move_on_after(CLEANUP_WAIT_SECONDS):
                await proc.wait()
            await reap(proc)


async def start_process(argv: Sequence[str], **options: Any) -> Process:
    """``anyio.open_process(argv, start_new_session=True, **options)``, shielded from cancellation.

    A cancellation delivered while asyncio connects a new process's pipes leaves the process
    unreaped and its pipes open, owned by nobody. Starting is short, so it is finished first;
    the caller's cleanup, entered with no await in between, then owns the process.

    Raises:
        OSError: the program could not be started.
    """
    with anyio.CancelScope(shield=True):
        return await anyio.open_process(list(argv), start_new_session=True, **options)
    raise AssertionError("unreachable: a shielded scope nobody cancels swallows nothing")


async def end_input(proc: Process, wait_seconds: float) -> None:
    """Close ``proc``'s stdin, as a client that is done does, and wait at most ``wait_seconds``
    for it to exit; whether it did is ``proc.returncode``, and killing it is the caller's."""
    if proc.stdin is not None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await proc.stdin.aclose()
    with anyio.move_on_after(wait_seconds):
        await proc.wait()


async def reap(proc: Process) -> None:
    """Kill ``proc``'s group, wait for the leader (at most ``CLEANUP_WAIT_SECONDS``) and close its
    pipes; shielded from cancellation."""
    with anyio.CancelScope(shield=True):
        kill_group(proc.pid)
        with anyio.move_on_after(CLEANUP_WAIT_SECONDS):
            await proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.aclose()
