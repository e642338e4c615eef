"""Tool names checked against the MCP tool-name rules when the catalog is read.

Covers CLI-13, CLI-14.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import pytest

from shadowcode.errors import UpstreamServerError
from shadowcode.limits import MCP_TOOL_NAME_MAX_CHARS
from shadowcode.mcp.client.connection import Connection, ConnectionState, connections_open
from shadowcode.mcp.client.endpoint import Endpoint
from tests.support.http_peer import ECHO_TOOL, Peer, Received, json_reply, peer, result

pytestmark = [pytest.mark.anyio, pytest.mark.req("CLI-13", "CLI-14")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def listing(names: list[str]) -> AsyncIterator[tuple[Peer, Connection]]:
    """A connection to a peer listing one echo-shaped tool per name."""
    async with peer() as p:

        async def tools(req: Received, stream: anyio.abc.SocketStream) -> None:
            entries: list[dict[str, Any]] = [ECHO_TOOL | {"name": n} for n in names]
            await stream.send(json_reply(200, result(req, {"tools": entries})))

        p.routes["tools/list"] = tools
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                conn = Connection(server_id="test:h", endpoint=Endpoint(p.url), timeout_seconds=5)
                with suppress(UpstreamServerError):
                    await conn.start(tg)
                try:
                    yield p, conn
                finally:
                    conn.close()
                    await conn.wait_closed()
    assert connections_open() == 0


async def test_a_name_of_the_length_limit_and_every_allowed_character_is_listed() -> None:
    names = ["a" * MCP_TOOL_NAME_MAX_CHARS, "Az09_-.x", "-leading.dot."]
    async with listing(names) as (_, conn):
        assert conn.state is ConnectionState.READY, conn.error
        assert [t["name"] for t in conn.tools] == names


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a" * (MCP_TOOL_NAME_MAX_CHARS + 1), "(and 89 more characters)"),
        ("a" * 5000, "(and 4960 more characters)"),
        ("../../etc/passwd", "'../../etc/passwd'"),
        ("echo\nfake line of the review", "'echo\\nfake line of the review'"),
        ("\x1b[2Jclear", "'\\x1b[2Jclear'"),
        ("with space", "'with space'"),
        ("", "''"),
        ("caf\u00e9", "'caf\u00e9'"),
        ("rtl\u202eoverride", "'rtl\\u202eoverride'"),
    ],
    ids=["one-past-the-limit", "5000", "path", "newline", "escape", "space", "empty", "non-ascii", "bidi"],
)
async def test_a_catalog_with_an_invalid_tool_name_is_refused_with_the_name_escaped(name: str, shown: str) -> None:
    async with listing(["echo", name]) as (p, conn):
        assert conn.state is ConnectionState.FAILED
        assert conn.error is not None
        assert "the server lists a tool whose name is not a valid MCP tool name" in conn.error
        assert shown in conn.error
        assert not any(c in conn.error for c in "\n\x1b\u202e")
        assert len(conn.error) < 400
        assert conn.tools == []
        assert p.calls("tools/call") == []
