"""The bounded stdio transport to an external MCP server, and its process group (CLI-12, CLI-13, CLI-14, CLI-19).

Contract:
- The server starts from its literal argv (no shell) in the given folder with exactly the
  given environment, as the leader of its own session and process group, with the Linux
  parent-death signal set (see :mod:`shadowcode.process_group`). stdin, stdout and stderr
  are pipes read and written on the event loop.
- Incoming stdout frames: at most ``frame_max_bytes`` per line (a longer line fails the
  connection as soon as it is seen, without buffering it whole), ``lifetime_max_bytes`` per
  connection, and ``frames_per_second_max`` lines per sliding one-second window, blank lines
  counted. A line that is not one JSON-RPC 2.0 message, or a partial line at end of file,
  fails the connection too. A failure ends the read stream, so every pending request of the
  SDK session fails at once; :attr:`StdioServer.failure` names the cause.
- stderr is drained until end of file; only the newest ``stderr_capture_bytes`` are kept, for
  diagnostics that are redacted before display and never stored in task history.
- Leaving the context stops the server: SIGTERM to the group, PROCESS_TERM_GRACE_SECONDS for
  the leader, SIGKILL to the group, then the leader is reaped (never before the group was
  signalled). The pipes are then drained for at most PROCESS_PIPE_DRAIN_SECONDS and closed.
  :attr:`StdioServer.cleanup` tells how it ended (``exited``, ``terminated``, ``killed``,
  ``unreaped``) and :attr:`StdioServer.stragglers` how many group members outlived it.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from shadowcode.errors import UpstreamServerError
from shadowcode.limits import (
    MCP_CONNECTION_MAX_BYTES,
    MCP_FRAME_MAX_BYTES,
    MCP_FRAMES_PER_SECOND_MAX,
    MCP_STDERR_CAPTURE_BYTES,
    MCP_STDIO_PROBE_SECONDS,
    PROCESS_PIPE_DRAIN_SECONDS,
    PROCESS_TERM_GRACE_SECONDS,
)
from shadowcode.ndjson import FrameRate, FrameTooLong, LineReader, read_fd_chunk
from shadowcode.process_group import GroupChild, OutputTail, pids_alive

__all__ = ["ClientLimits", "StdioServer"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClientLimits:
    """The CLI-13 transport limits and the CLI-16 discovery probe bound; defaults come from ``shadowcode.limits``."""

    frame_max_bytes: int = MCP_FRAME_MAX_BYTES
    lifetime_max_bytes: int = MCP_CONNECTION_MAX_BYTES
    frames_per_second_max: int = MCP_FRAMES_PER_SECOND_MAX
    stderr_capture_bytes: int = MCP_STDERR_CAPTURE_BYTES
    probe_seconds: float = MCP_STDIO_PROBE_SECONDS


class _Failed(Exception):
    """The server broke the transport contract; the message names how."""


class StdioServer:
    """One external stdio server process and its bounded newline transport (CLI-12, CLI-13, CLI-19).

    Use as an async context manager; it yields ``(read_stream, write_stream)`` for
    ``mcp.client.session.ClientSession``.

    Args:
        argv: the literal command.
        cwd: the canonical project directory.
        env: the child's complete environment.
        limits: transport limits.
        label: the definition id, for log lines.

    Raises:
        UpstreamServerError: on entry, when the command cannot be started.
    """

    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], *, limits: ClientLimits | None = None, label: str = ""
    ) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env)
        self.limits = limits or ClientLimits()
        self.label = label or argv[0]
        self.failure: str | None = None
        self.failed = anyio.Event()
        self.cleanup: str | None = None
        self.stragglers = 0
        self.received_bytes = 0
        self._stderr = OutputTail(self.limits.stderr_capture_bytes)
        self._child: GroupChild | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._read_send: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._write_recv: MemoryObjectReceiveStream[SessionMessage] | None = None
        self._stdout_done = anyio.Event()
        self._stderr_done = anyio.Event()
        self._rate = FrameRate(self.limits.frames_per_second_max)
        self._closing = False
        self._streams: tuple[Any, ...] = ()

    @property
    def pid(self) -> int | None:
        """The leader's pid (also the process group id), once started."""
        return None if self._child is None else self._child.pid

    def stderr_text(self) -> str:
        """The kept tail of the server's stderr (not redacted: redact before showing)."""
        return self._stderr.text()

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        self._child = GroupChild(self.argv, self.cwd, self.env, protocol_pipes=True, error=UpstreamServerError)
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
        self._read_send, self._write_recv = read_send, write_recv
        self._streams = (read_send, read_recv, write_send, write_recv)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read_stdout)
        self._tg.start_soon(self._write_stdin)
        self._tg.start_soon(self._drain_stderr)
        return read_recv, write_send

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._child is not None and self._tg is not None
        child = self._child
        self._closing = True
        with anyio.CancelScope(shield=True):
            if child.exit_status() is None and self._stdout_done.is_set():
                # The server closed its output: it is most likely exiting; let the exit land
                # (bounded by the TERM grace) so the outcome says "exited", not "terminated".
                with anyio.move_on_after(PROCESS_TERM_GRACE_SECONDS):
                    while child.exit_status() is None:
                        await anyio.sleep(0.01)
            alive = child.exit_status() is None
            await child.stop()
            status = child.exit_status()
            if not child.reaped:
                self.cleanup = "unreaped"
            elif not alive:
                self.cleanup = "exited"
            elif status is not None and status[1] == signal.SIGKILL:
                self.cleanup = "killed"
            else:
                self.cleanup = "terminated"
            with anyio.move_on_after(PROCESS_PIPE_DRAIN_SECONDS):
                await self._stdout_done.wait()
                await self._stderr_done.wait()
        # The task group is the innermost scope again: end its readers and writer, then close the pipes.
        self._tg.cancel_scope.cancel()
        try:
            await self._tg.__aexit__(None, None, None)
        finally:  # a cancelled caller gets its cancellation out of the task group: close the pipes all the same
            for stream in self._streams:
                stream.close()
            child.close_pipe()
        # SIGKILL to the group is delivered asynchronously: give it the grace period to land.
        with anyio.move_on_after(PROCESS_TERM_GRACE_SECONDS):
            while pids_alive(child.pid):
                await anyio.sleep(0.01)
        self.stragglers = len(pids_alive(child.pid))
        if self.stragglers:
            logger.warning("MCP server %s left %d processes in its group", self.label, self.stragglers)

    def _fail(self, reason: str) -> None:
        if self.failure is None and not self._closing:
            self.failure = reason
            logger.warning("MCP server %s: closing the connection: %s", self.label, reason)
        self.failed.set()
        if self._read_send is not None:
            self._read_send.close()

    def _count_frame(self) -> None:
        if not self._rate.admit():
            raise _Failed(f"the server sent more than {self.limits.frames_per_second_max} frames in one second")

    async def _receive(self) -> bytes:
        assert self._child is not None
        data = await read_fd_chunk(self._child.out_fd)
        self.received_bytes += len(data)
        if self.received_bytes > self.limits.lifetime_max_bytes:
            raise _Failed(f"the server sent more than {self.limits.lifetime_max_bytes} bytes")
        return data

    async def _read_stdout(self) -> None:
        assert self._read_send is not None
        reader = LineReader(self._receive, self.limits.frame_max_bytes)
        try:
            while True:
                try:
                    line = await reader.line()
                except FrameTooLong:
                    raise _Failed(f"the server sent a frame longer than {self.limits.frame_max_bytes} bytes") from None
                if line is None:
                    if reader.leftover().strip():
                        raise _Failed("the server's output ended in the middle of a frame")
                    raise _Failed("the server closed its output")
                self._count_frame()
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    raise _Failed("the server sent a frame that is not a JSON-RPC message") from None
                try:
                    await self._read_send.send(SessionMessage(message))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
        except _Failed as exc:
            self._fail(str(exc))
        finally:
            self._stdout_done.set()

    async def _write_stdin(self) -> None:
        assert self._child is not None and self._write_recv is not None
        fd = self._child.in_fd
        assert fd is not None  # a protocol peer's stdin is a pipe
        try:
            async for item in self._write_recv:
                data = item.message.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8") + b"\n"
                view = memoryview(data)
                while view:
                    try:
                        written = os.write(fd, view)
                    except BlockingIOError:
                        await anyio.wait_writable(fd)
                        continue
                    except OSError:
                        self._fail("the server closed its input")
                        return
                    view = view[written:]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return

    async def _drain_stderr(self) -> None:
        assert self._child is not None and self._child.err_fd is not None  # a protocol peer's stderr is a pipe
        try:
            while True:
                data = await read_fd_chunk(self._child.err_fd)
                if not data:
                    return
                self._stderr.add(data)
        finally:
            self._stderr_done.set()
