"""The order of a legacy HTTP session's messages: initialized first, cancellations flushed on close, no
DELETE after a 404.

Covers CLI-15, CLI-16, CLI-18, CW-07.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import pytest

from shadowcode.errors import UpstreamServerError
from shadowcode.limits import MCP_HTTP_SESSION_DELETE_SECONDS
from shadowcode.mcp.client.connection import Connection, ConnectionState, connections_open
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.timeouts import Timeouts
from tests.support.http_peer import ECHO_TOOL, Received, http_head, json_reply, peer, result

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(url: str, timeouts: Timeouts | None = None) -> AsyncIterator[Connection]:
    """A started connection; closed on exit (the close is what several tests watch)."""
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            conn = Connection(server_id="test:h", endpoint=Endpoint(url), timeouts=timeouts or Timeouts.single(5))
            with suppress(UpstreamServerError):
                await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()
    assert connections_open() == 0


@pytest.mark.req("CLI-16")
async def test_notifications_initialized_is_taken_before_any_other_request_is_posted() -> None:
    answered = anyio.Event()
    async with peer() as p:

        async def initialized(req: Received, stream: anyio.abc.SocketStream) -> None:
            # A slow, strict server: it reads the notification, thinks, then says 202.
            with anyio.move_on_after(0.5):
                await anyio.sleep_forever()
            answered.set()
            await stream.send(http_head(202))

        async def tools(req: Received, stream: anyio.abc.SocketStream) -> None:
            if not answered.is_set():
                error = {"code": -32600, "message": "tools/list before notifications/initialized"}
                await stream.send(json_reply(400, {"jsonrpc": "2.0", "id": req.message["id"], "error": error}))
                return
            await stream.send(json_reply(200, result(req, {"tools": [ECHO_TOOL]})))

        p.routes["notifications/initialized"] = initialized
        p.routes["tools/list"] = tools
        async with connected(p.url) as conn:
            assert conn.state is ConnectionState.READY, conn.error
        assert len(p.calls("tools/list")) == 1


@pytest.mark.req("CW-07", "CLI-15", "CLI-16")
async def test_a_timed_out_calls_cancellation_is_sent_when_the_connection_closes_right_after() -> None:
    hang = anyio.Event()
    async with peer() as p:

        async def never(req: Received, stream: anyio.abc.SocketStream) -> None:
            await hang.wait()

        p.routes["tools/call"] = never
        async with connected(p.url, Timeouts(connect=5, call=0.3, read=5)) as conn:
            with pytest.raises(UpstreamServerError, match="did not finish within 0.3 s"):
                await conn.call("echo", {"text": "a"})
            closing = time.monotonic()
        closed = time.monotonic() - closing
        hang.set()
        order = [(r.method, r.rpc) for r in p.received]
        call_id = p.calls("tools/call")[0].message["id"]
        cancelled = p.calls("notifications/cancelled")
        assert [c.message["params"]["requestId"] for c in cancelled] == [call_id]
        assert order.index(("POST", "notifications/cancelled")) < order.index(("DELETE", ""))
        assert conn.cleanup == "session deleted"
        assert closed < MCP_HTTP_SESSION_DELETE_SECONDS + 1.0


@pytest.mark.req("CW-07", "CLI-16")
async def test_the_flush_and_the_delete_share_the_close_bound() -> None:
    hang = anyio.Event()
    async with peer() as p:

        async def never(req: Received, stream: anyio.abc.SocketStream) -> None:
            await hang.wait()

        p.routes["tools/call"] = never
        p.routes["notifications/cancelled"] = never
        async with connected(p.url, Timeouts(connect=5, call=0.3, read=5)) as conn:
            with pytest.raises(UpstreamServerError, match="did not finish"):
                await conn.call("echo", {"text": "a"})
            closing = time.monotonic()
        closed = time.monotonic() - closing
        hang.set()
        assert len(p.calls("notifications/cancelled")) == 1
        assert conn.cleanup == "session delete timed out"
        assert closed < MCP_HTTP_SESSION_DELETE_SECONDS + 1.0


@pytest.mark.req("CLI-18")
async def test_after_a_404_ended_the_session_no_delete_is_sent() -> None:
    async with peer() as p:
        p.routes["tools/call"] = lambda req, stream: stream.send(http_head(404))
        async with connected(p.url) as conn:
            with pytest.raises(UpstreamServerError, match="ended the session \\(HTTP 404\\); nothing is sent again"):
                await conn.call("echo", {"text": "x"})
            assert conn.state is ConnectionState.FAILED
        assert [r.method for r in p.received].count("DELETE") == 0
        assert not p.deleted.is_set()
        assert conn.cleanup == "session ended by the server"
