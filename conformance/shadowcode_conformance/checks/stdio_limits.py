"""The stdio server's limits from the outside, each at the limit and one past it (SRV-25, SRV-01).

Every check starts ``<target> --workspace P mcp serve`` and speaks raw newline-delimited
JSON-RPC to it, so the exact bytes on the wire are under the check's control. At the limit
the target must answer; one past it the target must close the connection (stdout reaches
end of file and the process exits) or, for the operation count, answer with a JSON-RPC
error. Throughout, every stdout line must be a JSON-RPC message (SRV-01), and a target that
closes must say why on stderr. The contract numbers are restated below; nothing is imported
from the implementation under test.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from subprocess import PIPE
from typing import Any, Final, cast

import anyio
from anyio.abc import Process

from shadowcode_conformance.checks.stdout_purity import is_jsonrpc_message
from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import drain, end_input, kill_group, start_process, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = [
    "blank_line_flood_closes",
    "broken_stdout_exits_cleanly",
    "frame_size_limit",
    "hostile_frames_answered",
    "init_deadline",
    "lifetime_limit",
    "operations_in_flight",
    "unread_stdout_dropped",
]

FRAME_MAX_BYTES: Final = 1024 * 1024
"""SRV-25: bytes of one incoming frame, newline excluded."""

LIFETIME_MAX_BYTES: Final = 32 * 1024 * 1024
"""SRV-25: bytes one connection may send in its lifetime."""

FRAMES_PER_SECOND_MAX: Final = 128
"""SRV-25: incoming frames per second, blank lines included."""

INIT_DEADLINE_SECONDS: Final = 10.0
"""SRV-25: seconds a new connection has to send its first request."""

OPERATIONS_MAX: Final = 8
"""SRV-25: tool or resource operations in flight at once."""

WRITE_DEADLINE_SECONDS: Final = 5.0
"""SRV-25: seconds one response write may take before the client is dropped."""

_CLOSE_GRACE_SECONDS: Final = 10.0
"""Seconds a target gets, after a limit is crossed, to close stdout and exit."""

_ANSWER_SECONDS: Final = 20.0
"""Seconds a target gets to answer one ordinary request (a 1 MiB frame included)."""

_SLOW_QUERY = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
_HANDSHAKE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "conformance-stdio-limits", "version": "1"},
    },
}


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n"


def _ping(ident: int | str) -> bytes:
    return _line({"jsonrpc": "2.0", "id": ident, "method": "ping"})


def _ping_of_size(ident: int, size: int) -> bytes:
    """A ping frame of exactly ``size`` bytes, newline excluded."""
    head = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "ping", "params": {"_meta": {"pad": ""}}})
    return head.replace('"pad": ""', '"pad": "' + "x" * (size - len(head)) + '"').encode("utf-8")


class StdioSession:
    """One target process: raw sends, checked stdout lines, drained stderr."""

    def __init__(self, proc: Process) -> None:
        self.proc = proc
        self.buffer = bytearray()
        self.stderr = bytearray()
        self.bad: list[bytes] = []
        self.eof = False

    async def send(self, data: bytes, timeout: float = 10.0) -> bool:
        """Write ``data`` to stdin; False when the target closed it or did not take it in time."""
        assert self.proc.stdin is not None
        with anyio.move_on_after(timeout):
            try:
                await self.proc.stdin.send(data)
                return True
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return False
        return False

    async def line(self, timeout: float) -> bytes | None:
        """The next stdout line (checked for SRV-01), None at end of file; TimeoutError when none comes."""
        assert self.proc.stdout is not None
        with anyio.fail_after(timeout):
            while (cut := self.buffer.find(b"\n")) < 0:
                if self.eof:
                    return None
                try:
                    self.buffer.extend(await self.proc.stdout.receive())
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self.eof = True
                    if self.buffer:
                        self.bad.append(b"(no newline at end) " + bytes(self.buffer[:200]))
                        self.buffer.clear()
        line = bytes(self.buffer[:cut])
        del self.buffer[: cut + 1]
        if not is_jsonrpc_message(line):
            self.bad.append(line[:200])
        return line

    async def response(self, ident: int | str, timeout: float = _ANSWER_SECONDS) -> dict[str, Any] | None:
        """The answer to request ``ident``; None when stdout ends or nothing comes in time."""
        deadline = time.monotonic() + timeout
        with suppress(TimeoutError):
            while (line := await self.line(max(0.01, deadline - time.monotonic()))) is not None:
                with suppress(ValueError):
                    doc = json.loads(line)
                    if isinstance(doc, dict) and cast("dict[str, Any]", doc).get("id") == ident:
                        return cast("dict[str, Any]", doc)
        return None

    async def closes(self, timeout: float = _CLOSE_GRACE_SECONDS) -> bool:
        """Whether stdout reaches end of file and the process exits within ``timeout``."""
        deadline = time.monotonic() + timeout
        try:
            while await self.line(max(0.01, deadline - time.monotonic())) is not None:
                pass
            with anyio.fail_after(max(0.01, deadline - time.monotonic())):
                await self.proc.wait()
        except TimeoutError:
            return False
        return True

    async def exits(self, timeout: float) -> bool:
        """Whether the process exits within ``timeout`` (stdout not read)."""
        with anyio.move_on_after(timeout):
            await self.proc.wait()
        return self.proc.returncode is not None

    def problems(self) -> list[str]:
        """SRV-01 findings: stdout lines that are not JSON-RPC."""
        if not self.bad:
            return []
        return [f"{len(self.bad)} stdout lines are not JSON-RPC, e.g. {self.bad[0]!r:.200}"]

    def verdict(self, problems: list[str], passed: str) -> CheckResult:
        problems = problems + self.problems()
        data = {"returncode": self.proc.returncode}
        if problems:
            return CheckResult(False, "; ".join(problems) + f" (stderr: {tail(self.stderr)})", data)
        return CheckResult(True, passed, data)

    def said_why(self) -> bool:
        """Whether the target wrote anything to stderr (its reason for closing)."""
        return bool(bytes(self.stderr).strip())


@asynccontextmanager
async def raw_session(
    ctx: Context, argv: list[str], close_seconds: float = _CLOSE_GRACE_SECONDS
) -> AsyncGenerator[StdioSession, None]:
    """``argv`` started and spoken to raw; on the way out its stdin is closed and its exit awaited.

    Args:
        ctx: the run's context (the process is the run's, swept at its end).
        argv: the server command.
        close_seconds: how long to wait for the exit after stdin closes (the run kills it after).
    """
    async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
        session = StdioSession(proc)
        tg.start_soon(drain, proc.stderr, session.stderr)
        try:
            yield session
        finally:
            await end_input(proc, close_seconds)
            tg.cancel_scope.cancel()


def _serve(ctx: Context) -> AbstractAsyncContextManager[StdioSession]:
    return raw_session(ctx, ctx.serve_argv())


async def _closed_with_reason(session: StdioSession, what: str) -> list[str]:
    if not await session.closes():
        return [f"{what}: the connection stayed open"]
    if not session.said_why():
        return [f"{what}: the connection closed without a line on stderr"]
    return []


@check("stdio_limits:frame_size", covers=["SRV-25", "SRV-01"], timeout_seconds=60)
async def frame_size_limit(ctx: Context) -> CheckResult:
    """A 1 MiB frame is answered; a 1 MiB + 1 byte frame closes the connection (SRV-25)."""
    async with _serve(ctx) as session:
        problems: list[str] = []
        await session.send(_ping_of_size(1, FRAME_MAX_BYTES) + b"\n")
        answer = await session.response(1)
        if answer is None or "result" not in answer:
            problems.append(f"a frame of exactly {FRAME_MAX_BYTES} bytes was not answered: {answer!r:.200}")
        else:
            await session.send(_ping_of_size(2, FRAME_MAX_BYTES + 1) + b"\n")
            problems += await _closed_with_reason(session, f"a frame of {FRAME_MAX_BYTES + 1} bytes")
        return session.verdict(problems, f"{FRAME_MAX_BYTES} bytes answered, one byte more closed the connection")


@check("stdio_limits:lifetime", covers=["SRV-25", "SRV-01"], timeout_seconds=90)
async def lifetime_limit(ctx: Context) -> CheckResult:
    """32 MiB over a connection's life are served; one more byte closes it (SRV-25)."""
    count = LIFETIME_MAX_BYTES // FRAME_MAX_BYTES
    async with _serve(ctx) as session:
        problems: list[str] = []
        for i in range(1, count + 1):  # each frame is 1 MiB with its newline: under the frame limit
            if not await session.send(_ping_of_size(i, FRAME_MAX_BYTES - 1) + b"\n", timeout=_ANSWER_SECONDS):
                problems.append(f"stdin stopped taking bytes after {i - 1} MiB")
                break
        if not problems:
            for i in range(1, count + 1):
                answer = await session.response(i)
                if answer is None or "result" not in answer:
                    problems.append(f"ping {i} of {count} (at {i} MiB) was not answered")
                    break
        if not problems:
            await session.send(b"\n")
            problems += await _closed_with_reason(session, "one byte past 32 MiB")
        return session.verdict(problems, f"{LIFETIME_MAX_BYTES} bytes served, one more byte closed the connection")


@check("stdio_limits:frame_rate", covers=["SRV-25", "SRV-01"], timeout_seconds=60)
async def blank_line_flood_closes(ctx: Context) -> CheckResult:
    """127 blank lines and a ping (128 frames) are served; 10,000 blank lines close the connection (SRV-25)."""
    async with _serve(ctx) as session:
        problems: list[str] = []
        await session.send(b"\n" * (FRAMES_PER_SECOND_MAX - 1) + _ping(1))
        answer = await session.response(1)
        if answer is None or "result" not in answer:
            problems.append(f"{FRAMES_PER_SECOND_MAX} frames (blank lines and a ping) were not served")
        else:
            await session.send(b"\n" * 10_000)
            problems += await _closed_with_reason(session, "10,000 blank lines")
        return session.verdict(
            problems, f"{FRAMES_PER_SECOND_MAX} frames served, a flood of blank lines closed the connection"
        )


@check("stdio_limits:init_deadline", covers=["SRV-25", "SRV-01"], timeout_seconds=40)
async def init_deadline(ctx: Context) -> CheckResult:
    """No request in 10 s closes the connection; a ping just before the deadline keeps it (SRV-25)."""
    problems: list[str] = []
    async with _serve(ctx) as silent, _serve(ctx) as late:
        started = time.monotonic()
        await silent.send(b"\n" + _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        with anyio.move_on_after(INIT_DEADLINE_SECONDS - 1.0):
            while await late.line(INIT_DEADLINE_SECONDS) is not None:
                pass  # the target may announce nothing; anything it does say must be JSON-RPC
        await late.send(_ping("late"))
        if await late.response("late") is None:
            problems.append("a ping sent just before the deadline was not answered")
        if not await silent.closes(INIT_DEADLINE_SECONDS + _CLOSE_GRACE_SECONDS):
            problems.append("a connection that sent no request stayed open")
        elif time.monotonic() - started < INIT_DEADLINE_SECONDS - 0.5:
            problems.append(f"the silent connection closed after {time.monotonic() - started:.1f} s, before 10 s")
        elif not silent.said_why():
            problems.append("the silent connection closed without a line on stderr")
        await late.send(_ping("after"))
        if await late.response("after") is None:
            problems.append("the connection that pinged in time was closed after the deadline")
        problems += silent.problems()
        return late.verdict(problems, "silent connection closed after 10 s; one that pinged at 9 s stayed open")


@check("stdio_limits:operations_in_flight", covers=["SRV-25", "SRV-01"], timeout_seconds=60)
async def operations_in_flight(ctx: Context) -> CheckResult:
    """Eight slow shadow_sqlite queries run at once; a ninth is refused with a JSON-RPC error (SRV-25)."""
    async with _serve(ctx) as session:
        problems: list[str] = []
        await session.send(_line(_HANDSHAKE))
        if await session.response(0) is None:
            return session.verdict(["initialize was not answered"], "")
        await session.send(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        args = {"action": "query", "path": "data/app.db", "sql": _SLOW_QUERY}
        call = {"name": "shadow_sqlite", "arguments": args}
        total = OPERATIONS_MAX + 1
        await session.send(
            b"".join(
                _line({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}) for i in range(1, total + 1)
            )
        )
        order: list[dict[str, Any]] = []
        deadline = time.monotonic() + 45
        with suppress(TimeoutError):
            while len(order) < total and (line := await session.line(max(0.01, deadline - time.monotonic()))):
                with suppress(ValueError):
                    doc = json.loads(line)
                    if isinstance(doc, dict) and cast("dict[str, Any]", doc).get("id") in range(1, total + 1):
                        order.append(cast("dict[str, Any]", doc))
        refused = [d for d in order if "error" in d]
        served = [d for d in order if "result" in d]
        if len(order) < total:
            problems.append(f"only {len(order)} of {total} calls were answered")
        elif len(refused) != 1 or len(served) != OPERATIONS_MAX:
            problems.append(f"{len(served)} calls served and {len(refused)} refused; expected 8 and 1")
        elif "error" not in order[0]:
            problems.append("the refusal did not come first: the ninth call waited for a slot")
        first = order[0].get("error") if order else None
        return session.verdict(problems, f"{OPERATIONS_MAX} slow queries ran at once; the ninth got {first!r:.160}")


@check("stdio_limits:unread_stdout", covers=["SRV-25", "SRV-01"], timeout_seconds=60)
async def unread_stdout_dropped(ctx: Context) -> CheckResult:
    """A client that never reads stdout while requests keep coming is dropped (5 s write deadline, SRV-25)."""
    async with _serve(ctx) as session:
        problems: list[str] = []
        await session.send(_line(_HANDSHAKE))
        if await session.response(0) is None:
            return session.verdict(["initialize was not answered"], "")
        burst = b"".join(_line({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/list"}) for i in range(20))
        started = time.monotonic()
        bound = WRITE_DEADLINE_SECONDS + 20
        while time.monotonic() - started < bound:
            await session.send(burst, timeout=0.5)  # 40 frames a second at most: under the frame rate
            if await session.exits(0.5):
                break
        elapsed = time.monotonic() - started
        with anyio.move_on_after(_CLOSE_GRACE_SECONDS):
            # What it wrote before the drop is left unjudged: the last line may be cut short.
            await drain(session.proc.stdout, bytearray(), 0)
        if session.proc.returncode is None:
            problems.append(f"still running {bound:g} s after it stopped being read")
        elif not session.said_why():
            problems.append("dropped the client without a line on stderr")
        return session.verdict(problems, f"the unread client was dropped after {elapsed:.1f} s")


@check("stdio_limits:broken_stdout", covers=["SRV-25", "SRV-01"], timeout_seconds=40)
async def broken_stdout_exits_cleanly(ctx: Context) -> CheckResult:
    """A client that closes its end of stdout makes the server exit with status 0, no traceback (SRV-25).

    The target's stdout is a pipe whose read end this check owns, so closing it really leaves
    the target writing into a pipe with no reader (EPIPE, or SIGPIPE where not ignored).
    """
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    stderr = bytearray()
    problems: list[str] = []
    try:
        proc = await start_process(
            ctx.serve_argv(),
            stdin=PIPE,
            stdout=write_end,
            stderr=PIPE,
            env=ctx.env,
            cwd=ctx.cwd,
        )
    finally:
        os.close(write_end)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stderr, stderr)
            assert proc.stdin is not None
            with anyio.move_on_after(_ANSWER_SECONDS):
                await proc.stdin.send(_line(_HANDSHAKE))
                await _read_one_line(read_end)
            os.close(read_end)
            read_end = -1
            for i in range(1, 4):
                with anyio.move_on_after(2), suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await proc.stdin.send(_ping(i))
            with anyio.move_on_after(_CLOSE_GRACE_SECONDS):
                await proc.wait()
            if proc.returncode is None:
                problems.append("kept running after its stdout broke")
            elif proc.returncode != 0:
                problems.append(f"exit status {proc.returncode} after its stdout broke, expected 0")
            tg.cancel_scope.deadline = time.monotonic() + 2
    finally:
        if read_end >= 0:
            os.close(read_end)
        with anyio.CancelScope(shield=True):
            kill_group(proc.pid)
            with anyio.move_on_after(_CLOSE_GRACE_SECONDS):
                await proc.wait()
            for stream in (proc.stdin, proc.stderr):
                if stream is not None:
                    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await stream.aclose()
    if b"Traceback" in stderr:
        problems.append("printed a traceback")
    if problems:
        return CheckResult(False, "; ".join(problems) + f" (stderr: {tail(stderr)})", {"returncode": proc.returncode})
    return CheckResult(True, "exited with status 0 when its stdout broke", {"returncode": proc.returncode})


async def _read_one_line(fd: int) -> bytes:
    """Read the non-blocking ``fd`` up to the first newline or end of file."""
    data = b""
    while b"\n" not in data:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        if not chunk:
            break
        data += chunk
    return data


@check("stdio_limits:hostile_frames", covers=["SRV-25", "SRV-01"], timeout_seconds=60)
async def hostile_frames_answered(ctx: Context) -> CheckResult:
    """Bad frames are answered with JSON-RPC errors and the session goes on; EOF mid-frame ends it (SRV-25)."""
    hostile = [
        ("invalid UTF-8 inside a frame", b'{"jsonrpc":"2.0","id":"u","method":"pi\xff\xfeng"}\n'),
        ("10,000 nested arrays", b"[" * 10_000 + b"]" * 10_000 + b"\n"),
        ("nesting inside a request", b'{"jsonrpc":"2.0","id":"d","method":"ping","params":{"_meta":{"n":'
         + b"[" * 10_000 + b"]" * 10_000 + b"}}}\n"),
        ("a 50,000-digit id", b'{"jsonrpc":"2.0","id":' + b"9" * 50_000 + b',"method":"ping"}\n'),
        ("a batch", b'[{"jsonrpc":"2.0","id":"b","method":"ping"}]\n'),
        ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n'),
        ("truncated JSON", b'{"jsonrpc":"2.0","id":"t","meth\n'),
    ]  # fmt: skip
    async with _serve(ctx) as session:
        problems: list[str] = []
        await session.send(_line(_HANDSHAKE))
        if await session.response(0) is None:
            return session.verdict(["initialize was not answered"], "")
        await session.send(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for n, (what, frame) in enumerate(hostile, start=1):
            await session.send(frame + _ping(n))
            if await session.response(n) is None:
                problems.append(f"after {what} the session no longer answered")
                break
        if not problems:
            for byte in _ping("split"):  # one frame in one-byte writes
                await session.send(bytes([byte]))
            if await session.response("split") is None:
                problems.append("a frame written one byte at a time was not answered")
        if not problems:
            await session.send(b'{"jsonrpc":"2.0","id":"cut","meth')
            assert session.proc.stdin is not None
            await session.proc.stdin.aclose()
            if not await session.closes():
                problems.append("stdin closed mid-frame but the server kept running")
            elif session.proc.returncode != 0:
                problems.append(f"exit status {session.proc.returncode} at EOF mid-frame, expected 0")
        if b"Traceback" in session.stderr:
            problems.append("printed a traceback")
        return session.verdict(problems, f"{len(hostile)} hostile frames answered, split frame joined, clean EOF")
