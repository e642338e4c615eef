"""Event-stream answers through the gateway's front: listen streams and call progress (GW-05, GW-07, SRV-27, SRV-28).

The front (``GatewayServer``) runs in process with ShadowCode's server behind the SDK's two
handlers (JSON, and SSE for progress), as ``mcp serve --http`` builds them; raw sockets read
what arrives and when.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.limits import GATEWAY_LISTEN_SECONDS, GATEWAY_REQUEST_DEADLINE_SECONDS, PROGRESS_INTERVAL_SECONDS
from shadowcode.mcp.server import tools
from shadowcode.mcp.server.app import build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.streamable_http import GatewayLimits, GatewayServer, build_mcp_app
from tests.mcp.server.wire import modern_meta

pytestmark = pytest.mark.anyio

TOKEN = "Gw-streams.test_token~0123456789abcdefABCDEF"
WAIT_SECONDS = 15.0
SSE_ACCEPT = "application/json, text/event-stream"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclasses.dataclass
class Gateway:
    port: int
    server: GatewayServer
    live: Any  # the connection's listen streams, to see them open and close


@asynccontextmanager
async def gateway(
    api: LocalEngine, project_dir: Path, *, listen_seconds: float = GATEWAY_LISTEN_SECONDS, limits: Any = None
) -> AsyncIterator[Gateway]:
    root = api.state.project_at(project_dir).path
    ctx = ServerContext(api=api, root=root, access=Access(), owner_kind="gateway")
    server, direct = build_session(ctx, listen_seconds=listen_seconds)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    json_manager, sse_manager = build_mcp_app(server), build_mcp_app(server, json_response=False)
    front = GatewayServer(
        json_manager.handle_request,
        token=TOKEN.encode(),
        bound_host="127.0.0.1",
        port=port,
        limits=limits,
        direct=direct,
        stream_app=sse_manager.handle_request,
    )
    live = server.get_request_handler("subscriptions/listen").handler.__self__  # type: ignore[union-attr]
    async with json_manager.run(), sse_manager.run(), listener, anyio.create_task_group() as tg:
        tg.start_soon(front.serve, listener)
        try:
            yield Gateway(port, front, live)
        finally:
            tg.cancel_scope.cancel()


def post(port: int, message: dict[str, Any], *, accept: str = SSE_ACCEPT) -> bytes:
    body = json.dumps(message).encode()
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Authorization: Bearer {TOKEN}",
        "Content-Type: application/json",
        f"Accept: {accept}",
        "MCP-Protocol-Version: 2026-07-28",
        f"Mcp-Method: {message['method']}",
        f"Content-Length: {len(body)}",
    ]
    if message["method"] == "tools/call":
        lines.append(f"Mcp-Name: {message['params']['name']}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Reader:
    """Reads one streamed answer: its head, then SSE data frames as they arrive."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.head = b""
        self.ended = False

    async def _more(self) -> None:
        try:
            self.buffer += await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
            self.ended = True

    async def read_head(self) -> bytes:
        with anyio.fail_after(WAIT_SECONDS):
            while b"\r\n\r\n" not in self.buffer and not self.ended:
                await self._more()
        self.head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        return self.head

    async def event(self) -> dict[str, Any] | None:
        """The next SSE ``data:`` frame, or None once the connection ended."""
        with anyio.fail_after(WAIT_SECONDS):
            while True:
                if b"\r\n\r\n" in self.buffer:
                    block, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
                    data = [line[5:].strip() for line in block.split(b"\r\n") if line.startswith(b"data:")]
                    if data:
                        return json.loads(b"".join(data))  # type: ignore[no-any-return]
                    continue
                if self.ended:
                    return None
                await self._more()


@pytest.mark.req("SRV-27", "GW-05", "GW-07")
async def test_a_listen_stream_arrives_as_it_happens_and_ends_gracefully_within_the_deadline(
    api: LocalEngine, project_dir: Path
) -> None:
    assert GATEWAY_LISTEN_SECONDS < GATEWAY_REQUEST_DEADLINE_SECONDS  # a stream ends before the gateway cuts it
    async with gateway(api, project_dir, listen_seconds=1.0) as gw:
        async with await anyio.connect_tcp("127.0.0.1", gw.port) as sock:
            listen = {"jsonrpc": "2.0", "id": 11, "method": "subscriptions/listen"}
            params = {"notifications": {"resourcesListChanged": True}, "_meta": modern_meta()}
            await sock.send(post(gw.port, listen | {"params": params}))
            reader = Reader(sock)
            head = await reader.read_head()
            start = anyio.current_time()
            ack = await reader.event()
            acked_after = anyio.current_time() - start
            final = await reader.event()
            assert await reader.event() is None
    assert head.startswith(b"HTTP/1.1 200") and b"content-type: text/event-stream" in head.lower()
    assert b"content-length" not in head.lower() and b"connection: close" in head.lower()
    assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged"
    assert acked_after < 0.9  # it came at once, not with the end of the stream
    assert final is not None and final["id"] == 11
    assert final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 11


@pytest.mark.req("SRV-27", "GW-08")
async def test_a_listen_stream_ends_when_its_client_goes_away(api: LocalEngine, project_dir: Path) -> None:
    async with gateway(api, project_dir) as gw:
        sock = await anyio.connect_tcp("127.0.0.1", gw.port)
        listen = {"jsonrpc": "2.0", "id": 12, "method": "subscriptions/listen"}
        await sock.send(post(gw.port, listen | {"params": {"notifications": {}, "_meta": modern_meta()}}))
        reader = Reader(sock)
        await reader.read_head()
        assert (await reader.event() or {}).get("method") == "notifications/subscriptions/acknowledged"
        assert gw.live.open_streams == 1
        await sock.aclose()
        with anyio.fail_after(WAIT_SECONDS):
            while gw.live.open_streams or gw.server.connections:
                await anyio.sleep(0.02)


@pytest.mark.req("SRV-27", "GW-07")
async def test_a_stream_past_the_response_limit_is_cut_at_the_limit(api: LocalEngine, project_dir: Path) -> None:
    limits = GatewayLimits(response_max_bytes=600)
    async with gateway(api, project_dir, limits=limits) as gw:
        async with await anyio.connect_tcp("127.0.0.1", gw.port) as sock:
            listen = {"jsonrpc": "2.0", "id": 13, "method": "subscriptions/listen"}
            params = {"notifications": {"resourceSubscriptions": ["x" * 700]}, "_meta": modern_meta()}
            await sock.send(post(gw.port, listen | {"params": params}))
            reader = Reader(sock)
            await reader.read_head()
            assert await reader.event() is None  # the acknowledgement alone is over the limit: cut
            assert len(reader.buffer) <= limits.response_max_bytes


@pytest.fixture
def slow_status(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tools.tool_named("shadow_status")
    assert spec is not None

    async def slow(ctx: ServerContext, args: Any) -> dict[str, Any]:
        await anyio.sleep(PROGRESS_INTERVAL_SECONDS * 1.6)
        return {"slow": True}

    monkeypatch.setitem(tools._BY_NAME, "shadow_status", dataclasses.replace(spec, handler=slow))


async def _call_status(port: int, meta: dict[str, Any], accept: str, request_id: int) -> tuple[bytes, list[Any]]:
    call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    params = {"name": "shadow_status", "arguments": {}, "_meta": meta}
    async with await anyio.connect_tcp("127.0.0.1", port) as sock:
        await sock.send(post(port, call | {"params": params}, accept=accept))
        reader = Reader(sock)
        head = await reader.read_head()
        if b"text/event-stream" not in head.lower():
            with anyio.fail_after(WAIT_SECONDS):
                while not reader.ended:
                    await reader._more()
            return head, [json.loads(reader.buffer)]
        frames: list[Any] = []
        while (frame := await reader.event()) is not None:
            frames.append(frame)
        return head, frames


@pytest.mark.req("SRV-28", "GW-05")
async def test_a_slow_call_with_a_progress_token_streams_its_progress_and_others_stay_json(
    api: LocalEngine, project_dir: Path, slow_status: Callable[[], None]
) -> None:
    async with gateway(api, project_dir) as gw:
        head, frames = await _call_status(gw.port, modern_meta(progressToken="t-1"), SSE_ACCEPT, 21)
        json_head, json_frames = await _call_status(gw.port, modern_meta(), SSE_ACCEPT, 22)
        only_json_head, _ = await _call_status(gw.port, modern_meta(progressToken="t-2"), "application/json", 23)
    assert b"text/event-stream" in head.lower()
    progress = [f for f in frames if f.get("method") == "notifications/progress"]
    assert [p["params"]["progressToken"] for p in progress] == ["t-1"]
    assert frames[-1]["id"] == 21 and frames[-1]["result"]["structuredContent"] == {"slow": True}
    assert b"application/json" in json_head.lower() and json_frames[0]["id"] == 22
    assert b"application/json" in only_json_head.lower()  # a client that takes no stream gets JSON
