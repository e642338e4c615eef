"""The ``generic`` profile: stdio rules every MCP server must keep (SRV-01, SRV-03 as plain MCP).

These checks need nothing but ``--target "<any MCP server command>"``: the command is run as
given (no ``--workspace``, no ``mcp serve`` appended) and spoken to byte by byte on stdin and
stdout. They use only ``initialize``, ``notifications/initialized``, ``ping``,
``tools/list`` (when the server declares tools) and ``server/discover``, so they hold for any
server. Run them with ``--profile generic``; the default profile never selects them.

Every stdout line of every check must be a JSON-RPC message (MCP stdio transport); the
findings of each check are listed in its detail.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio

from conformance.checks.stdio_limits import _Session
from conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from conformance.processes import drain
from conformance.registry import CheckResult, check

__all__ = [
    "batch_answered",
    "closed_stdout_exits",
    "eof_flushes_answers",
    "ids_echoed_exactly",
    "invalid_json_answered",
    "large_frame_answered",
    "legacy_handshakes",
    "modern_discover",
    "pings_paced_answered",
    "split_utf8_frame",
    "stdout_purity",
]

PROFILE = "generic"
_ANSWER_SECONDS = 10.0
_CLOSE_SECONDS = 10.0
_LARGE_FRAME_BYTES = 900 * 1024
_PACED_PINGS = 200
_PACED_PER_SECOND = 100


def _frame(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"


def _request(ident: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        body["params"] = params
    return _frame(body)


def _initialize(ident: Any = 0, revision: str = LEGACY_REVISIONS[-1]) -> bytes:
    info = {"name": "conformance-generic", "version": "1"}
    return _request(ident, "initialize", {"protocolVersion": revision, "capabilities": {}, "clientInfo": info})


_INITIALIZED = _frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


@asynccontextmanager
async def _server(ctx: Context) -> AsyncIterator[_Session]:
    """The target command exactly as given, spoken to raw."""
    async with ctx.spawn(ctx.target) as proc, anyio.create_task_group() as tg:
        session = _Session(proc)
        tg.start_soon(drain, proc.stderr, session.stderr)
        try:
            yield session
        finally:
            if proc.stdin is not None:
                with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await proc.stdin.aclose()
            with anyio.move_on_after(_CLOSE_SECONDS):
                await proc.wait()
            tg.cancel_scope.cancel()


async def _handshake(s: _Session, problems: list[str]) -> dict[str, Any] | None:
    """``initialize`` + ``initialized``; the initialize result, or None with a problem noted."""
    await s.send(_initialize())
    answer = await s.response(0)
    if answer is None or not isinstance(answer.get("result"), dict):
        problems.append(f"initialize got {answer!r:.200}")
        return None
    await s.send(_INITIALIZED)
    return answer["result"]


async def _error_reply(s: _Session) -> dict[str, Any] | None:
    """The next error response with id null, skipping notifications (None when none comes in time)."""
    with suppress(TimeoutError):
        while (line := await s.line(_ANSWER_SECONDS)) is not None:
            with suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, dict) and "error" in doc and doc.get("id") is None:
                    return doc
    return None


def _answered(answer: dict[str, Any] | None) -> bool:
    return answer is not None and ("result" in answer or "error" in answer)


@check("generic:stdout_purity", covers=["SRV-01"], timeout_seconds=60, profile=PROFILE)
async def stdout_purity(ctx: Context) -> CheckResult:
    """Handshake, pings and (when declared) ``tools/list``: every request answered, stdout only JSON-RPC."""
    problems: list[str] = []
    async with _server(ctx) as s:
        result = await _handshake(s, problems)
        if result is not None:
            asks = [(n, "ping") for n in range(1, 6)]
            if "tools" in (result.get("capabilities") or {}):
                asks.append((6, "tools/list"))
            for ident, method in asks:
                await s.send(_request(ident, method))
            for ident, method in asks:
                if not _answered(await s.response(ident)):
                    problems.append(f"{method} (id {ident}) was not answered")
        return s.verdict(problems, "handshake, pings and tools/list answered; stdout held only JSON-RPC")


@check("generic:legacy_handshakes", covers=["SRV-03"], timeout_seconds=90, profile=PROFILE)
async def legacy_handshakes(ctx: Context) -> CheckResult:
    """``initialize`` with each legacy revision lands on a legacy revision (one connection each)."""
    problems: list[str] = []
    landed: dict[str, Any] = {}
    for revision in LEGACY_REVISIONS:
        async with _server(ctx) as s:
            await s.send(_initialize(1, revision))
            answer = await s.response(1)
            got = ((answer or {}).get("result") or {}).get("protocolVersion")
            landed[revision] = got
            if got not in LEGACY_REVISIONS:
                problems.append(f"initialize with {revision} answered {answer!r:.160}")
            problems += s.problems()
    if not problems:
        ctx.record_revision("generic:legacy_handshakes", str(landed[LEGACY_REVISIONS[-1]]))
    detail = ", ".join(f"{k} -> {v}" for k, v in landed.items())
    return CheckResult(not problems, "; ".join(problems) or f"landed: {detail}")


@check("generic:modern_discover", covers=["SRV-03"], timeout_seconds=40, profile=PROFILE)
async def modern_discover(ctx: Context) -> CheckResult:
    """``server/discover`` without a handshake names the 2026-07-28 revision.

    The request carries the per-request envelope of that revision in ``params._meta``: the
    protocol version and the client's capabilities.
    """
    async with _server(ctx) as s:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        await s.send(_request(1, "server/discover", {"_meta": meta}))
        answer = await s.response(1)
        text = json.dumps((answer or {}).get("result"))
        if answer is None or "result" not in answer or MODERN_REVISION not in text:
            return s.verdict([f"server/discover answered {answer!r:.200}"], "")
        ctx.record_revision("generic:modern_discover", MODERN_REVISION)
        return s.verdict([], f"server/discover names {MODERN_REVISION}")


@check("generic:invalid_json_answered", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def invalid_json_answered(ctx: Context) -> CheckResult:
    """A line that is not JSON gets a parse error (-32700, id null); the connection still answers a ping."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            await s.send(b"this is not json\n")
            error = await _error_reply(s)
            if error is None or (error.get("error") or {}).get("code") != -32700:
                problems.append(f"a line that is not JSON got {error!r:.160}, expected error -32700 with id null")
            await s.send(_request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("after the invalid line a ping was not answered")
        return s.verdict(problems, "parse error -32700 with id null; the next ping answered")


@check("generic:split_utf8_frame", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def split_utf8_frame(ctx: Context) -> CheckResult:
    """A frame written in two parts split inside a multi-byte character is read as one."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            ident = "split-\u20ac-\U0001f600"
            data = _request(ident, "ping")
            cut = data.index("\u20ac".encode()) + 1
            await s.send(data[:cut])
            await anyio.sleep(0.2)
            await s.send(data[cut:])
            answer = await s.response(ident)
            if not _answered(answer):
                problems.append(f"the split frame's ping (id {ident!r}) was not answered with its exact id")
        return s.verdict(problems, "a frame split inside a UTF-8 character was answered with its exact id")


@check("generic:large_frame_answered", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def large_frame_answered(ctx: Context) -> CheckResult:
    """A 900 KiB ping (padding in ``params._meta``) is answered and the connection stays usable."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            await s.send(_request(1, "ping", {"_meta": {"conformance/padding": "x" * _LARGE_FRAME_BYTES}}))
            if not _answered(await s.response(1)):
                problems.append(f"a {_LARGE_FRAME_BYTES // 1024} KiB ping was not answered")
            await s.send(_request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("a ping after the large frame was not answered")
        return s.verdict(problems, f"a {_LARGE_FRAME_BYTES // 1024} KiB frame and the next ping answered")


@check("generic:ids_echoed_exactly", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def ids_echoed_exactly(ctx: Context) -> CheckResult:
    """Ids come back exactly: past 2**53, a 1000-character string, zero; a duplicate id keeps the connection alive."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            for ident in (2**53 + 1, "i" * 1000, -1, 7):
                await s.send(_request(ident, "ping"))
                if not _answered(await s.response(ident)):
                    problems.append(f"a ping with id {str(ident)[:20]!r} was not answered with that exact id")
            await s.send(_request(7, "ping"))
            await s.response(7, timeout=2.0)
            await s.send(_request(8, "ping"))
            if not _answered(await s.response(8)):
                problems.append("after a duplicate id the connection answered no more")
        return s.verdict(problems, "large, long and negative ids echoed exactly; a duplicate id did no harm")


@check("generic:batch_answered", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def batch_answered(ctx: Context) -> CheckResult:
    """A JSON array frame is answered (batch results or an error), never silently dropped."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            await s.send(b'[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","id":12,"method":"ping"}]\n')
            answered = False
            with suppress(TimeoutError):
                while (line := await s.line(_ANSWER_SECONDS)) is not None:
                    doc = json.loads(line) if line.strip() else None
                    if isinstance(doc, list) or (
                        isinstance(doc, dict) and ("error" in doc or doc.get("id") in (11, 12))
                    ):
                        answered = True
                        break
            if not answered:
                problems.append("a batch (JSON array) got no answer at all")
            await s.send(_request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("after the batch a ping was not answered")
        return s.verdict(problems, "the batch was answered; the connection stayed usable")


@check("generic:eof_flushes_answers", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def eof_flushes_answers(ctx: Context) -> CheckResult:
    """Requests written just before stdin closes are still answered, then the server exits."""
    problems: list[str] = []
    async with _server(ctx) as s:
        await s.send(_initialize() + _INITIALIZED + _request(1, "ping") + _request(2, "ping"))
        assert s.proc.stdin is not None
        await s.proc.stdin.aclose()
        for ident in (0, 1, 2):
            if not _answered(await s.response(ident)):
                problems.append(f"request {ident}, sent just before stdin closed, was not answered")
        if not await s.closes(_CLOSE_SECONDS):
            problems.append(f"the server did not exit within {_CLOSE_SECONDS:g} s of stdin closing")
        return s.verdict(problems, "answers flushed after stdin closed; the server exited")


@check("generic:closed_stdout_exits", covers=["SRV-01"], timeout_seconds=40, profile=PROFILE)
async def closed_stdout_exits(ctx: Context) -> CheckResult:
    """With its stdout closed by the client, the server exits (or at least stops) instead of spinning."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            assert s.proc.stdout is not None
            await s.proc.stdout.aclose()
            for n in range(1, 4):
                if not await s.send(_request(n, "ping"), timeout=2.0):
                    break
            assert s.proc.stdin is not None
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await s.proc.stdin.aclose()
            if not await s.exits(_CLOSE_SECONDS):
                problems.append(f"the server still ran {_CLOSE_SECONDS:g} s after its stdout and stdin closed")
        return s.verdict(problems, "the server exited once its stdout and stdin were closed")


@check("generic:pings_paced_answered", covers=["SRV-01"], timeout_seconds=60, profile=PROFILE)
async def pings_paced_answered(ctx: Context) -> CheckResult:
    """200 pings at 100 a second are all answered, each once."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _handshake(s, problems) is not None:
            for n in range(1, _PACED_PINGS + 1):
                await s.send(_request(n, "ping"))
                await anyio.sleep(1 / _PACED_PER_SECOND)
            seen: dict[Any, int] = {}
            with suppress(TimeoutError):
                while len(seen) < _PACED_PINGS and (line := await s.line(_ANSWER_SECONDS)) is not None:
                    with suppress(ValueError):
                        doc = json.loads(line)
                        if isinstance(doc, dict) and "id" in doc:
                            seen[doc["id"]] = seen.get(doc["id"], 0) + 1
            missing = [n for n in range(1, _PACED_PINGS + 1) if n not in seen]
            if missing:
                problems.append(f"{len(missing)} of {_PACED_PINGS} pings were not answered (first: {missing[0]})")
            if twice := [k for k, v in seen.items() if v > 1]:
                problems.append(f"{len(twice)} pings were answered more than once")
        return s.verdict(problems, f"{_PACED_PINGS} pings at {_PACED_PER_SECOND}/s answered once each")
