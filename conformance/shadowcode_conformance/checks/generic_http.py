"""The ``generic`` profile over Streamable HTTP: transport rules every MCP server must keep (GW-04, GW-05).

These checks run when ``--url`` names the server's endpoint (``--profile generic --url
http://127.0.0.1:PORT/mcp``) and are reported "not run" without it; ``--bearer-env NAME`` adds
``Authorization: Bearer $NAME`` to every request. They speak raw HTTP (the standard library's
``http.client``, one connection per request) and use only ``initialize``,
``notifications/initialized``, ``ping`` and ``server/discover``, so they hold for any server,
stateless or with sessions, answering in JSON or in SSE:

* ``generic:http_legacy_handshakes``: ``initialize`` with each handshake revision lands on one;
  the answer's Content-Type is JSON or SSE and agrees with its body; a ping is answered.
* ``generic:http_modern_discover``: ``server/discover`` with the 2026-07-28 envelope names it.
* ``generic:http_notification_accepted``: a notification gets 202 and no body.
* ``generic:http_invalid_json``: a body that is not JSON gets a 4xx status;
  ``generic:http_invalid_json_error_body``: and a JSON-RPC parse error (-32700, id null).
* ``generic:http_methods``: GET gets 405 or an event stream; ``generic:http_other_methods``:
  PUT and PATCH get 405.
* ``generic:http_sessions``: with sessions, an unknown session id gets 404, and one ended by
  DELETE 404; ``generic:http_session_required``: a request without the session id gets 400
  (stateless servers: not applicable).
* ``generic:http_accept_content_type``: a request whose Accept allows neither JSON nor SSE,
  and one whose Content-Type is not JSON, get 4xx.
* ``generic:http_protocol_version_header``: an unsupported ``MCP-Protocol-Version`` gets 400.
* ``generic:http_foreign_host``, ``generic:http_foreign_origin``, ``generic:http_local_origin``:
  DNS-rebinding protection: a foreign Host is refused (4xx), a foreign Origin gets 403, and the
  server's own localhost Host and Origin are accepted.

Each check states its weight and the section of the Streamable HTTP transport it proves (CONF-01):
``must`` rules fail, ``should`` and ``robustness`` ones warn, and a rule of a revision the server
does not claim is not applicable. A server that refuses ``initialize`` but answers
``server/discover`` with 2026-07-28 gets the handshake-era checks as not applicable.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio.to_thread

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.verdicts import JSONRPC, Weight, spec

__all__ = ["Reply", "exchange", "exchange_sync"]

PROFILE: Final = "generic"
_SECONDS: Final = 15.0
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream"
_ACCEPT: Final = f"{_JSON}, {_SSE}"
_CLIENT: Final = {"name": "conformance-generic-http", "version": "1"}


@dataclass
class Reply:
    """One HTTP answer.

    Attributes:
        status: the HTTP status (0 when the request failed; ``error`` says why).
        headers: header names in lower case.
        body: the body read (an event stream up to the awaited message).
        messages: JSON-RPC messages found in the body (a JSON document or SSE ``data:`` events).
        error: why the request failed, if it did.
    """

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict[str, str])
    body: bytes = b""
    messages: list[Any] = field(default_factory=list[Any])
    error: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def answer(self, ident: Any) -> dict[str, Any] | None:
        """The response with id ``ident`` among the messages."""
        for found in self.messages:
            m = cast("dict[str, Any]", found) if isinstance(found, dict) else {}
            if m.get("id") == ident and ("result" in m or "error" in m):
                return m
        return None

    def show(self) -> str:
        if self.error:
            return f"no answer ({self.error})"
        return f"HTTP {self.status} {self.content_type or '-'} {self.body[:160]!r}"


def _sse_messages(lines: list[bytes]) -> list[Any]:
    found: list[Any] = []
    data: list[str] = []
    for raw in [*lines, b""]:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                try:
                    found.append(json.loads("\n".join(data)))
                except ValueError:
                    found.append({"unparsed": "\n".join(data)})
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return found


def exchange_sync(
    url: str,
    method: str,
    body: bytes | None,
    headers: Mapping[str, str],
    want: Any,
    seconds: float,
    stream_head_only: bool,
) -> Reply:
    """One blocking request to ``url`` on a fresh connection; see :func:`exchange` (GW-05).

    Returns:
        A :class:`Reply`; a failed request is one with ``error`` set, never an exception.
    """
    parts = urllib.parse.urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=seconds)
    reply = Reply()
    try:
        conn.putrequest(method, parts.path or "/", skip_host=True, skip_accept_encoding=True)
        sent = {k.lower() for k in headers}
        if "host" not in sent:
            conn.putheader("Host", parts.netloc)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        reply.status = resp.status
        reply.headers = {k.lower(): v for k, v in resp.getheaders()}
        if reply.content_type == _SSE:
            if stream_head_only:
                return reply
            lines: list[bytes] = []
            while line := resp.readline(1024 * 1024):
                lines.append(line)
                if line.strip() == b"":
                    reply.messages = _sse_messages(lines)
                    if want is not None and reply.answer(want) is not None:
                        break
            reply.body = b"".join(lines)
            reply.messages = _sse_messages(lines)
        else:
            reply.body = resp.read(4 * 1024 * 1024)
            if reply.body.strip():
                try:
                    doc = json.loads(reply.body)
                except ValueError:
                    doc = None
                if isinstance(doc, list):
                    reply.messages = doc
                elif doc is not None:
                    reply.messages = [doc]
    except (OSError, http.client.HTTPException) as exc:
        reply.error = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return reply


async def exchange(
    ctx: Context,
    message: Any = None,
    *,
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
    raw: bytes | None = None,
    base: bool = True,
    stream_head_only: bool = False,
) -> Reply:
    """One request to ``ctx.url`` on a fresh connection, bounded in time.

    Args:
        ctx: the check's context (``url``, ``bearer``).
        message: a JSON-RPC message to send as the body (``raw`` bytes instead when given).
        method: the HTTP method.
        headers: headers to add or override (a value of ``""`` drops a base header).
        raw: a body sent as is.
        base: start from the usual Content-Type, Accept and Authorization headers.
        stream_head_only: for an event-stream answer, read only the status and headers.

    Returns:
        A :class:`Reply`; an SSE body is read until the answer to ``message``'s id arrives.
    """
    assert ctx.url is not None
    merged: dict[str, str] = {}
    if base:
        merged |= {"Content-Type": _JSON, "Accept": _ACCEPT}
        if ctx.bearer:
            merged["Authorization"] = f"Bearer {ctx.bearer}"
    for name, value in (headers or {}).items():
        for old in [k for k in merged if k.lower() == name.lower()]:
            del merged[old]
        if value:
            merged[name] = value
    body = raw if raw is not None else (json.dumps(message).encode() if message is not None else None)
    want = cast("dict[str, Any]", message).get("id") if isinstance(message, dict) else None
    seconds = max(1.0, min(_SECONDS, ctx.remaining()))
    return await anyio.to_thread.run_sync(
        exchange_sync, ctx.url, method, body, merged, want, seconds, stream_head_only, abandon_on_cancel=True
    )


def _request(ident: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        body["params"] = params
    return body


def _initialize(ident: Any = 0, revision: str = LEGACY_REVISIONS[-1]) -> dict[str, Any]:
    return _request(ident, "initialize", {"protocolVersion": revision, "capabilities": {}, "clientInfo": _CLIENT})


_INITIALIZED: Final = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass
class _Session:
    """What a handshake left: the headers later requests carry, and what it saw."""

    headers: dict[str, str]
    revision: str
    session_id: str | None
    reply: Reply


async def _handshake(ctx: Context, problems: list[str], revision: str = LEGACY_REVISIONS[-1]) -> _Session | None:
    """``initialize`` then ``notifications/initialized``; None (with a problem) when it fails."""
    reply = await exchange(ctx, _initialize(0, revision))
    answer = reply.answer(0)
    found: object = (answer or {}).get("result")
    result = cast("dict[str, Any]", found) if isinstance(found, dict) else None
    if reply.status != 200 or result is None:
        problems.append(f"initialize ({revision}) got {reply.show()}")
        return None
    got = str(result.get("protocolVersion"))
    session_id = reply.headers.get("mcp-session-id")
    headers = {"MCP-Protocol-Version": got}
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    await exchange(ctx, _INITIALIZED, headers=headers)
    return _Session(headers, got, session_id, reply)


def _agrees(reply: Reply) -> str:
    """A problem when the answer's Content-Type is neither JSON nor SSE or does not match its body."""
    if reply.content_type not in (_JSON, _SSE):
        return f"Content-Type {reply.content_type or 'missing'!r} is neither {_JSON} nor {_SSE}"
    if not reply.messages:
        return f"a {reply.content_type} body held no JSON-RPC message: {reply.body[:120]!r}"
    return ""


def _is_parse_error(reply: Reply) -> bool:
    messages = [cast("dict[str, Any]", m) for m in reply.messages if isinstance(m, dict)]
    return any(
        m.get("id") is None and isinstance(m.get("error"), dict) and m["error"].get("code") == -32700 for m in messages
    )


def _verdict(problems: list[str], good: str, notes: list[str] | None = None) -> CheckResult:
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, good + (f" ({'; '.join(notes)})" if notes else ""))


_DISCOVER_META: Final[dict[str, object]] = {
    "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
_DISCOVER_HEADERS: Final = {"MCP-Protocol-Version": MODERN_REVISION, "Mcp-Method": "server/discover"}


async def _discover(ctx: Context) -> Reply:
    return await exchange(
        ctx, _request(1, "server/discover", {"_meta": dict(_DISCOVER_META)}), headers=_DISCOVER_HEADERS
    )


def _names_modern(reply: Reply) -> bool:
    answer = reply.answer(1)
    return reply.status == 200 and answer is not None and "result" in answer and MODERN_REVISION in json.dumps(answer)


async def _without_handshake(ctx: Context, problems: list[str]) -> CheckResult:
    """The result of a check whose handshake failed: not applicable to a server of the 2026-07-28
    revision alone (no ``initialize``, so no handshake-era rule to check), else a failure."""
    if await _only_modern(ctx):
        return CheckResult.not_applicable(
            f"initialize was refused and server/discover names {MODERN_REVISION}: the server claims no "
            "initialize-era revision, which this check's rule belongs to"
        )
    return _verdict(problems, "")


async def _only_modern(ctx: Context) -> bool:
    """Whether ``initialize`` (2025-11-25) is refused while ``server/discover`` names 2026-07-28."""
    hello = await exchange(ctx, _initialize(0))
    if hello.status == 200 and isinstance((hello.answer(0) or {}).get("result"), dict):
        return False
    return _names_modern(await _discover(ctx))


_KW: Final[dict[str, Any]] = {"profile": PROFILE, "needs": "url", "timeout_seconds": 90}
_HTTP: Final = spec("2025-11-25", "basic/transports#streamable-http")
_SENDING: Final = spec("2025-11-25", "basic/transports#sending-messages-to-the-server")
_LISTENING: Final = spec("2025-11-25", "basic/transports#listening-for-messages-from-the-server")
_SESSIONS: Final = spec("2025-11-25", "basic/transports#session-management")
_VERSION_HEADER: Final = spec("2025-11-25", "basic/transports#protocol-version-header")
_SECURITY: Final = spec("2025-11-25", "basic/transports#security-warning")
_RFC9110: Final = "https://www.rfc-editor.org/rfc/rfc9110"
_HEADER_REVISIONS: Final = ("2025-06-18", "2025-11-25")
"""The handshake revisions that have the ``MCP-Protocol-Version`` header."""


@check(
    "generic:http_legacy_handshakes",
    covers=["GW-05"],
    **_KW,
    weight=Weight.MUST,
    source=f"{_HTTP} ; {spec('2025-11-25', 'basic/lifecycle#version-negotiation')}",
    revisions=LEGACY_REVISIONS,
)
async def http_legacy_handshakes(ctx: Context) -> CheckResult:
    """``initialize`` with each handshake revision lands on one; JSON or SSE that agrees; a ping answered."""
    problems: list[str] = []
    landed: dict[str, str] = {}
    for revision in LEGACY_REVISIONS:
        session = await _handshake(ctx, problems, revision)
        if session is None:
            continue
        landed[revision] = session.revision
        if session.revision not in LEGACY_REVISIONS:
            problems.append(f"initialize with {revision} landed on {session.revision!r}")
        if issue := _agrees(session.reply):
            problems.append(f"initialize ({revision}): {issue}")
        ping = await exchange(ctx, _request(1, "ping"), headers=session.headers)
        if ping.status != 200 or ping.answer(1) is None:
            problems.append(f"a ping after initialize ({revision}) got {ping.show()}")
    if not landed:
        return await _without_handshake(ctx, problems)
    if not problems:
        ctx.record_revision("generic:http_legacy_handshakes", landed[LEGACY_REVISIONS[-1]])
    return _verdict(problems, "landed: " + ", ".join(f"{k} -> {v}" for k, v in landed.items()))


@check(
    "generic:http_modern_discover",
    covers=["GW-05"],
    **_KW,
    weight=Weight.MUST,
    source=f"{spec(MODERN_REVISION, 'server/discover')} ; {spec(MODERN_REVISION, 'basic/transports/streamable-http')}",
    revisions=(MODERN_REVISION,),
)
async def http_modern_discover(ctx: Context) -> CheckResult:
    """``server/discover`` with the 2026-07-28 envelope names that revision.

    The request carries that revision's headers (``MCP-Protocol-Version``, ``Mcp-Method``) and
    its per-request ``_meta`` (protocol version, client capabilities). A server that refuses it
    (a 4xx status or a JSON-RPC error) while its ``initialize`` lands on a handshake revision
    does not claim 2026-07-28, so the rule does not apply to it.
    """
    reply = await _discover(ctx)
    if _names_modern(reply):
        ctx.record_revision("generic:http_modern_discover", MODERN_REVISION)
        return CheckResult(True, f"server/discover names {MODERN_REVISION}")
    refused = 400 <= reply.status < 500 or (reply.status == 200 and "error" in (reply.answer(1) or {}))
    if refused:
        hello = await exchange(ctx, _initialize(0))
        result: dict[str, Any] = (hello.answer(0) or {}).get("result") or {}
        spoke = result.get("protocolVersion")
        if hello.status == 200 and spoke in LEGACY_REVISIONS:
            return CheckResult.not_applicable(
                f"server/discover got {reply.show()} while initialize lands on {spoke}: the server does not "
                f"claim {MODERN_REVISION}"
            )
    return CheckResult(False, f"server/discover got {reply.show()}")


@check("generic:http_notification_accepted", covers=["GW-05"], **_KW, weight=Weight.MUST, source=_SENDING)
async def http_notification_accepted(ctx: Context) -> CheckResult:
    """A notification (``notifications/initialized``) gets 202 Accepted and no body."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    reply = await exchange(ctx, _INITIALIZED, headers=session.headers)
    if reply.status != 202 or reply.body.strip():
        problems.append(f"a notification got {reply.show()}, expected 202 with no body")
    return _verdict(problems, "a notification got 202 with no body")


@check("generic:http_invalid_json", covers=["GW-05"], **_KW, weight=Weight.MUST, source=_SENDING)
async def http_invalid_json(ctx: Context) -> CheckResult:
    """A body that is not JSON gets an HTTP error status (4xx): the server cannot accept it."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    reply = await exchange(ctx, raw=b"this is not json", headers=session.headers)
    if not 400 <= reply.status < 500:
        problems.append(f"a body that is not JSON got {reply.show()}, expected 4xx")
    return _verdict(problems, f"a body that is not JSON got {reply.status}")


@check(
    "generic:http_invalid_json_error_body",
    covers=["GW-05"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_SENDING} (the body MAY be a JSON-RPC error with no id) ; {JSONRPC}#error_object",
)
async def http_invalid_json_error_body(ctx: Context) -> CheckResult:
    """A body that is not JSON gets a JSON-RPC parse error (-32700, id null) in the answer's body."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    reply = await exchange(ctx, raw=b"this is not json", headers=session.headers)
    if not _is_parse_error(reply):
        problems.append(f"a body that is not JSON got no JSON-RPC error -32700 with id null: {reply.show()}")
    return _verdict(problems, "a body that is not JSON got error -32700 with id null")


@check("generic:http_methods", covers=["GW-05"], **_KW, weight=Weight.MUST, source=_LISTENING)
async def http_methods(ctx: Context) -> CheckResult:
    """GET gets 405 or an event stream."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    get = await exchange(
        ctx, method="GET", headers={**session.headers, "Accept": _SSE, "Content-Type": ""}, stream_head_only=True
    )
    if get.status == 405:
        return CheckResult(True, "GET: 405 (no server-initiated stream)")
    if get.status == 200 and get.content_type == _SSE:
        return CheckResult(True, "GET: an event stream")
    problems.append(f"GET got {get.show()}, expected 405 or 200 text/event-stream")
    return _verdict(problems, "")


@check(
    "generic:http_other_methods",
    covers=["GW-05"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_RFC9110}#name-405-method-not-allowed (MCP names only POST, GET and DELETE)",
)
async def http_other_methods(ctx: Context) -> CheckResult:
    """PUT and PATCH get 405 Method Not Allowed."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    for verb in ("PUT", "PATCH"):
        reply = await exchange(ctx, _request(1, "ping"), method=verb, headers=session.headers)
        if reply.status != 405:
            problems.append(f"{verb} got {reply.show()}, expected 405")
    return _verdict(problems, "PUT and PATCH got 405")


async def _session_or_na(ctx: Context, problems: list[str]) -> _Session | CheckResult:
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    if not session.session_id:
        return CheckResult.not_applicable("stateless: initialize issued no Mcp-Session-Id, so there is no session")
    return session


@check("generic:http_sessions", covers=["GW-05"], **_KW, weight=Weight.MUST, source=_SESSIONS)
async def http_sessions(ctx: Context) -> CheckResult:
    """With sessions: an unknown session id gets 404, and so does one ended by DELETE (2xx, or 405)."""
    problems: list[str] = []
    notes: list[str] = []
    session = await _session_or_na(ctx, problems)
    if isinstance(session, CheckResult):
        return session
    bare = {k: v for k, v in session.headers.items() if k != "Mcp-Session-Id"}
    unknown = await exchange(ctx, _request(2, "ping"), headers={**bare, "Mcp-Session-Id": "no-such-session-0000"})
    if unknown.status != 404:
        problems.append(f"a ping with an unknown session id got {unknown.show()}, expected 404")
    ended = await exchange(ctx, method="DELETE", headers={**session.headers, "Content-Type": ""})
    if ended.status == 405:
        notes.append("DELETE: 405 (the client may not end its session)")
    elif 200 <= ended.status < 300:
        after = await exchange(ctx, _request(3, "ping"), headers=session.headers)
        if after.status != 404:
            problems.append(f"a ping in a session ended by DELETE got {after.show()}, expected 404")
    else:
        problems.append(f"DELETE of the session got {ended.show()}, expected 2xx or 405")
    return _verdict(problems, "unknown and ended sessions 404", notes)


@check("generic:http_session_required", covers=["GW-05"], **_KW, weight=Weight.SHOULD, source=_SESSIONS)
async def http_session_required(ctx: Context) -> CheckResult:
    """With sessions: a request without the session id gets 400 Bad Request."""
    problems: list[str] = []
    session = await _session_or_na(ctx, problems)
    if isinstance(session, CheckResult):
        return session
    bare = {k: v for k, v in session.headers.items() if k != "Mcp-Session-Id"}
    missing = await exchange(ctx, _request(1, "ping"), headers=bare)
    if missing.status != 400:
        problems.append(f"a ping without the session id got {missing.show()}, expected 400")
    return _verdict(problems, "no session id: 400")


@check(
    "generic:http_accept_content_type",
    covers=["GW-05"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_RFC9110}#name-406-not-acceptable ; {_RFC9110}#name-415-unsupported-media-type",
)
async def http_accept_content_type(ctx: Context) -> CheckResult:
    """An Accept allowing neither JSON nor SSE, and a Content-Type that is not JSON, get 4xx."""
    problems: list[str] = []
    codes: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    for label, extra in (
        ("Accept: text/html", {"Accept": "text/html"}),
        ("Content-Type: text/plain", {"Content-Type": "text/plain"}),
    ):
        reply = await exchange(ctx, _request(1, "ping"), headers={**session.headers, **extra})
        codes.append(f"{label} -> {reply.status}")
        if not 400 <= reply.status < 500:
            problems.append(f"a ping with {label} got {reply.show()}, expected 4xx")
    return _verdict(problems, "; ".join(codes))


@check(
    "generic:http_protocol_version_header",
    covers=["GW-05"],
    **_KW,
    weight=Weight.MUST,
    source=_VERSION_HEADER,
    revisions=_HEADER_REVISIONS,
)
async def http_protocol_version_header(ctx: Context) -> CheckResult:
    """A request with an unsupported ``MCP-Protocol-Version`` header gets 400 (2025-06-18 and later)."""
    problems: list[str] = []
    session = await _handshake(ctx, problems)
    if session is None:
        return await _without_handshake(ctx, problems)
    if session.revision not in _HEADER_REVISIONS:
        return CheckResult.not_applicable(
            f"initialize with {LEGACY_REVISIONS[-1]} lands on {session.revision}, which has no MCP-Protocol-Version "
            "header (2025-06-18 and later)"
        )
    wrong = {**session.headers, "MCP-Protocol-Version": "1999-01-01"}
    reply = await exchange(ctx, _request(1, "ping"), headers=wrong)
    if reply.status != 400:
        problems.append(f"a ping with MCP-Protocol-Version 1999-01-01 got {reply.show()}, expected 400")
    return _verdict(problems, "an unsupported MCP-Protocol-Version got 400")


def _port(ctx: Context) -> int:
    assert ctx.url is not None
    parts = urllib.parse.urlsplit(ctx.url)
    return parts.port or (443 if parts.scheme == "https" else 80)


@check(
    "generic:http_foreign_host",
    covers=["GW-04"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_SECURITY} (DNS rebinding; the text requires the Origin check, a Host check is defence in depth)",
)
async def http_foreign_host(ctx: Context) -> CheckResult:
    """``initialize`` with ``Host: evil.example.com`` (DNS rebinding) is refused with a 4xx status."""
    reply = await exchange(ctx, _initialize(), headers={"Host": f"evil.example.com:{_port(ctx)}"})
    if not 400 <= reply.status < 500:
        return CheckResult(False, f"a foreign Host got {reply.show()}, expected 4xx")
    return CheckResult(True, f"a foreign Host got {reply.status}")


@check(
    "generic:http_foreign_origin",
    covers=["GW-04"],
    **_KW,
    weight=Weight.MUST,
    source=f"{_SECURITY} (an Origin present and invalid gets 403 Forbidden)",
)
async def http_foreign_origin(ctx: Context) -> CheckResult:
    """``initialize`` with ``Origin: http://evil.example.com`` gets 403 Forbidden."""
    reply = await exchange(ctx, _initialize(), headers={"Origin": "http://evil.example.com"})
    if reply.status != 403:
        return CheckResult(False, f"a foreign Origin got {reply.show()}, expected 403")
    return CheckResult(True, "a foreign Origin got 403")


@check(
    "generic:http_local_origin",
    covers=["GW-04"],
    **_KW,
    weight=Weight.ROBUSTNESS,
    source=f"{_SECURITY} (only an invalid Origin must be refused; a browser-free server may refuse all)",
)
async def http_local_origin(ctx: Context) -> CheckResult:
    """``initialize`` with the server's own localhost Host and Origin is accepted (200)."""
    port = _port(ctx)
    reply = await exchange(
        ctx, _initialize(), headers={"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}
    )
    if reply.status != 200 or reply.answer(0) is None:
        return CheckResult(False, f"localhost Host and Origin got {reply.show()}, expected 200 with the answer")
    return CheckResult(True, "localhost Host and Origin accepted")
