"""A bounded newline-delimited JSON-RPC transport over the process's stdin and stdout (SRV-01, SRV-25).

Contract:
- fd 0 and fd 1 are claimed at start: the wire moves to private descriptors, fd 0 then reads
  ``/dev/null`` and fd 1 points at stderr, so stray output of handlers or children never
  reaches the wire. Both pipes are read and written on the event loop (no worker threads).
- Incoming frames: at most ``frame_max_bytes`` per line (a longer line is refused as soon as
  it is seen, without buffering it whole), ``lifetime_max_bytes`` per connection,
  ``frames_per_second_max`` lines per sliding one-second window (blank lines count), and a
  first JSON-RPC *request* within ``init_deadline_seconds`` (any method, ``ping`` included;
  blank lines, notifications, responses and frames that are not JSON-RPC do not count).
  Crossing any of these closes the connection: the stream can no longer be trusted. A frame
  that is not a valid JSON-RPC message is answered here with a JSON-RPC error (see
  :func:`decode_frame`) and the connection stays open. Each limit crossed is named in one
  stderr line starting ``shadowcode: closing the connection:``.
- Outgoing: one JSON object per line; a write that cannot complete within
  ``write_deadline_seconds`` drops the client (connection closed). A write that fails
  (EPIPE: the client closed its end of stdout) closes the connection the same way.
- EOF on stdin (a partial last frame is dropped) ends the read side once every request
  already read has been answered, or after ``eof_drain_seconds``; then the SDK finishes and
  the transport returns. A client that writes its requests and closes stdin still gets its
  answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from shadowcode import limits
from shadowcode.json_values import json_object
from shadowcode.mcp.server.batches import Batches, is_batch
from shadowcode.mcp.server.direct_calls import Answer, DirectToolCalls
from shadowcode.mcp.server.handover import MARK, Handover
from shadowcode.mcp.server.jsonrpc import invalid_request, is_notification_with_id
from shadowcode.ndjson import FrameRate, FrameTooLong, LineReader, read_fd_chunk

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from shadowcode.mcp.server.lazy_start import LazyStart
else:
    from shadowcode.mcp.server.lazy_modules import lazy_module

    types = lazy_module("mcp_types")  # imported on first use: lazy_start

__all__ = ["StdioLimits", "claim_stdio", "decode_frame", "stdio_transport"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StdioLimits:
    """The SRV-25 transport limits; defaults come from ``shadowcode.limits``."""

    frame_max_bytes: int = limits.STDIO_FRAME_MAX_BYTES
    lifetime_max_bytes: int = limits.STDIO_CONNECTION_MAX_BYTES
    frames_per_second_max: int = limits.STDIO_FRAMES_PER_SECOND_MAX
    init_deadline_seconds: float = limits.STDIO_INIT_DEADLINE_SECONDS
    write_deadline_seconds: float = limits.STDIO_WRITE_DEADLINE_SECONDS
    eof_drain_seconds: float = limits.OPERATION_DEADLINE_SECONDS


_WATCH_BYTES = 64


def _session_message(message: types.JSONRPCMessage) -> SessionMessage:
    """The SDK's envelope for ``message``; the SDK is imported only once a frame must reach it (lazy_start)."""
    from mcp.shared.message import SessionMessage

    return SessionMessage(message)


class _LimitCrossed(Exception):
    """The peer crossed a transport limit; the message names it."""


def claim_stdio() -> tuple[int, int]:
    """Move the wire off fd 0/1 onto private descriptors; returns ``(read_fd, write_fd)``.

    Afterwards fd 0 reads ``/dev/null`` and fd 1 writes to stderr. Both returned descriptors
    are non-blocking and close-on-exec.
    """
    sys.stdout.flush()
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    for fd in (read_fd, write_fd):
        os.set_inheritable(fd, False)
        os.set_blocking(fd, False)
    return read_fd, write_fd


class _Reader:
    """SRV-25's policy over the shared line splitter.

    Every byte read counts for the lifetime limit, every line (blank ones too) for the rate.
    Behind a stdio front or a relay the socket is read until they hand over the client's
    stdin, which is read from then on with the same line state and counts
    (:mod:`shadowcode.mcp.server.handover`).
    """

    def __init__(self, fd: int, lim: StdioLimits, handover: Handover | None = None) -> None:
        self.fd = fd
        self.lim = lim
        self.handover = handover
        self.handed_over = anyio.Event()
        self.total = 0
        self.rate = FrameRate(lim.frames_per_second_max)
        self.lines = LineReader(self.chunk, lim.frame_max_bytes)

    async def chunk(self) -> bytes:
        handover = self.handover
        if handover is None or handover.taken:
            data = await read_fd_chunk(self.fd)
        else:
            data = await _receive(handover)
            if handover.taken:
                assert handover.stdin is not None
                self.fd = handover.stdin
                self.handed_over.set()
                data = data or await read_fd_chunk(self.fd)
        self.total += len(data)
        if self.total > self.lim.lifetime_max_bytes:
            raise _LimitCrossed(f"the connection sent more than {self.lim.lifetime_max_bytes} bytes in its lifetime")
        return data

    def count_frame(self) -> None:
        """Sliding one-second window: the (max+1)th frame within any second crosses the limit."""
        if not self.rate.admit():
            raise _LimitCrossed(f"more than {self.lim.frames_per_second_max} frames in one second")

    async def frames(self) -> AsyncIterator[bytes]:
        """Complete lines, CR/LF removed and blank ones dropped (but counted); ends at EOF.

        A partial line may exceed the frame limit by one byte (a possible trailing CR) before it
        is refused; a partial frame at EOF is dropped.
        """
        while True:
            try:
                line = await self.lines.line()
            except FrameTooLong:
                raise _LimitCrossed(f"a frame is longer than {self.lim.frame_max_bytes} bytes") from None
            if line is None:
                return
            self.count_frame()
            if line.strip():
                yield line


def _parse_error(message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message=message))


def _error_for(line: bytes) -> types.JSONRPCError:
    """The JSON-RPC error answering a frame that is not a valid JSON-RPC message."""
    try:
        doc = json.loads(line)
    except ValueError:
        return _parse_error("Parse error: not JSON")
    except RecursionError:
        return _parse_error("Parse error: JSON nested too deeply")
    request = json_object(doc)
    raw_id = request.get("id") if request is not None else None
    usable = raw_id if isinstance(raw_id, str) or (isinstance(raw_id, int) and not isinstance(raw_id, bool)) else None
    return invalid_request(usable)


class _Unanswered:
    """Ids of requests read but not yet answered, so EOF can wait for their responses."""

    def __init__(self) -> None:
        self._ids: set[object] = set()
        self._empty: anyio.Event | None = None  # made only while EOF waits

    def add(self, request_id: object) -> None:
        self._ids.add(request_id)

    def discard(self, request_id: object) -> None:
        self._ids.discard(request_id)
        if not self._ids and self._empty is not None:
            self._empty.set()

    async def drained(self) -> None:
        if self._ids:
            self._empty = anyio.Event()
            await self._empty.wait()


class _CallTasks:
    """The direct path's tool calls, each a plain asyncio task that the transport's task group owns.

    anyio's ``start_soon`` gives every task a handle with its own cancel scope and event, about
    a tenth of a direct call's time in the server. :meth:`own` runs in the transport's task
    group in their stead: when the group is cancelled it cancels the calls still running and
    waits for them, and a call that fails raises its error there, as it would have in the group.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._error: BaseException | None = None
        self._failed = anyio.Event()

    def start(self, call: Coroutine[object, object, None]) -> None:
        """Run ``call`` from the next turn of the event loop on."""
        task = asyncio.get_running_loop().create_task(call)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None and self._error is None:
            self._error = error
            self._failed.set()

    async def own(self) -> None:
        """Wait in the transport's task group; once cancelled, cancel the calls and wait for them.

        Raises:
            BaseException: the first failure of a call, which ends the transport's task group.
        """
        try:
            await self._failed.wait()
            assert self._error is not None
            raise self._error
        finally:
            for task in self._tasks:
                task.cancel()
            with anyio.CancelScope(shield=True):
                while self._tasks:
                    await asyncio.wait(set(self._tasks))


def decode_frame(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """Decode one non-blank frame into the message to serve or the error to answer it with.

    A frame that is not JSON gets a parse error (-32700), nesting too deep for the parser
    included; JSON that is not a JSON-RPC 2.0 message gets an invalid-request error (-32600)
    carrying the frame's id when that id is usable. A frame with a method and an ``id`` member
    whose value is not a string or integer (null, a boolean, a fraction, an object) is an invalid
    request too, never a silent notification. A batch (a JSON array) is refused here as one
    invalid request (SRV-01, SRV-25); the transport serves one only on a connection that
    negotiated 2025-03-26 (:mod:`shadowcode.mcp.server.batches`).

    Args:
        line: the frame's bytes, newline removed.

    Returns:
        ``(message, None)`` for a message to hand to the SDK, ``(None, error)`` otherwise.
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        return None, _error_for(line)
    if is_notification_with_id(message, line):
        return None, invalid_request(None)
    return message, None


async def _write_all(fd: int, data: bytes, deadline_seconds: float) -> None:
    """Write all of ``data``; the deadline starts when the descriptor first refuses to take more.

    Raises:
        TimeoutError: the rest was not written within ``deadline_seconds``.
        OSError: the write failed (EPIPE: the client closed its end).
    """
    try:
        written = os.write(fd, data)  # the usual case: all of it at once, no deadline to arm
    except BlockingIOError:
        written = 0
    if written == len(data):
        return
    view = memoryview(data)[written:]
    with anyio.fail_after(deadline_seconds):
        while view:
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            view = view[n:]


async def _receive(handover: Handover) -> bytes:
    """:meth:`Handover.receive`, waiting on the event loop."""
    while True:
        try:
            return handover.receive()
        except BlockingIOError:
            await anyio.wait_readable(handover.sock)


class _Behind:
    """What the server does on its side of a handover: watch the socket, then write to the client itself.

    After the handover the socket carries one :data:`MARK` back (everything written down the
    socket has reached the client) and then its end, which is the end of the front or relay
    and so of the session (SRV-21, SRV-22).
    """

    def __init__(self, handover: Handover, reader: _Reader) -> None:
        self.handover = handover
        self.reader = reader
        self.flushed = anyio.Event()

    async def watch(self, tg: anyio.abc.TaskGroup) -> None:
        await self.reader.handed_over.wait()
        sock = self.handover.sock
        while True:
            try:
                data = sock.recv(_WATCH_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(sock)
                continue
            except OSError:
                data = b""
            if not data:
                tg.cancel_scope.cancel()
                return
            self.flushed.set()

    async def client_stdout(self, socket_fd: int, deadline_seconds: float) -> int:
        """Mark the end of the output sent down the socket, wait until it was copied out (bounded), return stdout."""
        await _write_all(socket_fd, MARK, deadline_seconds)
        with anyio.move_on_after(deadline_seconds):
            await self.flushed.wait()
        assert self.handover.stdout is not None
        return self.handover.stdout


class _Writer:
    """Writes whole frames to the client one at a time, under SRV-25's write deadline.

    The SDK's messages and the direct path's answers both go through :meth:`write`; a write
    past the deadline or a failed one closes the connection (the task group is cancelled and
    the closing line said).
    """

    def __init__(
        self,
        fd: int,
        lim: StdioLimits,
        say: Callable[[str], object],
        unanswered: _Unanswered,
        behind: _Behind | None,
        tg: anyio.abc.TaskGroup,
    ) -> None:
        self.pipe_fd = fd
        self.fd = fd
        self.lim = lim
        self.say = say
        self.unanswered = unanswered
        self.behind = behind
        self.tg = tg
        self.lock = anyio.Lock(fast_acquire=True)
        self.closed = False

    async def write(self, payload: bytes, answered: object | None) -> bool:
        """Write one frame; ``answered`` is the request id it answers. False once the connection is closed."""
        deadline = self.lim.write_deadline_seconds
        async with self.lock:
            if self.closed:
                return False
            try:
                behind = self.behind
                if behind is not None and self.fd == self.pipe_fd and behind.reader.handed_over.is_set():
                    self.fd = await behind.client_stdout(self.pipe_fd, deadline)
                await _write_all(self.fd, payload, deadline)
            except TimeoutError:
                self._close(f"a response write took longer than {deadline:g} seconds")
                return False
            except OSError as exc:  # EPIPE: the client went away
                self._close(f"stdout failed ({exc.strerror})")
                return False
            if answered is not None:
                self.unanswered.discard(answered)
            return True

    def _close(self, reason: str) -> None:
        self.closed = True
        self.say(f"shadowcode: closing the connection: {reason}\n")
        self.tg.cancel_scope.cancel()


@asynccontextmanager
async def stdio_transport(
    read_fd: int,
    write_fd: int,
    lim: StdioLimits | None = None,
    notice: Callable[[str], None] | None = None,
    direct: DirectToolCalls | None = None,
    handover: Handover | None = None,
    lazy: LazyStart | None = None,
) -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]], None
]:
    """Serve JSON-RPC frames between two non-blocking descriptors and the SDK's streams.

    Args:
        read_fd: descriptor to read frames from (non-blocking).
        write_fd: descriptor to write frames to (non-blocking).
        lim: transport limits (default: SRV-25's).
        notice: receives each ``shadowcode: closing the connection: ...`` line (newline
            included) when a limit or a failed write ends the connection; default: stderr.
        direct: offered every frame that passed the limits before the SDK sees it; the tool
            calls it takes are answered here (:mod:`shadowcode.mcp.server.direct_calls`).
        handover: ``read_fd`` as the socket of a stdio front or relay, which may hand over the
            client's own stdin and stdout (:mod:`shadowcode.mcp.server.handover`).
        lazy: serve what needs no SDK before it is loaded (:mod:`shadowcode.mcp.server.lazy_start`,
            with ``direct``); the read stream gets nothing until :attr:`LazyStart.needed`.

    Yields:
        ``(read_stream, write_stream)`` for ``Server.run``. The read stream ends at EOF or when a
        limit closes the connection.
    """
    lim = lim or StdioLimits()
    say = notice or sys.stderr.write
    in_send: MemoryObjectSendStream[SessionMessage | Exception]
    in_recv: MemoryObjectReceiveStream[SessionMessage | Exception]
    out_send: MemoryObjectSendStream[SessionMessage]
    out_recv: MemoryObjectReceiveStream[SessionMessage]
    in_send, in_recv = anyio.create_memory_object_stream(0)
    out_send, out_recv = anyio.create_memory_object_stream(0)
    reader = _Reader(read_fd, lim, handover)
    behind = _Behind(handover, reader) if handover is not None else None
    first_request = anyio.Event()

    unanswered = _Unanswered()
    calls = _CallTasks()
    batches = Batches()

    async def read_loop(tg: anyio.abc.TaskGroup, writer: _Writer) -> None:
        try:
            async with in_send:
                async for line in reader.frames():
                    if direct is not None and (call := direct.take(line)) is not None:
                        first_request.set()
                        unanswered.add(call[0])
                        calls.start(answer_directly(writer, *call))
                        # The call runs before this loop reads again: a read that finds nothing
                        # and then waits costs a call's answer about 40 us on the critical path.
                        await asyncio.sleep(0)
                        continue
                    if lazy is not None and not lazy.woken:
                        write, wake = lazy.take(line)
                        if write is not None:
                            first_request.set()
                            await writer.write(write, None)
                        if not wake:
                            continue
                        for kept in lazy.wake():
                            message, _ = decode_frame(kept)
                            assert message is not None  # frames this process wrote
                            batches.request_seen(message)  # the revision asked, for batches (2025-03-26)
                            await in_send.send(_session_message(message))
                    if batches.accepted and is_batch(line):
                        messages, now = batches.split(line, decode_frame)
                        if now is not None:
                            await writer.write(now, None)
                    else:
                        message, error = decode_frame(line)
                        if message is None:
                            assert error is not None
                            await out_send.send(_session_message(error))
                            continue
                        messages = [message]
                    for message in messages:
                        if isinstance(message, types.JSONRPCRequest):
                            first_request.set()
                            unanswered.add(message.id)
                        if (whole := batches.request_seen(message)) is not None:
                            await writer.write(whole, None)
                        await in_send.send(_session_message(message))
                with anyio.move_on_after(lim.eof_drain_seconds):
                    await unanswered.drained()
        except _LimitCrossed as exc:
            say(f"shadowcode: closing the connection: {exc}\n")
            tg.cancel_scope.cancel()
        except anyio.ClosedResourceError:
            pass
        finally:
            if lazy is not None:
                lazy.ended()

    async def answer_directly(writer: _Writer, request_id: object, answer: Answer) -> None:
        async def notify(frame: bytes) -> None:
            await writer.write(frame, None)

        payload = await answer(notify)
        if payload is None:
            unanswered.discard(request_id)  # cancelled by the client: never answered
            return
        await writer.write(payload, request_id)

    async def init_watchdog(tg: anyio.abc.TaskGroup) -> None:
        with anyio.move_on_after(lim.init_deadline_seconds) as scope:
            await first_request.wait()
        if scope.cancelled_caught:
            say(f"shadowcode: closing the connection: no request within {lim.init_deadline_seconds:g} seconds\n")
            tg.cancel_scope.cancel()

    async def write_loop(writer: _Writer) -> None:
        try:
            async with out_recv:
                async for item in out_recv:
                    message = item.message
                    payload = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
                    if lazy is not None and lazy.drops(payload):
                        # the kept initialize's answer names the revision; its id of ours was never counted
                        # as unanswered, and a client request under the same id still is
                        batches.take_answer(message, payload[:-1])
                        continue
                    if direct is not None:
                        direct.observe(message)
                    held, whole = batches.take_answer(message, payload[:-1])
                    if held and whole is None:
                        unanswered.discard(getattr(message, "id", None))  # the batch's last answer is still to come
                        continue
                    answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
                    if not await writer.write(whole or payload, message.id if answer else None):
                        return
        except anyio.ClosedResourceError:
            pass

    async with anyio.create_task_group() as tg:
        writer = _Writer(write_fd, lim, say, unanswered, behind, tg)
        tg.start_soon(read_loop, tg, writer)
        tg.start_soon(write_loop, writer)
        tg.start_soon(init_watchdog, tg)
        tg.start_soon(calls.own)
        if behind is not None:
            tg.start_soon(behind.watch, tg)
        try:
            yield in_recv, out_send
        finally:
            tg.cancel_scope.cancel()
