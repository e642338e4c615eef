"""Child processes of the agent: bounded commands, and the background processes it starts.

Contract (ENG-04, SRV-21, SRV-23):

- Every child is a :class:`shadowcode.process_group.GroupChild`: a literal ``argv`` (no shell)
  in the given folder with exactly the given environment, stdin from ``/dev/null``, stdout and
  stderr merged into one pipe, leading its own process group (with the parent-death signal on
  Linux), stopped by TERM to the group, grace, KILL to the group, then reaping the leader.
- Output is read continuously, so a chatty child never blocks on a full pipe; only the last
  ``output_max_bytes`` bytes are kept.
- A command ended by its own exit also takes its leftover group members down (``SIGKILL``):
  work meant to outlive a command is a background process.
- Background processes (SRV-23, :mod:`shadowcode.agent.background`) belong to the manager, not
  to any task: cancelling the task or the connection that started one leaves it running until
  :meth:`ProcessManager.stop_background` or :meth:`ProcessManager.aclose`. Their output goes to
  a bounded ring buffer.
"""

from __future__ import annotations

import codecs
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from shadowcode.agent.background import BackgroundProcesses
from shadowcode.errors import ToolError
from shadowcode.limits import (
    COMMAND_OUTPUT_TAIL_BYTES,
    COMMAND_TIMEOUT_MAX_SECONDS,
    PROCESS_OUTPUT_MAX_BYTES,
    PROCESS_PIPE_DRAIN_SECONDS,
)
from shadowcode.process_group import GroupChild, OutputTail

__all__ = ["CommandResult", "ProcessManager"]

logger = logging.getLogger(__name__)

_READ_CHUNK_BYTES = 65536
"""Bytes asked of one pipe read; a read size, not a limit."""


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


class ProcessManager:
    """Starts, watches and stops the engine's child processes (ENG-04, SRV-21, SRV-23).

    One manager per engine. Commands run by :meth:`run` belong to the awaiting task;
    background processes belong to the manager until stopped or until :meth:`aclose`.
    """

    def __init__(self) -> None:
        self._background = BackgroundProcesses()
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

        See :meth:`shadowcode.agent.background.BackgroundProcesses.start` (arguments, result, errors).
        """
        return self._background.start(argv, cwd, env, project)

    def list_background(self, project: Path | None = None) -> list[dict[str, Any]]:
        """The background processes not yet stopped, oldest first, optionally of one project only (SRV-23).

        See :meth:`shadowcode.agent.background.BackgroundProcesses.listing`.
        """
        return self._background.listing(project)

    def background_output(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """The kept tail of a background process's output (SRV-23).

        See :meth:`shadowcode.agent.background.BackgroundProcesses.output`.

        Raises:
            NotFound: no such running background process (in this project).
        """
        return self._background.output(bg_id, project=project)

    async def stop_background(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """Stop a background process group: TERM, grace, KILL, reap (SRV-23).

        See :meth:`shadowcode.agent.background.BackgroundProcesses.stop`.

        Raises:
            NotFound: no such background process (in this project).
        """
        return await self._background.stop(bg_id, project=project)

    async def aclose(self) -> None:
        """Stop every background process and every command still running; refuse new ones.

        Called when the engine closes (a temporary engine stops its background processes, SRV-23).
        """
        self._closed = True
        entries = self._background.close()
        children = list(self._running)
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(entry.finish)
                for child in children:
                    tg.start_soon(child.stop)
