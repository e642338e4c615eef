"""The bounded transport of sign-in requests and the loopback callback listener.

Covers CW-08, CLI-11.
"""

from __future__ import annotations

import gzip
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import httpx2
import pytest

from shadowcode.limits import MCP_HTTP_HEADERS_MAX_BYTES, MCP_OAUTH_BODY_MAX_BYTES, MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES
from shadowcode.mcp.client.oauth_callback import CallbackListener
from shadowcode.mcp.client.oauth_http import SignInError, bounded_client, insufficient_scopes

pytestmark = [pytest.mark.anyio, pytest.mark.req("CW-08")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def body_server(size: int) -> AsyncIterator[str]:
    """A loopback server answering every request with ``size`` bytes of JSON-ish body."""

    async def one(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive(65536)
            head = f"HTTP/1.1 200 OK\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n".encode()
            await stream.send(head + b"x" * size)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, one)
        yield f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server"
        tg.cancel_scope.cancel()


async def test_a_reply_of_the_size_limit_is_read_and_one_byte_more_ends_the_sign_in() -> None:
    async with body_server(MCP_OAUTH_BODY_MAX_BYTES) as url, bounded_client(frozenset()) as client:
        with anyio.fail_after(30):
            assert len((await client.get(url)).content) == MCP_OAUTH_BODY_MAX_BYTES
    async with body_server(MCP_OAUTH_BODY_MAX_BYTES + 1) as url, bounded_client(frozenset()) as client:
        with anyio.fail_after(30), pytest.raises(SignInError, match=f"larger than {MCP_OAUTH_BODY_MAX_BYTES} bytes"):
            await client.get(url)


@asynccontextmanager
async def raw_server(reply: bytes) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback server answering every request with ``reply``; yields its URL and the requests' heads."""
    heads: list[bytes] = []

    async def one(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            heads.append(await stream.receive(65536))
            with suppress(anyio.BrokenResourceError, OSError):
                await stream.send(reply)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, one)
        yield f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server", heads
        tg.cancel_scope.cancel()


async def test_a_compressed_reply_is_refused_before_a_byte_is_inflated() -> None:
    body = gzip.compress(gzip.compress(b"{" + b" " * (8 * 1024 * 1024) + b"}"))
    head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip, gzip\r\n"
    reply = (head + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body
    async with raw_server(reply) as (url, heads), bounded_client(frozenset()) as client:
        with anyio.fail_after(30), pytest.raises(SignInError, match="sent a compressed reply during sign-in"):
            await client.get(url)
    assert b"accept-encoding: identity" in heads[0].lower()


@pytest.mark.req("CW-08", "CLI-17")
async def test_a_reply_header_block_past_the_limit_ends_the_sign_in_naming_the_limit() -> None:
    lines = "".join(f"x{i:05d}: {i:09d}\r\n" for i in range(10_000))
    reply = f"HTTP/1.1 200 OK\r\n{lines}content-length: 2\r\nconnection: close\r\n\r\n{{}}".encode()
    async with raw_server(reply) as (url, _), bounded_client(frozenset()) as client:
        with anyio.fail_after(30), pytest.raises(SignInError, match=f"more than {MCP_HTTP_HEADERS_MAX_BYTES} bytes"):
            await client.get(url)


@pytest.mark.req("CW-08", "CLI-11")
async def test_sign_in_requests_follow_the_endpoint_rules() -> None:
    async with bounded_client(frozenset()) as client:
        with pytest.raises(SignInError, match="network permission"):
            await client.get("https://auth.example.com/.well-known/oauth-authorization-server")
        with pytest.raises(SignInError, match="over plain http"):
            await client.get("http://auth.example.com/token")


async def _get(url: str, **headers: str) -> int:
    async with httpx2.AsyncClient(trust_env=False, timeout=10) as client:
        return (await client.get(url, headers=headers)).status_code


async def test_the_callback_listens_on_loopback_and_waits_past_other_requests() -> None:
    async with CallbackListener() as listener:
        assert listener.redirect_uri.startswith("http://127.0.0.1:")
        base = listener.redirect_uri.removesuffix("/callback")
        with anyio.fail_after(30):
            assert await _get(base + "/favicon.ico") == 404
            assert await _get(listener.redirect_uri, **{"x-big": "y" * MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES}) == 431
            assert await _get(listener.redirect_uri + "?nothing=1") == 400
            assert await _get(listener.redirect_uri + "?code=c1&state=s1") == 200
            result = await listener.wait(5)
    assert (result.code, result.state) == ("c1", "s1")


async def test_a_denied_sign_in_and_a_deadline_are_clear_errors() -> None:
    async with CallbackListener() as listener:
        with anyio.fail_after(30):
            assert await _get(listener.redirect_uri + "?error=access_denied&state=s") == 200
            with pytest.raises(SignInError, match="the sign-in was denied"):
                await listener.wait(5)
    async with CallbackListener() as listener:
        with anyio.fail_after(30), pytest.raises(SignInError, match="time ran out.*within 0.2 s"):
            await listener.wait(0.2)


async def test_a_cancelled_sign_in_frees_its_callback_port() -> None:
    with anyio.CancelScope() as scope:
        async with CallbackListener() as listener:
            scope.cancel()
            await anyio.sleep(30)  # cancelled at once: the engine stopping, or the caller going away
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", listener.port))  # EADDRINUSE while the listener's socket is still open


@pytest.mark.parametrize(
    ("challenge", "scopes"),
    [
        (
            'Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="x"',
            ["mcp:basic", "mcp:write"],
        ),
        ('Bearer scope="a", error="insufficient_scope"', ["a"]),
        ('Bearer scope="mcp:basic", resource_metadata="x"', []),
        ('Bearer error="insufficient_scope"', []),
        ('Bearer error="insufficient_scope", scope="ok `rm -rf` x"', []),
        ('Bearer error="insufficient_scope", scope="' + "s " * 17 + '"', []),
    ],
)
def test_insufficient_scope_challenges_name_only_well_formed_scopes(challenge: str, scopes: list[str]) -> None:
    assert insufficient_scopes(challenge) == scopes
