"""The ``generic`` profile: stdio rules every MCP server must keep (SRV-01, SRV-03 as plain MCP).

These checks need nothing but ``--target "<any MCP server command>"``: the command is run as
given (no ``--workspace``, no ``mcp serve`` appended) and spoken to byte by byte on stdin and
stdout. They use only ``initialize``, ``notifications/initialized``, ``ping``,
``tools/list`` (when the server declares tools) and ``server/discover``, so they hold for any
server. Run them with ``--profile generic``; the default profile never selects them.

Each check states the weight of its rule and the section it comes from (CONF-01): a ``must``
check fails only on a requirement of a revision the server claims (the MCP text, or JSON-RPC 2.0
which every revision builds on); ``should`` and ``robustness`` checks warn. A check whose rule
belongs to revisions the server does not claim (``server/discover`` of 2026-07-28 for a server of
the initialize era, batches of 2025-03-26 for a server that negotiates another revision) is
reported not applicable with the reason. A server that answers ``initialize`` with an error but
``server/discover`` with 2026-07-28 is spoken to in that revision: every request then carries
its per-request envelope in ``params._meta`` and there is no handshake.

Every stdout line of every check must be a JSON-RPC message (MCP stdio transport); the
findings of each check are listed in its detail.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio

from shadowcode_conformance.checks.stdio_limits import StdioSession, raw_session
from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.verdicts import JSONRPC, Weight, spec

__all__ = [
    "batch_answered",
    "batch_of_2025_03_26",
    "closed_stdout_exits",
    "eof_exits",
    "eof_flushes_answers",
    "ids_echoed_exactly",
    "invalid_json_answered",
    "large_frame_answered",
    "large_id_echoed",
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
_METHOD_NOT_FOUND: Final = -32601
_BATCH_REVISION: Final = "2025-03-26"

_STDIO: Final = spec("2025-11-25", "basic/transports#stdio")
_RESPONSES: Final = f"{spec('2025-11-25', 'basic#responses')} ; {JSONRPC}#response_object"
_NEGOTIATION: Final = spec("2025-11-25", "basic/lifecycle#version-negotiation")
_DISCOVER: Final = spec(MODERN_REVISION, "server/discover")
_PING: Final = f"{spec('2025-11-25', 'basic/utilities/ping')} ; {JSONRPC}#response_object"
_SHUTDOWN: Final = spec("2025-11-25", "basic/lifecycle#shutdown")
_BATCHING: Final = spec(_BATCH_REVISION, "basic#batching")
_ENVELOPE: Final[dict[str, Any]] = {
    "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


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


def _discover(ident: Any) -> bytes:
    return _request(ident, "server/discover", {"_meta": dict(_ENVELOPE)})


_INITIALIZED = _frame({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _server(ctx: Context) -> AbstractAsyncContextManager[StdioSession]:
    """The target command exactly as given, spoken to raw."""
    return raw_session(ctx, list(ctx.target), _CLOSE_SECONDS)


@dataclass
class _Peer:
    """How the server is spoken to after :func:`_open`.

    Attributes:
        result: the ``initialize`` result, or the ``server/discover`` result in modern mode.
        modern: no handshake was made: every request carries the 2026-07-28 envelope.
    """

    result: dict[str, Any]
    modern: bool = False

    def request(self, ident: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
        """A request frame, with the 2026-07-28 envelope in ``params._meta`` in modern mode."""
        if not self.modern:
            return _request(ident, method, params)
        given = dict(params or {})
        given["_meta"] = {**_ENVELOPE, **(given.get("_meta") or {})}
        return _request(ident, method, given)

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.result.get("capabilities") or {}


def _names_modern(answer: dict[str, Any] | None) -> bool:
    """Whether a ``server/discover`` answer is a result naming the 2026-07-28 revision."""
    return bool(answer) and isinstance(answer.get("result"), dict) and MODERN_REVISION in json.dumps(answer["result"])


async def _open(s: StdioSession, problems: list[str]) -> _Peer | None:
    """``initialize`` + ``initialized``, or, when ``initialize`` is refused with an error and
    ``server/discover`` names 2026-07-28, that revision without a handshake; None with a problem
    noted when neither works."""
    await s.send(_initialize())
    answer = await s.response(0)
    if answer is not None and isinstance(answer.get("result"), dict):
        await s.send(_INITIALIZED)
        return _Peer(answer["result"])
    if answer is not None and "error" in answer:
        await s.send(_discover("discover"))
        found = await s.response("discover")
        if _names_modern(found):
            assert found is not None
            return _Peer(found["result"], modern=True)
    problems.append(f"initialize got {answer!r:.200}")
    return None


async def _error_reply(s: StdioSession) -> dict[str, Any] | None:
    """The next error response with id null, skipping notifications (None when none comes in time)."""
    with suppress(TimeoutError):
        while (line := await s.line(_ANSWER_SECONDS)) is not None:
            with suppress(ValueError):
                doc = json_object(json.loads(line))
                if doc is not None and "error" in doc and doc.get("id") is None:
                    return doc
    return None


def _answered(answer: dict[str, Any] | None) -> bool:
    return answer is not None and ("result" in answer or "error" in answer)


def _code(answer: dict[str, Any] | None) -> Any:
    error: dict[str, Any] = (answer or {}).get("error") or {}
    return error.get("code")


def _result(answer: dict[str, Any] | None) -> dict[str, Any]:
    """The ``result`` object of an answer ({} when it has none)."""
    result: dict[str, Any] = (answer or {}).get("result") or {}
    return result


_KW: Final[dict[str, Any]] = {"profile": PROFILE, "timeout_seconds": 40}


@check(
    "generic:stdout_purity",
    covers=["SRV-01"],
    profile=PROFILE,
    timeout_seconds=60,
    weight=Weight.MUST,
    source=_STDIO,
)
async def stdout_purity(ctx: Context) -> CheckResult:
    """Handshake, pings and (when declared) ``tools/list``: every request answered, stdout only JSON-RPC."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            asks = [(n, "ping") for n in range(1, 6)]
            if "tools" in peer.capabilities:
                asks.append((6, "tools/list"))
            for ident, method in asks:
                await s.send(peer.request(ident, method))
            for ident, method in asks:
                if not _answered(await s.response(ident)):
                    problems.append(f"{method} (id {ident}) was not answered")
        return s.verdict(problems, "handshake, pings and tools/list answered; stdout held only JSON-RPC")


@check(
    "generic:legacy_handshakes",
    covers=["SRV-03"],
    profile=PROFILE,
    timeout_seconds=90,
    weight=Weight.MUST,
    source=_NEGOTIATION,
    revisions=LEGACY_REVISIONS,
)
async def legacy_handshakes(ctx: Context) -> CheckResult:
    """``initialize`` with each legacy revision lands on a revision the server supports (one connection each).

    Not applicable to a server of the 2026-07-28 revision alone: one that refuses every
    ``initialize`` with an error and answers ``server/discover`` naming 2026-07-28.
    """
    problems: list[str] = []
    landed: dict[str, Any] = {}
    refused = 0
    for revision in LEGACY_REVISIONS:
        async with _server(ctx) as s:
            await s.send(_initialize(1, revision))
            answer = await s.response(1)
            got = _result(answer).get("protocolVersion")
            landed[revision] = got
            refused += answer is not None and "error" in answer
            if got not in LEGACY_REVISIONS:
                problems.append(f"initialize with {revision} answered {answer!r:.160}")
            problems += s.problems()
    if refused == len(LEGACY_REVISIONS):
        async with _server(ctx) as s:
            await s.send(_discover(1))
            if _names_modern(await s.response(1)) and not s.problems():
                return CheckResult.not_applicable(
                    f"every initialize was answered with an error and server/discover names {MODERN_REVISION}: "
                    "the server claims no initialize-era revision"
                )
    if not problems:
        ctx.record_revision("generic:legacy_handshakes", str(landed[LEGACY_REVISIONS[-1]]))
    detail = ", ".join(f"{k} -> {v}" for k, v in landed.items())
    return CheckResult(not problems, "; ".join(problems) or f"landed: {detail}")


@check(
    "generic:modern_discover",
    covers=["SRV-03"],
    **_KW,
    weight=Weight.MUST,
    source=_DISCOVER,
    revisions=(MODERN_REVISION,),
)
async def modern_discover(ctx: Context) -> CheckResult:
    """``server/discover`` without a handshake names the 2026-07-28 revision.

    The request carries the per-request envelope of that revision in ``params._meta``: the
    protocol version and the client's capabilities. A server that answers -32601 (method not
    found) claims no 2026-07-28 support, so the rule does not apply to it.
    """
    async with _server(ctx) as s:
        await s.send(_discover(1))
        answer = await s.response(1)
        if _code(answer) == _METHOD_NOT_FOUND and not s.problems():
            await s.send(_initialize(2))
            hello = await s.response(2)
            spoke = _result(hello).get("protocolVersion")
            return CheckResult.not_applicable(
                f"server/discover answered -32601 (method not found): the server does not claim {MODERN_REVISION}"
                + (f"; initialize lands on {spoke}" if spoke else "")
            )
        if not _names_modern(answer):
            return s.verdict([f"server/discover answered {answer!r:.200}"], "")
        ctx.record_revision("generic:modern_discover", MODERN_REVISION)
        return s.verdict([], f"server/discover names {MODERN_REVISION}")


@check(
    "generic:invalid_json_answered",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{JSONRPC}#error_object (-32700 defined; MCP asks no answer to a line that is no message)",
)
async def invalid_json_answered(ctx: Context) -> CheckResult:
    """A line that is not JSON gets a parse error (-32700, id null); the connection still answers a ping."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            await s.send(b"this is not json\n")
            error = await _error_reply(s)
            if error is None or _code(error) != -32700:
                problems.append(f"a line that is not JSON got {error!r:.160}, expected error -32700 with id null")
            await s.send(peer.request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("after the invalid line a ping was not answered")
        return s.verdict(problems, "parse error -32700 with id null; the next ping answered")


@check("generic:split_utf8_frame", covers=["SRV-01"], **_KW, weight=Weight.MUST, source=_STDIO)
async def split_utf8_frame(ctx: Context) -> CheckResult:
    """A frame written in two parts split inside a multi-byte character is read as one.

    stdio messages are UTF-8 JSON-RPC delimited by newlines, so where the writes fall is no part
    of the message.
    """
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            ident = "split-\u20ac-\U0001f600"
            data = peer.request(ident, "ping")
            cut = data.index("\u20ac".encode()) + 1
            await s.send(data[:cut])
            await anyio.sleep(0.2)
            await s.send(data[cut:])
            answer = await s.response(ident)
            if not _answered(answer):
                problems.append(f"the split frame's ping (id {ident!r}) was not answered with its exact id")
        return s.verdict(problems, "a frame split inside a UTF-8 character was answered with its exact id")


@check(
    "generic:large_frame_answered",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_STDIO} (no size limit is set)",
)
async def large_frame_answered(ctx: Context) -> CheckResult:
    """A 900 KiB ping (padding in ``params._meta``) is answered and the connection stays usable."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            await s.send(peer.request(1, "ping", {"_meta": {"conformance/padding": "x" * _LARGE_FRAME_BYTES}}))
            if not _answered(await s.response(1)):
                problems.append(f"a {_LARGE_FRAME_BYTES // 1024} KiB ping was not answered")
            await s.send(peer.request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("a ping after the large frame was not answered")
        return s.verdict(problems, f"a {_LARGE_FRAME_BYTES // 1024} KiB frame and the next ping answered")


@check("generic:ids_echoed_exactly", covers=["SRV-01"], **_KW, weight=Weight.MUST, source=_RESPONSES)
async def ids_echoed_exactly(ctx: Context) -> CheckResult:
    """Ids come back exactly: a 1000-character string, a negative and a small integer.

    A response carries the id of its request (JSON-RPC 2.0; MCP: string or integer ids).
    """
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            for ident in ("i" * 1000, -1, 7):
                await s.send(peer.request(ident, "ping"))
                if not _answered(await s.response(ident)):
                    problems.append(f"a ping with id {str(ident)[:20]!r} was not answered with that exact id")
        return s.verdict(problems, "a long string id, a negative and a small integer id echoed exactly")


@check(
    "generic:large_id_echoed",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source="https://www.rfc-editor.org/rfc/rfc8259#section-6 (integers past 2**53 are not interoperable)",
)
async def large_id_echoed(ctx: Context) -> CheckResult:
    """An id past 2**53 comes back exactly, and a duplicate id does no harm to the connection.

    Both are beyond the text: JSON leaves numbers past double precision to the parser, and a
    client must not reuse an id; a well-behaved server still answers.
    """
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            big = 2**53 + 1
            await s.send(peer.request(big, "ping"))
            if not _answered(await s.response(big)):
                problems.append(f"a ping with id {big} (2**53+1) was not answered with that exact id")
            await s.send(peer.request(7, "ping"))
            await s.response(7)
            await s.send(peer.request(7, "ping"))
            await s.response(7, timeout=2.0)
            await s.send(peer.request(8, "ping"))
            if not _answered(await s.response(8)):
                problems.append("after a duplicate id the connection answered no more")
        return s.verdict(problems, "an id past 2**53 echoed exactly; a duplicate id did no harm")


async def _batch_reply(s: StdioSession, idents: tuple[int, ...]) -> dict[str, Any] | list[Any] | None:
    """The first answer to a batch: an array, an error, or a response naming one of ``idents``."""
    with suppress(TimeoutError):
        while (line := await s.line(_ANSWER_SECONDS)) is not None:
            with suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, list):
                    return cast("list[Any]", doc)
                found = json_object(doc)
                if found is not None and ("error" in found or found.get("id") in idents):
                    return found
    return None


@check(
    "generic:batch_answered",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{JSONRPC}#batch (MCP has no batches since 2025-06-18; an answer or an error, never silence)",
)
async def batch_answered(ctx: Context) -> CheckResult:
    """A JSON array frame is answered (batch results or an error), never silently dropped."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            pings = [json.loads(peer.request(n, "ping")) for n in (11, 12)]
            await s.send(json.dumps(pings).encode() + b"\n")
            if await _batch_reply(s, (11, 12)) is None:
                problems.append("a batch (JSON array) got no answer at all")
            await s.send(peer.request(2, "ping"))
            if not _answered(await s.response(2)):
                problems.append("after the batch a ping was not answered")
        return s.verdict(problems, "the batch was answered; the connection stayed usable")


@check(
    "generic:batch_of_2025_03_26",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.MUST,
    source=f"{_BATCHING} (implementations MUST support receiving JSON-RPC batches)",
    revisions=(_BATCH_REVISION,),
)
async def batch_of_2025_03_26(ctx: Context) -> CheckResult:
    """On a connection that negotiated 2025-03-26, a batch of two pings gets an array with both answers.

    Only that revision has batches: a server that answers ``initialize`` with 2025-03-26 by
    another revision does not claim it, and the rule does not apply.
    """
    problems: list[str] = []
    async with _server(ctx) as s:
        await s.send(_initialize(0, _BATCH_REVISION))
        answer = await s.response(0)
        landed = _result(answer).get("protocolVersion")
        if landed != _BATCH_REVISION:
            if answer is None or s.problems():
                return s.verdict([f"initialize with {_BATCH_REVISION} got {answer!r:.200}"], "")
            return CheckResult.not_applicable(
                f"initialize with {_BATCH_REVISION} lands on {landed or answer!r:.100}: the server does not claim "
                f"{_BATCH_REVISION}, the one revision with batches"
            )
        await s.send(_INITIALIZED)
        await s.send(b'[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","id":12,"method":"ping"}]\n')
        reply = await _batch_reply(s, (11, 12))
        ids = sorted(str(r.get("id")) for r in json_objects(reply))
        if ids != ["11", "12"]:
            problems.append(f"a batch of two pings got {reply!r:.200}, expected an array answering ids 11 and 12")
        return s.verdict(problems, f"on {_BATCH_REVISION} a batch of two pings got an array with both answers")


@check("generic:eof_flushes_answers", covers=["SRV-01"], **_KW, weight=Weight.MUST, source=_RESPONSES)
async def eof_flushes_answers(ctx: Context) -> CheckResult:
    """Requests written just before stdin closes are still answered.

    Every request gets a response (JSON-RPC 2.0); closing stdin is how a client ends the
    connection (MCP lifecycle, shutdown), not a way to take back what it already sent.
    """
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            await s.send(peer.request(1, "ping") + peer.request(2, "ping"))
            assert s.proc.stdin is not None
            await s.proc.stdin.aclose()
            for ident in (1, 2):
                if not _answered(await s.response(ident)):
                    problems.append(f"request {ident}, sent just before stdin closed, was not answered")
        return s.verdict(problems, "requests sent just before stdin closed were answered")


@check(
    "generic:eof_exits",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_SHUTDOWN} (the client closes stdin, waits for the exit, then signals)",
)
async def eof_exits(ctx: Context) -> CheckResult:
    """With stdin closed, the server closes stdout and exits within 10 s, unsignalled."""
    problems: list[str] = []
    async with _server(ctx) as s:
        if await _open(s, problems) is not None:
            assert s.proc.stdin is not None
            await s.proc.stdin.aclose()
            if not await s.closes(_CLOSE_SECONDS):
                problems.append(f"the server did not exit within {_CLOSE_SECONDS:g} s of stdin closing")
        return s.verdict(problems, "the server exited once stdin closed")


@check(
    "generic:closed_stdout_exits",
    covers=["SRV-01"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_SHUTDOWN} (a server whose client is gone)",
)
async def closed_stdout_exits(ctx: Context) -> CheckResult:
    """With its stdout closed by the client, the server exits (or at least stops) instead of spinning."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            assert s.proc.stdout is not None
            await s.proc.stdout.aclose()
            for n in range(1, 4):
                if not await s.send(peer.request(n, "ping"), timeout=2.0):
                    break
            assert s.proc.stdin is not None
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await s.proc.stdin.aclose()
            if not await s.exits(_CLOSE_SECONDS):
                problems.append(f"the server still ran {_CLOSE_SECONDS:g} s after its stdout and stdin closed")
        return s.verdict(problems, "the server exited once its stdout and stdin were closed")


@check(
    "generic:pings_paced_answered",
    covers=["SRV-01"],
    profile=PROFILE,
    timeout_seconds=60,
    weight=Weight.MUST,
    source=_PING,
)
async def pings_paced_answered(ctx: Context) -> CheckResult:
    """200 pings at 100 a second are all answered, each once."""
    problems: list[str] = []
    async with _server(ctx) as s:
        peer = await _open(s, problems)
        if peer is not None:
            for n in range(1, _PACED_PINGS + 1):
                await s.send(peer.request(n, "ping"))
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
