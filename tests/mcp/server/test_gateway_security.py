"""Hostile requests against the HTTP gateway's front: each bad input of the gateway contract is refused.

The front (``GatewayServer``) runs in process on 127.0.0.1 with a small ASGI app behind it
that records what reaches it; raw sockets play the hostile peer. Start-up refusals (bind
address, token) are checked on the parsing functions and on the real command.
Covers GW-01, GW-03, GW-04, GW-05, GW-07.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp.server.lowlevel import Server

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.errors import ConfigError, UsageError
from shadowcode.limits import (
    GATEWAY_CONNECTIONS_MAX,
    GATEWAY_HEADER_DEADLINE_SECONDS,
    GATEWAY_REQUEST_MAX_BYTES,
    GATEWAY_REQUESTS_PER_SECOND_MAX,
    GATEWAY_RESPONSE_MAX_BYTES,
    GATEWAY_TOKEN_MAX_CHARS,
    GATEWAY_TOKEN_MIN_CHARS,
)
from shadowcode.mcp.server.app import build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS, DirectToolCalls
from shadowcode.mcp.server.gateway import check_token, parse_bind
from shadowcode.mcp.server.stdio import decode_frame
from shadowcode.mcp.server.streamable_http import GatewayLimits, GatewayServer, build_mcp_app
from tests.support.stdio_peer import count_direct_claims

pytestmark = pytest.mark.anyio

TOKEN = "Gw-fixed.test_token~0123456789abcdefABCDEF"
"""A fixed token so parametrized test ids are the same in every worker."""
WAIT_SECONDS = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Recorder:
    """An ASGI app that answers ``{"ok": true}`` and keeps the scopes and bodies it saw."""

    scopes: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    reply: bytes = b'{"ok": true}'
    stall: bool = False

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[..., Any]) -> None:
        self.scopes.append(scope)
        message = await receive()
        self.bodies.append(message["body"])
        if self.stall:
            await anyio.sleep_forever()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": self.reply, "more_body": False})


@dataclass
class Front:
    port: int
    app: Recorder
    server: GatewayServer


@asynccontextmanager
async def front(
    limits: GatewayLimits | None = None,
    clock: Callable[[], float] = time.monotonic,
    app: Recorder | None = None,
    direct: DirectToolCalls | None = None,
) -> AsyncIterator[Front]:
    """The gateway's front on 127.0.0.1 with a free port, stopped when the block ends."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    recorder = app or Recorder()
    server = GatewayServer(
        recorder, token=TOKEN.encode(), bound_host="127.0.0.1", port=port, limits=limits, clock=clock, direct=direct
    )
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(server.serve, listener)
        try:
            yield Front(port, recorder, server)
        finally:
            tg.cancel_scope.cancel()


def request(
    port: int,
    *,
    method: str = "POST",
    target: str = "/mcp",
    host: str | None = None,
    token: str | None = TOKEN,
    body: bytes = b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
    extra: tuple[tuple[str, str], ...] = (),
) -> bytes:
    """A raw HTTP/1.1 request; ``host`` defaults to the gateway's own address."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host if host is not None else f'127.0.0.1:{port}'}"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_all(stream: anyio.abc.SocketStream) -> bytes:
    data = bytearray()
    with anyio.fail_after(WAIT_SECONDS):
        while True:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return bytes(data)


def status_of(raw: bytes) -> int:
    assert raw.startswith(b"HTTP/1.1 "), raw[:80]
    return int(raw.split(b" ", 2)[1])


async def exchange(port: int, raw: bytes) -> tuple[int, bytes]:
    """Send ``raw`` on a fresh connection; returns the status and the whole answer."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(raw)
        answer = await read_all(stream)
    return status_of(answer), answer


# --- tokens and binds (start-up) ----------------------------------------------------------


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("length", [GATEWAY_TOKEN_MIN_CHARS, GATEWAY_TOKEN_MAX_CHARS])
def test_tokens_of_32_and_512_characters_are_accepted(length: int) -> None:
    assert check_token("a" * length, "T") == b"a" * length


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("length", [GATEWAY_TOKEN_MIN_CHARS - 1, GATEWAY_TOKEN_MAX_CHARS + 1])
def test_tokens_of_31_and_513_characters_are_refused_without_echo(length: int) -> None:
    value = "b" * length
    with pytest.raises(ConfigError) as caught:
        check_token(value, "T")
    assert value not in caught.value.message


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("value", ["a" * 31 + " ", "é" * 40, "a" * 32 + "\n", "ab=cd" * 8, "a" * 40 + '"'])
def test_tokens_with_characters_outside_the_bearer_alphabet_are_refused(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_token(value, "T")
    assert value not in caught.value.message


@pytest.mark.req("GW-01")
def test_a_missing_token_is_refused_and_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="SHADOW_MCP_HTTP_TOKEN"):
        check_token(None, "SHADOW_MCP_HTTP_TOKEN")


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("bind", ["127.0.0.1:0", "127.0.0.1:8765", "127.5.6.7:65535", "[::1]:0"])
def test_loopback_ip_binds_are_accepted(bind: str) -> None:
    address = parse_bind(bind)
    assert address.url().endswith("/mcp")


@pytest.mark.req("GW-03")
@pytest.mark.parametrize(
    "bind",
    [
        "0.0.0.0:8765",
        "[::]:8765",
        "192.168.1.10:8765",
        "10.0.0.1:8765",
        "localhost:8765",
        "example.com:8765",
        "::1:8765",
        "[::ffff:127.0.0.1]:8765",
        "127.0.0.1:65536",
        "127.0.0.1",
        "127.0.0.1:-1",
    ],
)
def test_binds_to_any_lan_hostname_or_malformed_addresses_are_refused(bind: str) -> None:
    with pytest.raises(UsageError):
        parse_bind(bind)


def _serve(
    home: Path, project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", *args],
        env={**os.environ, "SHADOWCODE_HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("bind", ["0.0.0.0:0", "192.168.1.10:0", "localhost:0"])
def test_the_command_refuses_a_non_loopback_bind_with_exit_2(home: Path, project_dir: Path, bind: str) -> None:
    done = _serve(home, project_dir, "--http", bind, "--token-env", "GW_TOKEN", env={"GW_TOKEN": TOKEN})
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "loopback" in done.stderr


@pytest.mark.req("GW-01")
def test_a_token_on_the_command_line_is_refused_and_not_echoed(home: Path, project_dir: Path) -> None:
    value = secrets.token_hex(20)
    done = _serve(home, project_dir, "--http", "127.0.0.1:0", "--token", value)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "--token-env" in done.stderr
    assert value not in done.stderr


@pytest.mark.req("GW-03")
@pytest.mark.parametrize("value", ["s" * (GATEWAY_TOKEN_MIN_CHARS - 1), "s" * (GATEWAY_TOKEN_MAX_CHARS + 1)])
def test_the_command_refuses_a_short_or_long_token_without_showing_it(
    home: Path, project_dir: Path, value: str
) -> None:
    done = _serve(home, project_dir, "--http", "127.0.0.1:0", "--token-env", "GW_TOKEN", env={"GW_TOKEN": value})
    assert done.returncode == 2
    assert done.stdout == ""
    assert value not in done.stderr
    assert "characters" in done.stderr


@pytest.mark.req("GW-01")
def test_the_command_needs_token_env_with_http(home: Path, project_dir: Path) -> None:
    done = _serve(home, project_dir, "--http", "127.0.0.1:0")
    assert done.returncode == 2
    assert "--token-env" in done.stderr


# --- authentication ------------------------------------------------------------------------


@pytest.mark.req("GW-03", "GW-04")
async def test_a_request_with_the_token_reaches_the_app_without_its_authorization_header() -> None:
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port))
        assert status == 200
        assert answer.endswith(b'{"ok": true}')
        assert b"connection: close" in answer.lower()
        names = [name for name, _ in f.app.scopes[0]["headers"]]
        assert b"authorization" not in names
        assert f.app.scopes[0]["query_string"] == b""


@pytest.mark.req("GW-03")
@pytest.mark.parametrize(
    "token",
    [None, "x" * len(TOKEN), TOKEN[:-1], TOKEN + "a", TOKEN[: GATEWAY_TOKEN_MIN_CHARS - 1], "t" * 513, TOKEN + "é"],
    ids=["missing", "wrong", "one_short", "one_long", "short_31", "long_513", "non_token_char"],
)
async def test_missing_wrong_short_long_and_odd_tokens_are_answered_401(token: str | None) -> None:
    async with front() as f:
        raw = request(f.port, token=None)
        if token is not None:
            raw = raw.replace(b"\r\n\r\n", f"\r\nAuthorization: Bearer {token}\r\n\r\n".encode(), 1)
        status, answer = await exchange(f.port, raw)
        assert status == 401
        assert b"www-authenticate: bearer" in answer.lower()
        if token:
            assert token.encode("utf-8") not in answer
        assert f.app.scopes == []


@pytest.mark.req("GW-03")
async def test_another_scheme_and_a_doubled_authorization_header_are_answered_401() -> None:
    async with front() as f:
        basic = request(f.port, token=None, extra=(("Authorization", f"Basic {TOKEN}"),))
        assert (await exchange(f.port, basic))[0] == 401
        doubled = request(f.port, extra=(("Authorization", f"Bearer {TOKEN}"),))
        assert (await exchange(f.port, doubled))[0] == 401
        assert f.app.scopes == []


@pytest.mark.req("GW-04")
async def test_a_token_in_the_query_string_is_refused() -> None:
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port, target=f"/mcp?access_token={TOKEN}", token=None))
        assert status == 400
        assert TOKEN.encode() not in answer
        status, _ = await exchange(f.port, request(f.port, target="/mcp?x=1"))
        assert status == 400
        assert f.app.scopes == []


# --- Host, Origin, metadata headers ---------------------------------------------------------


@pytest.mark.req("GW-04")
@pytest.mark.parametrize(
    "host", ["evil.example", "127.0.0.1:{other}", "localhost.evil:{port}", "127.0.0.1", "[::1]:{port}"]
)
async def test_a_host_other_than_the_bound_ip_or_localhost_with_the_port_is_answered_421(host: str) -> None:
    async with front() as f:
        value = host.format(port=f.port, other=f.port + 1 if f.port < 65535 else f.port - 1)
        status, answer = await exchange(f.port, request(f.port, host=value))
        assert status == 421
        assert value.encode() not in answer
        assert f.app.scopes == []


@pytest.mark.req("GW-04")
@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
async def test_the_bound_ip_and_localhost_with_the_port_are_accepted_as_host(host: str) -> None:
    async with front() as f:
        status, _ = await exchange(f.port, request(f.port, host=host.format(port=f.port)))
        assert status == 200


@pytest.mark.req("GW-04")
@pytest.mark.parametrize(
    "origin", ["null", "http://127.0.0.1:{port}", "http://localhost:{port}", "https://evil.example"]
)
async def test_any_origin_header_is_answered_403(origin: str) -> None:
    async with front() as f:
        value = origin.format(port=f.port)
        status, answer = await exchange(f.port, request(f.port, extra=(("Origin", value),)))
        assert status == 403
        assert value.encode() not in answer
        assert f.app.scopes == []


@pytest.mark.req("GW-04")
@pytest.mark.parametrize(
    "name", ["MCP-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Mcp-Param-Path", "Content-Type"]
)
async def test_a_duplicated_mcp_metadata_header_is_answered_400(name: str) -> None:
    async with front() as f:
        raw = request(f.port, extra=((name, "2025-11-25"), (name, "2026-07-28")))
        status, _ = await exchange(f.port, raw)
        assert status == 400
        assert f.app.scopes == []


def _content_length_twice(body: bytes, framing: str) -> tuple[bytes, bytes]:
    """The Content-Length line of a request for ``body`` and what replaces it to send the length twice."""
    line = f"Content-Length: {len(body)}\r\n".encode()
    doubled = {
        "identical": line + line,
        "identical, other case": line + line.lower(),
        "identical, as a list": f"Content-Length: {len(body)}, {len(body)}\r\n".encode(),
        "different": line + f"Content-Length: {len(body) + 1}\r\n".encode(),
    }[framing]
    return line, doubled


@pytest.mark.req("GW-04", "GW-07")
@pytest.mark.parametrize("framing", ["identical", "identical, other case", "identical, as a list", "different"])
async def test_a_duplicated_content_length_is_answered_400_even_with_identical_values(framing: str) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    line, doubled = _content_length_twice(body, framing)
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port, body=body).replace(line, doubled))
        assert status == 400
        assert f.app.scopes == []
        if framing != "different":  # two different lengths never parse; the others meet the duplicate rule
            other = request(f.port, body=body, extra=(("Content-Type", "application/json"),))
            _, duplicate_type = await exchange(f.port, other)
            assert answer.partition(b"\r\n\r\n")[2] == duplicate_type.partition(b"\r\n\r\n")[2]


@pytest.mark.req("GW-04")
async def test_a_missing_or_doubled_host_header_is_answered_400() -> None:
    async with front() as f:
        raw = request(f.port).replace(f"Host: 127.0.0.1:{f.port}\r\n".encode(), b"")
        assert (await exchange(f.port, raw))[0] == 400
        raw = request(f.port, extra=(("Host", f"127.0.0.1:{f.port}"),))
        assert (await exchange(f.port, raw))[0] == 400


# --- paths and methods ------------------------------------------------------------------------


@pytest.mark.req("GW-05")
@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "OPTIONS"])
async def test_methods_other_than_post_are_answered_405(method: str) -> None:
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port, method=method, body=b""))
        assert status == 405
        assert b"allow: post" in answer.lower()
        assert f.app.scopes == []


@pytest.mark.req("GW-05")
@pytest.mark.parametrize("target", ["/sse", "/messages", "/messages/", "/mcp/", "/", "/MCP"])
async def test_legacy_sse_endpoints_and_other_paths_are_answered_404(target: str) -> None:
    async with front() as f:
        status, _ = await exchange(f.port, request(f.port, target=target))
        assert status == 404
        assert f.app.scopes == []


# --- body size ----------------------------------------------------------------------------------


def _padded(size: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"'
    tail = b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


@pytest.mark.req("GW-07")
async def test_a_body_of_exactly_one_mib_is_accepted() -> None:
    async with front() as f:
        status, _ = await exchange(f.port, request(f.port, body=_padded(GATEWAY_REQUEST_MAX_BYTES)))
        assert status == 200
        assert len(f.app.bodies[0]) == GATEWAY_REQUEST_MAX_BYTES


@pytest.mark.req("GW-07")
async def test_a_body_of_one_mib_and_one_byte_is_answered_413() -> None:
    async with front() as f:
        status, _ = await exchange(f.port, request(f.port, body=_padded(GATEWAY_REQUEST_MAX_BYTES + 1)))
        assert status == 413
        assert f.app.scopes == []


def _chunked(port: int, chunks: list[bytes]) -> bytes:
    head = request(port, body=b"").replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
    return head + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


@pytest.mark.req("GW-07")
async def test_a_chunked_body_up_to_one_mib_is_accepted_and_one_growing_past_it_is_answered_413() -> None:
    piece = 64 * 1024
    async with front() as f:
        fits = [b"x" * piece] * (GATEWAY_REQUEST_MAX_BYTES // piece)
        status, _ = await exchange(f.port, _chunked(f.port, fits))
        assert status == 200
        assert len(f.app.bodies[0]) == GATEWAY_REQUEST_MAX_BYTES
        status, _ = await exchange(f.port, _chunked(f.port, [*fits, b"y"]))
        assert status == 413
        assert len(f.app.scopes) == 1


# --- deadlines ------------------------------------------------------------------------------------


async def _trickle(port: int, raw: bytes, pause: float) -> tuple[int, float]:
    """Send ``raw`` one byte per ``pause`` seconds until the gateway answers; returns status and elapsed time."""
    started = time.monotonic()
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        answer = bytearray()

        async def reader(scope: anyio.CancelScope) -> None:
            answer.extend(await read_all(stream))
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader, tg.cancel_scope)
            with anyio.fail_after(WAIT_SECONDS * 2):
                for byte in raw:
                    try:
                        await stream.send(bytes([byte]))
                    except (anyio.BrokenResourceError, OSError):
                        break
                    await anyio.sleep(pause)
                await anyio.sleep_forever()
    return status_of(bytes(answer)), time.monotonic() - started


@pytest.mark.req("GW-07")
async def test_headers_sent_one_byte_a_second_are_cut_off_at_five_seconds_with_408() -> None:
    async with front() as f:
        status, elapsed = await _trickle(f.port, request(f.port), 1.0)
        assert status == 408
        assert GATEWAY_HEADER_DEADLINE_SECONDS - 0.5 <= elapsed < GATEWAY_HEADER_DEADLINE_SECONDS + 2.5
        assert f.app.scopes == []


@pytest.mark.req("GW-07")
async def test_a_head_that_completes_within_the_deadline_is_served_and_a_slower_one_is_not() -> None:
    limits = GatewayLimits(header_deadline_seconds=1.5)
    async with front(limits) as f:
        raw = request(f.port)
        head = raw[: raw.index(b"\r\n\r\n") + 4]
        async with await anyio.connect_tcp("127.0.0.1", f.port) as stream:
            for part in (head[:10], head[10:40], head[40:], raw[len(head) :]):
                await stream.send(part)
                await anyio.sleep(0.2)
            assert status_of(await read_all(stream)) == 200
        status, elapsed = await _trickle(f.port, head, 0.1)
        assert status == 408
        assert elapsed < 1.5 + 1.5


@pytest.mark.req("GW-07")
async def test_a_body_that_stalls_past_its_deadline_is_answered_408() -> None:
    limits = GatewayLimits(body_deadline_seconds=0.5)
    async with front(limits) as f:
        raw = request(f.port, body=b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        async with await anyio.connect_tcp("127.0.0.1", f.port) as stream:
            await stream.send(raw[:-5])
            assert status_of(await read_all(stream)) == 408
        assert f.app.scopes == []


@pytest.mark.req("GW-07")
async def test_a_request_that_outlives_its_deadline_is_answered_504() -> None:
    limits = GatewayLimits(request_deadline_seconds=0.5)
    async with front(limits, app=Recorder(stall=True)) as f:
        status, _ = await exchange(f.port, request(f.port))
        assert status == 504


# --- connections and request rate -------------------------------------------------------------------


@pytest.mark.req("GW-07")
async def test_the_33rd_simultaneous_connection_is_answered_429_and_a_freed_slot_is_served() -> None:
    async with front() as f:
        held: list[anyio.abc.SocketStream] = []
        try:
            for _ in range(GATEWAY_CONNECTIONS_MAX):
                held.append(await anyio.connect_tcp("127.0.0.1", f.port))
            with anyio.fail_after(WAIT_SECONDS):
                while f.server.connections < GATEWAY_CONNECTIONS_MAX:
                    await anyio.sleep(0.01)
            status, _ = await exchange(f.port, request(f.port))
            assert status == 429
            last = held.pop()
            await last.send(request(f.port))
            assert status_of(await read_all(last)) == 200
            await last.aclose()
        finally:
            for stream in held:
                await stream.aclose()


@pytest.mark.req("GW-07")
async def test_the_129th_request_in_one_second_is_answered_429() -> None:
    now = [1000.0]
    async with front(clock=lambda: now[0]) as f:
        for _ in range(GATEWAY_REQUESTS_PER_SECOND_MAX):
            assert (await exchange(f.port, request(f.port)))[0] == 200
        assert (await exchange(f.port, request(f.port)))[0] == 429
        now[0] += 1.0
        assert (await exchange(f.port, request(f.port)))[0] == 200
        assert len(f.app.scopes) == GATEWAY_REQUESTS_PER_SECOND_MAX + 1


# --- responses ----------------------------------------------------------------------------------------


@pytest.mark.req("GW-07")
async def test_a_response_of_eight_mib_is_sent_and_one_byte_more_is_replaced_by_500() -> None:
    async with front(app=Recorder(reply=b"r" * GATEWAY_RESPONSE_MAX_BYTES)) as f:
        status, answer = await exchange(f.port, request(f.port))
        assert status == 200
        assert answer.endswith(b"r" * 1024)
    async with front(app=Recorder(reply=b"r" * (GATEWAY_RESPONSE_MAX_BYTES + 1))) as f:
        status, answer = await exchange(f.port, request(f.port))
        assert status == 500
        assert len(answer) < 1024


_UNUSABLE_IDS = ["null", "true", "false", "1.5", "1.0", '{"a":1}', "[1]"]


def _with_id(request_id: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % request_id.encode()


def _payload(answer: bytes) -> Any:
    return json.loads(answer.partition(b"\r\n\r\n")[2])


@pytest.mark.req("GW-05", "SRV-01")
@pytest.mark.parametrize("request_id", _UNUSABLE_IDS)
async def test_a_request_whose_id_is_not_a_string_or_integer_gets_stdios_invalid_request_error(
    request_id: str,
) -> None:
    body = _with_id(request_id)
    _, stdio_error = decode_frame(body)
    assert stdio_error is not None and stdio_error.error.code == -32600
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port, body=body))
        assert status == 400
        assert b"content-type: application/json" in answer.lower()
        assert _payload(answer) == stdio_error.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert f.app.scopes == []


@pytest.mark.req("GW-05", "SRV-01")
@pytest.mark.parametrize("body", [b"[]", b' [{"jsonrpc":"2.0","id":1,"method":"ping"}]'])
async def test_a_batch_gets_one_invalid_request_error_and_never_reaches_the_sdk(body: bytes) -> None:
    async with front() as f:
        status, answer = await exchange(f.port, request(f.port, body=body))
        assert status == 400
        error = _payload(answer)
        assert error["id"] is None and error["error"]["code"] == -32600
        assert "no batch" in error["error"]["message"]
        assert f.app.scopes == []


@asynccontextmanager
async def mcp_front() -> AsyncIterator[int]:
    """The front with the SDK's own Streamable HTTP handler behind it (a bare server); yields the port."""
    manager = build_mcp_app(Server("gateway-test"))
    async with manager.run(), front(app=manager.handle_request) as f:  # type: ignore[arg-type]
        yield f.port


def _mcp_request(port: int, body: bytes) -> bytes:
    accept = (("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", "2025-06-18"))
    return request(port, body=body, extra=accept)


@pytest.mark.req("GW-05", "SRV-01")
async def test_the_sdk_never_takes_a_request_with_an_unusable_id_for_a_notification() -> None:
    async with mcp_front() as port:
        for request_id in _UNUSABLE_IDS:
            status, answer = await exchange(port, _mcp_request(port, _with_id(request_id)))
            assert status == 400, (request_id, answer)
            assert _payload(answer)["error"]["code"] == -32600, request_id
        status, answer = await exchange(port, _mcp_request(port, _with_id('"s"')))
        assert (status, _payload(answer)["id"]) == (200, "s")
        notification = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        assert (await exchange(port, _mcp_request(port, notification)))[0] == 202


_STATUS_CALL = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shadow_status","arguments":{}}}'
_JSON_AND_SSE = ("Accept", "application/json, text/event-stream")
_DIRECT_CASES: list[tuple[bytes, tuple[tuple[str, str], ...]]] = [
    *((_STATUS_CALL, (_JSON_AND_SSE, ("MCP-Protocol-Version", v))) for v in sorted(HANDSHAKE_REVISIONS)),
    (_STATUS_CALL, (("Accept", "*/*"), ("MCP-Protocol-Version", "2025-06-18"))),
    (
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"shadow_sessions","arguments":{"limit":"x"}}}',
        (_JSON_AND_SSE, ("MCP-Protocol-Version", "2025-06-18")),
    ),
    (
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shadow_nope"}}',
        (_JSON_AND_SSE, ("MCP-Protocol-Version", "2025-06-18")),
    ),
    (_STATUS_CALL, (("Accept", "text/event-stream"), ("MCP-Protocol-Version", "2025-06-18"))),  # 406
    (_STATUS_CALL, (_JSON_AND_SSE,)),  # no revision header: the SDK's default
    (_STATUS_CALL, (_JSON_AND_SSE, ("MCP-Protocol-Version", "2025-06-18"), ("MCP-Protocol-Version", "2024-11-05"))),
]


@asynccontextmanager
async def shadowcode_front(api: LocalEngine, project_dir: Path, *, direct: bool) -> AsyncIterator[int]:
    """The front with ShadowCode's own server behind it, with or without the direct tool-call path; yields the port."""
    ctx = ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access(), owner_kind="gateway")
    server, calls = build_session(ctx)
    manager = build_mcp_app(server)
    async with manager.run(), front(app=manager.handle_request, direct=calls if direct else None) as f:  # type: ignore[arg-type]
        yield f.port


async def _answers(api: LocalEngine, project_dir: Path, *, direct: bool) -> list[tuple[int, bytes, Any]]:
    answers = []
    async with shadowcode_front(api, project_dir, direct=direct) as port:
        for body, headers in _DIRECT_CASES:
            status, answer = await exchange(port, request(port, body=body, extra=headers))
            head, _, payload = answer.partition(b"\r\n\r\n")
            content_type = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-type:")]
            try:
                document: Any = json.loads(payload)
            except ValueError:
                document = payload  # a refusal's fixed text
            answers.append((status, b"".join(content_type), document))
    return answers


@pytest.mark.req("GW-05")
async def test_the_gateway_answers_tool_calls_beside_the_sdk_exactly_as_the_sdk_does(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_sdk = await _answers(api, project_dir, direct=False)
    taken = count_direct_claims(monkeypatch, "take_stateless")
    direct = await _answers(api, project_dir, direct=True)
    assert taken == [3] * (len(HANDSHAKE_REVISIONS) + 1) + ["a"]  # the rest went to the SDK
    assert direct == through_sdk
    assert through_sdk[0][0] == 200 and through_sdk[0][2]["result"]["isError"] is False
    assert [status for status, _, _ in through_sdk][-3:-1] == [406, 200]


@pytest.mark.req("GW-04")
async def test_refusals_carry_fixed_text_bodies() -> None:
    async with front() as f:
        _, answer = await exchange(f.port, request(f.port, target="/<script>", extra=(("X-Echo", "canary-123"),)))
        assert b"canary-123" not in answer
        assert b"<script>" not in answer
        body = answer.split(b"\r\n\r\n", 1)[1]
        with pytest.raises(ValueError):
            json.loads(body)


# --- stopping -----------------------------------------------------------------------------------------


@dataclass
class Blocker(Recorder):
    """A Recorder whose calls block until cancelled, noting each cancellation."""

    started: anyio.Event = field(default_factory=anyio.Event)
    cancelled: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[..., Any]) -> None:
        self.scopes.append(scope)
        await receive()
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


@pytest.mark.req("GW-07", "GW-08")
async def test_stopping_closes_idle_and_busy_connections_and_cancels_running_calls() -> None:
    app = Blocker()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    server = GatewayServer(app, token=TOKEN.encode(), bound_host="127.0.0.1", port=port)
    with anyio.fail_after(WAIT_SECONDS):  # the whole stop, closing included, is bounded
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(server.serve, listener)
            idle = await anyio.connect_tcp("127.0.0.1", port)
            busy = await anyio.connect_tcp("127.0.0.1", port)
            await busy.send(request(port))
            await app.started.wait()
            tg.cancel_scope.cancel()
    async with idle, busy:
        assert await read_all(idle) == b""  # closed without an answer
        assert await read_all(busy) == b""
    assert app.cancelled == 1
    assert server.connections == 0
    with pytest.raises(OSError):
        await anyio.connect_tcp("127.0.0.1", port)  # nothing listens any more
