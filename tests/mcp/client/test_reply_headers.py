"""Reply header blocks counted as they arrive, whatever their shape, and compressed replies refused.

Covers CLI-17.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import httpx2
import pytest

from shadowcode.errors import UpstreamServerError
from shadowcode.limits import MCP_HTTP_HEADERS_MAX_BYTES
from shadowcode.mcp.client.connection import Connection, ConnectionState, connections_open
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.reply_headers import HeaderBlockTooLarge, HeaderCounter, headers_size, is_compressed
from tests.support.http_peer import Received, peer, result

pytestmark = [pytest.mark.anyio, pytest.mark.req("CLI-17")]

LIMIT = MCP_HTTP_HEADERS_MAX_BYTES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _block(status: str, lines: list[str]) -> bytes:
    return ("\r\n".join([status, *lines]) + "\r\n\r\n").encode("latin-1")


def _fed(data: bytes, *, step: int = 4096) -> HeaderCounter:
    counter = HeaderCounter(LIMIT)
    for start in range(0, len(data), step):
        counter.feed(data[start : start + step])
    return counter


def test_a_block_whose_names_and_values_make_the_limit_is_counted_whole_and_one_byte_more_is_refused() -> None:
    head = {"content-type": "application/json", "x-pad": ""}
    head["x-pad"] = "p" * (LIMIT - headers_size(head))
    lines = [f"{k}: {v}" for k, v in head.items()]
    counter = _fed(_block("HTTP/1.1 200 OK", lines) + b'{"body": 1}')
    assert counter.done
    with pytest.raises(HeaderBlockTooLarge, match=f"more than {LIMIT} bytes of headers"):
        _fed(_block("HTTP/1.1 200 OK", [*lines, "x: y"]))


@pytest.mark.parametrize(
    "shape",
    [
        [f"h{i}: v" for i in range(10_000)],  # 10,000 short headers, about 120 KiB
        ["a:"] * (LIMIT + 1),  # empty values: one byte each at least
        ["x-pad:" + " " * 90_000 + "v"],  # padding that the value's stripping would hide
    ],
    ids=["ten-thousand-short", "empty-values", "padded-value"],
)
def test_every_shape_past_the_limit_is_refused_before_the_block_ends(shape: list[str]) -> None:
    with pytest.raises(HeaderBlockTooLarge):
        _fed(_block("HTTP/1.1 200 OK", shape))


def test_the_status_line_and_informational_blocks_are_bounded_too() -> None:
    with pytest.raises(HeaderBlockTooLarge):
        _fed(_block("HTTP/1.1 200 " + "X" * LIMIT, []))
    early = _block("HTTP/1.1 103 Early Hints", ["link: </a>; rel=preload"])
    assert _fed(early + _block("HTTP/1.1 200 OK", ["content-length: 0"])).done
    with pytest.raises(HeaderBlockTooLarge):
        _fed(early + _block("HTTP/1.1 200 OK", ["x-pad: " + "p" * LIMIT]))


def test_only_identity_is_not_a_compressed_reply() -> None:
    assert not is_compressed(httpx2.Headers({}))
    assert not is_compressed(httpx2.Headers({"content-encoding": "identity"}))
    assert is_compressed(httpx2.Headers({"content-encoding": "gzip, gzip"}))
    assert is_compressed(httpx2.Headers([("content-encoding", "identity"), ("content-encoding", "br")]))


@asynccontextmanager
async def _connected(url: str) -> AsyncIterator[Connection]:
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            conn = Connection(server_id="test:h", endpoint=Endpoint(url), timeout_seconds=5)
            with suppress(UpstreamServerError):
                await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()
    assert connections_open() == 0


@pytest.mark.parametrize(
    "head",
    [
        # 10,000 short headers: more than h11 buffers (100 KiB) plus one read (64 KiB), so
        # without counting as they arrive the library's own error would come first.
        _block("HTTP/1.1 200 OK", [f"x{i:05d}: {i:09d}" for i in range(10_000)]),
        _block("HTTP/1.1 200 OK", ["x-pad:" + " " * 90_000 + "v"]),
        _block("HTTP/1.1 200 " + "X" * 90_000, []),
    ],
    ids=["ten-thousand-short", "padded-value", "long-status-line"],
)
async def test_a_reply_header_block_of_any_shape_past_the_limit_names_the_limit(head: bytes) -> None:
    async with peer() as p:

        async def flood(req: Received, stream: anyio.abc.SocketStream) -> None:
            body = json.dumps(result(req, {"content": [{"type": "text", "text": "ok"}]})).encode()
            with suppress(anyio.BrokenResourceError, OSError):
                await stream.send(head.removesuffix(b"\r\n") + f"content-length: {len(body)}\r\n\r\n".encode() + body)

        p.routes["tools/call"] = flood
        async with _connected(p.url) as conn:
            assert conn.state is ConnectionState.READY, conn.error
            with pytest.raises(UpstreamServerError, match=f"the server sent more than {LIMIT} bytes of headers"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED
        assert len(p.calls("tools/call")) == 1
