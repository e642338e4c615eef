"""The Streamable HTTP client against small hostile peers on 127.0.0.1 whose bytes the tests control.

Covers CLI-04, CLI-11, CLI-16, CLI-17, CLI-18.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from shadowcode.errors import UpstreamServerError
from shadowcode.limits import (
    MCP_HTTP_BODY_MAX_BYTES,
    MCP_HTTP_EVENT_ID_MAX_BYTES,
    MCP_HTTP_HEADERS_MAX_BYTES,
    MCP_HTTP_REQUESTS_MAX,
    MCP_HTTP_SESSION_DELETE_SECONDS,
    MCP_HTTP_SESSION_ID_MAX_BYTES,
    MCP_HTTP_SSE_EVENT_MAX_BYTES,
    MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX,
)
from shadowcode.mcp.client.connection import CallRefused, Connection, ConnectionState, connections_open
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.streamable_http import HttpLimits, headers_size
from tests.support.http_peer import Peer, Received, http_head, json_reply, peer, result

pytestmark = pytest.mark.anyio

TOKEN = "tok-5b1e9c0d7a"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(
    url: str, *, bearer: str | None = None, timeout: float = 5.0, limits: HttpLimits | None = None
) -> AsyncIterator[Connection]:
    """A started connection (READY, or FAILED with ``error`` set); closed on exit."""
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:h",
                endpoint=Endpoint(url, bearer=bearer),
                timeout_seconds=timeout,
                http_limits=limits or HttpLimits(),
                redactor=Redactor([bearer] if bearer else []),
            )
            with suppress(UpstreamServerError):
                await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()
    assert connections_open() == 0


def _route(p: Peer, rpc: str, reply: Any) -> None:
    """Answer ``rpc`` with fixed bytes, or with ``reply(req)`` bytes."""

    async def handler(req: Received, stream: anyio.abc.SocketStream) -> None:
        await stream.send(reply(req) if callable(reply) else reply)

    p.routes[rpc] = handler


def _sse_head() -> bytes:
    return http_head(200, {"content-type": "text/event-stream"})


def _event(doc: Any, **fields: str) -> bytes:
    extra = b"".join(f"{k}: {v}\n".encode() for k, v in fields.items())
    return extra + b"event: message\ndata: " + json.dumps(doc).encode("utf-8") + b"\n\n"


def _text_result(req: Received, text: str) -> dict[str, Any]:
    return result(req, {"content": [{"type": "text", "text": text}]})


# -- lifecycles (CLI-16) --------------------------------------------------------------------


@pytest.mark.req("CLI-16", "CLI-04", "CLI-11")
async def test_the_legacy_lifecycle_uses_the_session_the_get_stream_and_deletes_the_session() -> None:
    async with peer() as p, connected(p.url, bearer=TOKEN) as conn:
        assert conn.state is ConnectionState.READY, conn.error
        assert conn.protocol_version == "2025-06-18"
        reply = await conn.call("echo", {"text": "Zürich"})
        assert reply == {
            "is_error": False,
            "content": [{"type": "text", "text": "Zürich"}],
            "structured_content": {"text": "Zürich"},
        }
    assert p.deleted.is_set()
    assert conn.cleanup == "session deleted"
    order = [(r.method, r.rpc) for r in p.received]
    assert order[:3] == [("POST", "server/discover"), ("POST", "initialize"), ("POST", "notifications/initialized")]
    assert ("POST", "tools/list") in order[3:5] and ("GET", "") in order and order[-1] == ("DELETE", "")
    discover, initialize, *later = p.received
    assert discover.headers["mcp-protocol-version"] == "2026-07-28"
    assert discover.headers["mcp-method"] == "server/discover"
    assert "mcp-session-id" not in initialize.headers
    for req in later:
        assert req.headers["mcp-session-id"] == "session-1"
        assert req.headers["mcp-protocol-version"] == "2025-06-18"
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in p.received)
    assert all(r.headers["accept-encoding"] == "identity" for r in p.received)


MODERN = "2026-07-28"
REGION_TOOL = {
    "name": "wetter",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "day": {"type": "integer"}},
    },
}


def _modern(p: Peer) -> None:
    p.session = None

    def discover(req: Received) -> bytes:
        doc = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "cacheScope": "private"}
        return json_reply(200, result(req, doc | {"ttlMs": 0, "resultType": "complete"}))

    def tools(req: Received) -> bytes:
        doc = {"tools": [REGION_TOOL], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
        return json_reply(200, result(req, doc))

    def call(req: Received) -> bytes:
        doc = {"content": [{"type": "text", "text": "sunny"}], "isError": True, "resultType": "complete"}
        return _sse_head() + _event(result(req, doc | {"structuredContent": {"sky": "clear"}}))

    _route(p, "server/discover", discover)
    _route(p, "tools/list", tools)
    _route(p, "tools/call", call)


@pytest.mark.req("CLI-16")
async def test_the_modern_lifecycle_is_stateless_and_sends_the_protocol_and_parameter_headers() -> None:
    async with peer() as p:
        _modern(p)
        async with connected(p.url) as conn:
            assert conn.state is ConnectionState.READY, conn.error
            assert conn.protocol_version == MODERN
            reply = await conn.call("wetter", {"region": "Zürich Nord", "day": 3})
            assert reply["is_error"] is True and reply["structured_content"] == {"sky": "clear"}
            assert reply["content"] == [{"type": "text", "text": "sunny"}]
        assert [r.rpc for r in p.received] == ["server/discover", "tools/list", "tools/call"]
        assert all(r.method == "POST" and "mcp-session-id" not in r.headers for r in p.received)
        call = p.calls("tools/call")[0]
        assert call.headers["mcp-protocol-version"] == MODERN
        assert call.headers["mcp-method"] == "tools/call"
        assert call.headers["mcp-name"] == "wetter"
        encoded = base64.b64encode("Zürich Nord".encode()).decode("ascii")
        assert call.headers["mcp-param-region"] == f"=?base64?{encoded}?="
        assert call.message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
        assert conn.cleanup == "closed"


@pytest.mark.req("CLI-17")
async def test_protocol_headers_past_the_limit_are_not_sent() -> None:
    async with peer() as p:
        _modern(p)
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="nothing was sent"):
                await conn.call("wetter", {"region": "x" * MCP_HTTP_HEADERS_MAX_BYTES})
            assert conn.state is ConnectionState.READY
            await conn.call("wetter", {"region": "x" * (MCP_HTTP_HEADERS_MAX_BYTES // 2)})
        assert len(p.calls("tools/call")) == 1


# -- refusals (CLI-11, CLI-04) ------------------------------------------------------------------


@pytest.mark.req("CLI-11", "CLI-04")
async def test_a_redirect_to_another_host_is_not_followed_and_gets_no_credential() -> None:
    async with peer() as p, peer() as elsewhere:
        _route(p, "tools/call", http_head(307, {"location": elsewhere.url.replace("127.0.0.1", "127.0.0.2")}))
        async with connected(p.url, bearer=TOKEN) as conn:
            with pytest.raises(UpstreamServerError, match="redirect \\(HTTP 307\\), which is not followed"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED
        assert elsewhere.received == []
        assert len(p.calls("tools/call")) == 1


@pytest.mark.req("CLI-11")
async def test_a_401_starts_no_login_and_its_challenge_is_not_echoed() -> None:
    challenge = 'Bearer realm="realm-8d2f", error="invalid_token", resource_metadata="http://127.0.0.1:1/x"'
    async with peer() as p:
        _route(p, "initialize", http_head(401, {"www-authenticate": challenge}) + b"secret body 4c1a")
        _route(p, "server/discover", http_head(401, {"www-authenticate": challenge}))
        async with connected(p.url, bearer=TOKEN) as conn:
            assert conn.state is ConnectionState.FAILED
            assert conn.error is not None and "authentication required: run `shadowcode mcp login" in conn.error
            assert "realm-8d2f" not in conn.error and "4c1a" not in conn.error
        assert [r.rpc for r in p.received] == ["server/discover"]


@pytest.mark.req("CLI-11")
async def test_proxy_variables_and_netrc_are_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async with peer() as p, peer() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        netrc = tmp_path / ".netrc"
        netrc.write_text("machine 127.0.0.1 login user password netrc-pw-31\n", encoding="utf-8")
        monkeypatch.setenv("NETRC", str(netrc))
        monkeypatch.setenv("HOME", str(tmp_path))
        async with connected(p.url) as conn:
            assert (await conn.call("echo", {"text": "direct"}))["content"][0]["text"] == "direct"
        assert proxy.received == []
        assert all("authorization" not in r.headers for r in p.received)


@pytest.mark.req("CLI-11")
async def test_a_network_host_without_the_permission_is_refused_before_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_lookup(*args: Any, **kw: Any) -> Any:
        raise AssertionError("looked up a name")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    async with connected("https://mcp.example.com/mcp", bearer=TOKEN) as conn:
        assert conn.state is ConnectionState.FAILED
        assert conn.error is not None and "network permission" in conn.error


@pytest.mark.req("CLI-04", "CLI-17")
async def test_a_reflected_authorization_header_never_reaches_errors() -> None:
    async with peer() as p:

        def reflect(req: Received) -> bytes:
            text = req.message["params"]["arguments"]["text"]
            auth = req.headers["authorization"]
            if text == "400":
                error = {"code": -32602, "message": f"bad credential {auth}", "data": auth}
                return json_reply(400, {"jsonrpc": "2.0", "id": req.message["id"], "error": error})
            if text == "200":
                error = {"code": -32001, "message": f"bad credential {auth}"}
                return json_reply(200, {"jsonrpc": "2.0", "id": req.message["id"], "error": error})
            return http_head(500, {"content-type": "text/plain"}) + f"denied {auth}".encode()

        _route(p, "tools/call", reflect)
        async with connected(p.url, bearer=TOKEN) as conn:
            with pytest.raises(CallRefused) as refused:
                await conn.call("echo", {"text": "400"})
            assert TOKEN not in refused.value.message and "HTTP 400" in refused.value.message
            assert refused.value.fields["error_code"] == -32602
            with pytest.raises(CallRefused) as answered:
                await conn.call("echo", {"text": "200"})
            assert TOKEN not in answered.value.message and "[redacted]" in answered.value.message
            with pytest.raises(UpstreamServerError) as failed:
                await conn.call("echo", {"text": "500"})
            assert TOKEN not in failed.value.message and "HTTP 500" in failed.value.message
            assert conn.error is not None and TOKEN not in conn.error


# -- body and stream limits (CLI-17) ----------------------------------------------------------------


def _padded_json(req: Received, size: int) -> bytes:
    base = len(json.dumps(_text_result(req, "")).encode("utf-8"))
    body = json.dumps(_text_result(req, "x" * (size - base))).encode("utf-8")
    assert len(body) == size
    return json_reply(200, json.loads(body))


@pytest.mark.req("CLI-17")
async def test_a_json_body_at_the_limit_is_read_and_one_byte_more_closes_the_connection() -> None:
    async with peer() as p:
        _route(p, "tools/call", lambda req: _padded_json(req, MCP_HTTP_BODY_MAX_BYTES))
        async with connected(p.url) as conn:
            reply = await conn.call("echo", {"text": "x"})
            assert len(reply["content"][0]["text"]) > MCP_HTTP_BODY_MAX_BYTES - 100
        _route(p, "tools/call", lambda req: _padded_json(req, MCP_HTTP_BODY_MAX_BYTES + 1))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match=f"longer than {MCP_HTTP_BODY_MAX_BYTES} bytes"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED


def _padded_event(req: Received, size: int) -> bytes:
    base = len(_event(_text_result(req, "")))
    event = _event(_text_result(req, "x" * (size - base)))
    assert len(event) == size
    return _sse_head() + event


@pytest.mark.req("CLI-17")
async def test_an_sse_event_at_the_limit_is_read_and_one_byte_more_closes_the_connection() -> None:
    async with peer() as p:
        _route(p, "tools/call", lambda req: _padded_event(req, MCP_HTTP_SSE_EVENT_MAX_BYTES))
        async with connected(p.url) as conn:
            assert len((await conn.call("echo", {"text": "x"}))["content"][0]["text"]) > 1000
        _route(p, "tools/call", lambda req: _padded_event(req, MCP_HTTP_SSE_EVENT_MAX_BYTES + 1))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match=f"SSE event longer than {MCP_HTTP_SSE_EVENT_MAX_BYTES}"):
                await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-17")
async def test_blank_sse_lines_count_against_the_event_rate() -> None:
    limit = MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX
    async with peer() as p:
        _route(p, "tools/call", lambda req: _sse_head() + b"\n" * (limit - 1) + _event(_text_result(req, "ok")))
        async with connected(p.url) as conn:
            assert (await conn.call("echo", {"text": "x"}))["content"][0]["text"] == "ok"
        _route(p, "tools/call", lambda req: _sse_head() + b"\n" * limit + _event(_text_result(req, "ok")))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match=f"more than {limit} SSE events in one second"):
                await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-17")
async def test_a_session_id_at_the_limit_is_kept_and_one_byte_more_is_refused() -> None:
    async with peer() as p:
        p.session = "s" * MCP_HTTP_SESSION_ID_MAX_BYTES
        async with connected(p.url) as conn:
            assert conn.state is ConnectionState.READY, conn.error
        assert p.calls("tools/list")[0].headers["mcp-session-id"] == p.session
        p.session = "s" * (MCP_HTTP_SESSION_ID_MAX_BYTES + 1)
        async with connected(p.url) as conn:
            assert conn.state is ConnectionState.FAILED
            assert conn.error is not None and f"longer than {MCP_HTTP_SESSION_ID_MAX_BYTES} bytes" in conn.error


@pytest.mark.req("CLI-17")
async def test_an_event_id_at_the_limit_is_read_and_one_byte_more_closes_the_connection() -> None:
    async with peer() as p:
        ok = "e" * MCP_HTTP_EVENT_ID_MAX_BYTES
        _route(p, "tools/call", lambda req: _sse_head() + _event(_text_result(req, "ok"), id=ok))
        async with connected(p.url) as conn:
            assert (await conn.call("echo", {"text": "x"}))["content"][0]["text"] == "ok"
        _route(p, "tools/call", lambda req: _sse_head() + _event(_text_result(req, "ok"), id=ok + "e"))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match=f"event id longer than {MCP_HTTP_EVENT_ID_MAX_BYTES}"):
                await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-17")
async def test_a_reply_header_block_at_the_limit_is_read_and_one_byte_more_closes_the_connection() -> None:
    async with peer() as p:

        def padded(extra: int) -> Any:
            def reply(req: Received) -> bytes:
                body = json.dumps(_text_result(req, "ok")).encode("utf-8")
                head = {"content-type": "application/json", "content-length": str(len(body)), "x-pad": ""}
                size = headers_size({**head, "connection": "close"})
                head["x-pad"] = "p" * (MCP_HTTP_HEADERS_MAX_BYTES - size + extra)
                return http_head(200, head) + body

            return reply

        _route(p, "tools/call", padded(0))
        async with connected(p.url) as conn:
            assert (await conn.call("echo", {"text": "x"}))["content"][0]["text"] == "ok"
        _route(p, "tools/call", padded(1))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match=f"more than {MCP_HTTP_HEADERS_MAX_BYTES} bytes of headers"):
                await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-17")
async def test_the_lifetime_limit_is_shared_by_every_reply() -> None:
    async with peer() as p:
        async with connected(p.url, limits=HttpLimits(lifetime_max_bytes=100_000)) as conn:
            assert conn.state is ConnectionState.READY
            _route(p, "tools/call", lambda req: _padded_json(req, 100_000))
            with pytest.raises(UpstreamServerError, match="more than 100000 bytes"):
                await conn.call("echo", {"text": "x"})


# -- truncation, interruption, expiry (CLI-17, CLI-18) ------------------------------------------------


@pytest.mark.req("CLI-17")
async def test_a_chunked_body_cut_off_mid_event_closes_the_connection() -> None:
    async with peer() as p:

        def cut(req: Received) -> bytes:
            head = http_head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
            part = b'event: message\ndata: {"jsonrpc": "2.0", "id": '
            return head + f"{len(part):x}\r\n".encode() + part + b"\r\n"

        _route(p, "tools/call", cut)
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="interrupted|middle of an event"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED
        _route(p, "tools/call", lambda req: _sse_head() + b'data: {"jsonrpc": "2.0"')
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="ended in the middle of an event"):
                await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-17")
async def test_a_connection_reset_during_an_sse_reply_closes_the_connection() -> None:
    async with peer() as p:

        async def reset(req: Received, stream: anyio.abc.SocketStream) -> None:
            await stream.send(_sse_head() + b": warming up\n\n" + b'data: {"jsonrpc"')
            raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await stream.aclose()

        p.routes["tools/call"] = reset
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="interrupted|middle of an event") as failed:
                await conn.call("echo", {"text": "x"})
            assert "is not retried" in failed.value.message
            assert conn.state is ConnectionState.FAILED
        assert len(p.calls("tools/call")) == 1


@pytest.mark.req("CLI-18")
async def test_a_404_for_the_session_fails_the_call_and_nothing_is_sent_again() -> None:
    async with peer() as p:
        _route(p, "tools/call", http_head(404))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="ended the session \\(HTTP 404\\)"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED
            with pytest.raises(UpstreamServerError, match="start a new task"):
                await conn.call("echo", {"text": "x"})
        assert len(p.calls("tools/call")) == 1
        assert len(p.calls("initialize")) == 1
        assert [r.method for r in p.received].count("GET") <= 1


@pytest.mark.req("CLI-18")
async def test_a_malformed_reply_closes_the_connection_and_nothing_is_repeated() -> None:
    async with peer() as p:
        _route(p, "tools/call", lambda req: json_reply(200, [_text_result(req, "batch")]))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="not a JSON-RPC message"):
                await conn.call("echo", {"text": "x"})
        _route(p, "tools/call", lambda req: json_reply(200, _text_result(req, "x") | {"id": 999}))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="not the response to its request"):
                await conn.call("echo", {"text": "x"})
        _route(p, "tools/call", http_head(200, {"content-type": "text/html"}) + b"<html>")
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="neither JSON nor an event stream"):
                await conn.call("echo", {"text": "x"})
        assert len(p.calls("tools/call")) == 3


# -- concurrency and cleanup (CLI-16, CLI-17) ------------------------------------------------------------


@pytest.mark.req("CLI-17")
async def test_at_most_two_ordinary_requests_are_in_flight() -> None:
    release = anyio.Event()
    async with peer() as p:

        async def slow(req: Received, stream: anyio.abc.SocketStream) -> None:
            await release.wait()
            await stream.send(json_reply(200, _text_result(req, "done")))

        p.routes["tools/call"] = slow
        async with connected(p.url, timeout=20) as conn:
            results: list[str] = []

            async def one() -> None:
                results.append((await conn.call("echo", {"text": "x"}))["content"][0]["text"])

            async with anyio.create_task_group() as tg:
                for _ in range(MCP_HTTP_REQUESTS_MAX + 1):
                    tg.start_soon(one)
                with anyio.fail_after(10):
                    while len(p.calls("tools/call")) < MCP_HTTP_REQUESTS_MAX:
                        await anyio.sleep(0.02)
                await anyio.sleep(0.3)  # the third stays queued while both slots are taken
                assert len(p.calls("tools/call")) == MCP_HTTP_REQUESTS_MAX
                release.set()
            assert results == ["done"] * (MCP_HTTP_REQUESTS_MAX + 1)


@pytest.mark.req("CLI-16")
async def test_the_session_delete_is_bounded_also_after_cancellation() -> None:
    async with peer() as p:
        hang = anyio.Event()

        async def stuck(req: Received, stream: anyio.abc.SocketStream) -> None:
            p.deleted.set()
            await hang.wait()

        async def never(req: Received, stream: anyio.abc.SocketStream) -> None:
            await hang.wait()

        p.routes["DELETE"] = stuck
        p.routes["tools/call"] = never
        conn = Connection(server_id="test:h", endpoint=Endpoint(p.url), timeout_seconds=30)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                await conn.start(tg)
                tg.start_soon(conn.call, "echo", {"text": "x"})
                while not p.calls("tools/call"):
                    await anyio.sleep(0.02)
                started = time.monotonic()
                tg.cancel_scope.cancel()
            elapsed = time.monotonic() - started
        assert p.deleted.is_set()
        assert conn.cleanup == "session delete timed out"
        assert elapsed < MCP_HTTP_SESSION_DELETE_SECONDS + 2
        assert connections_open() == 0
        hang.set()


@pytest.mark.req("CLI-17")
async def test_the_control_channel_holds_its_limit_of_waiting_messages_and_one_more_closes_it() -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification

    from shadowcode.limits import MCP_HTTP_CONTROL_QUEUE_MAX
    from shadowcode.mcp.client.streamable_http import StreamableHttpClient

    release = anyio.Event()
    async with peer() as p:

        async def held(req: Received, stream: anyio.abc.SocketStream) -> None:
            await release.wait()
            await stream.send(http_head(202))

        p.routes["notifications/held"] = held
        client = StreamableHttpClient(Endpoint(p.url), timeout_seconds=5)
        note = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/held"))
        with anyio.fail_after(20):
            async with client as (_read, write):
                await write.send(note)
                while not p.calls("notifications/held"):
                    await anyio.sleep(0.02)
                for _ in range(MCP_HTTP_CONTROL_QUEUE_MAX):
                    await write.send(note)
                assert client.failure is None
                await write.send(note)
                await client.failed.wait()
                release.set()
        assert client.failure == f"more than {MCP_HTTP_CONTROL_QUEUE_MAX} messages waited to be sent"


@pytest.mark.req("CLI-16", "CLI-18")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_call_past_its_deadline_aborts_its_post_and_is_not_repeated(era: str) -> None:
    async with peer() as p:
        if era == "modern":
            _modern(p)
        hang = anyio.Event()

        async def never(req: Received, stream: anyio.abc.SocketStream) -> None:
            await hang.wait()

        p.routes["tools/call"] = never
        tool, args = ("wetter", {"region": "a"}) if era == "modern" else ("echo", {"text": "a"})
        async with connected(p.url, timeout=0.5) as conn:
            with pytest.raises(UpstreamServerError, match="did not finish within 0.5 s; it may have had effects"):
                await conn.call(tool, args)
            assert conn.state is ConnectionState.READY
            if era == "legacy":
                with anyio.fail_after(5):
                    while not p.calls("notifications/cancelled"):
                        await anyio.sleep(0.02)
            second = {"content": [{"type": "text", "text": "second"}], "resultType": "complete"}
            _route(p, "tools/call", lambda req: json_reply(200, result(req, second)))
            assert (await conn.call(tool, args))["content"][0]["text"] == "second"
        hang.set()
        assert len(p.calls("tools/call")) == 2
        assert len(p.calls("notifications/cancelled")) == (1 if era == "legacy" else 0)


@pytest.mark.req("CLI-16", "CLI-17")
async def test_the_get_stream_carries_server_requests_and_is_bounded_like_replies() -> None:
    async with peer() as p:
        sampling = {"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {"messages": []}}
        sampling["params"] |= {"maxTokens": 5}
        _route(p, "GET", _sse_head() + _event(sampling))
        async with connected(p.url) as conn:
            assert conn.state is ConnectionState.READY
            with anyio.fail_after(10):
                while not [r for r in p.received if r.message.get("id") == "s1"]:
                    await anyio.sleep(0.02)
        answer = next(r for r in p.received if r.message.get("id") == "s1").message
        assert "error" in answer and answer["error"]["message"] == "sampling is not offered by this client"
        assert [r.method for r in p.received].count("GET") == 1

        _route(p, "GET", _sse_head() + b"\n" * (MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX + 1))
        async with connected(p.url) as conn:
            with anyio.fail_after(10):
                while conn.state is ConnectionState.READY:
                    await anyio.sleep(0.02)
            assert conn.error is not None and "SSE events in one second" in conn.error


@pytest.mark.req("CLI-17")
async def test_http_connections_share_the_process_wide_connection_limit() -> None:
    from shadowcode.errors import ShadowcodeError
    from shadowcode.limits import MCP_CONNECTIONS_MAX

    async with peer() as p:
        conns: list[Connection] = []
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(MCP_CONNECTIONS_MAX):
                    conn = Connection(server_id="test:h", endpoint=Endpoint(p.url), timeout_seconds=10)
                    conns.append(conn)
                    await conn.start(tg)
                assert connections_open() == MCP_CONNECTIONS_MAX
                extra = Connection(server_id="test:x", endpoint=Endpoint(p.url), timeout_seconds=10)
                with pytest.raises(ShadowcodeError, match=f"{MCP_CONNECTIONS_MAX} MCP connections are already open"):
                    await extra.start(tg)
                for conn in conns:
                    conn.close()
                for conn in conns:
                    await conn.wait_closed()
        assert connections_open() == 0
        assert len(p.calls("initialize")) == MCP_CONNECTIONS_MAX
