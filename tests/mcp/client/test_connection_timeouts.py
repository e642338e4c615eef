"""A connection's connect, call and read timeouts and its tool filter, against real stdio servers.

Covers CW-02, CW-07.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.errors import ToolError, UpstreamServerError
from shadowcode.mcp.client.connection import Connection, ConnectionState
from shadowcode.mcp.client.timeouts import Timeouts
from tests.support.mcp_client import PY, SLOW_SDK_SERVER, group_gone, hostile_argv, wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.req("CW-07")
async def test_a_call_past_its_call_timeout_is_cancelled_the_connection_kept_and_the_late_reply_discarded(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:slow",
                argv=hostile_argv("plain"),
                cwd=tmp_path,
                env=child_env(),
                timeouts=Timeouts(connect=20, call=3.0, read=20),
            )
            await conn.start(tg)
            try:
                with pytest.raises(UpstreamServerError, match=r"did not finish within 3.0 s.*call_timeout"):
                    await conn.call("slow", {"seconds": 4})
                assert conn.state is ConnectionState.READY
                # The server is still asleep (about 1 s more): it answers the abandoned call first,
                # then reads the cancellation, then this call. The late answer must not become this call's.
                after = await conn.call("echo", {"text": "after"})
                assert after["content"][0]["text"] == "after"
                assert (await conn.call("echo", {"text": "again"}))["content"][0]["text"] == "again"
                (slow_id,) = [json.loads(line) for line in _lines(tmp_path / "slow.log")]
                cancelled = await wait_for(lambda: _lines(tmp_path / "cancelled.log"), what="a cancellation")
                assert [json.loads(line) for line in cancelled] == [slow_id]
                assert conn.state is ConnectionState.READY
            finally:
                conn.close()
                await conn.wait_closed()
    assert conn.pid is not None and group_gone(conn.pid)


@pytest.mark.req("CW-07")
async def test_the_python_sdk_server_sees_the_cancellation_of_a_tool_sleeping_past_the_call_timeout(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:sdk",
                argv=[PY, str(SLOW_SDK_SERVER)],
                cwd=tmp_path,
                env=child_env(),
                timeouts=Timeouts(connect=30, call=1.0, read=30),
            )
            await conn.start(tg)
            try:
                with pytest.raises(UpstreamServerError, match=r"within 1.0 s"):
                    await conn.call("sleep", {"seconds": 30})
                await wait_for(lambda: "sleep cancelled" in _lines(tmp_path / "calls.log"), what="the cancellation")
                assert conn.state is ConnectionState.READY
                assert (await conn.call("echo", {"text": "kept"}))["content"][0]["text"] == "kept"
                assert (await conn.call("sleep", {"seconds": 0}))["content"][0]["text"] == "slept"
            finally:
                conn.close()
                await conn.wait_closed()


@pytest.mark.req("CW-07")
async def test_a_tools_list_reply_slower_than_read_timeout_fails_the_connection_naming_it(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:list",
                argv=hostile_argv("slow_list", "3"),
                cwd=tmp_path,
                env=child_env(),
                timeouts=Timeouts(connect=20, call=20, read=0.5),
            )
            with pytest.raises(
                UpstreamServerError, match=r"tools/list reply did not come within 0.5 s \(read_timeout\)"
            ):
                await conn.start(tg)
            await conn.wait_closed()
    assert conn.state is ConnectionState.FAILED


@pytest.mark.req("CW-07")
async def test_connect_timeout_bounds_initialization_and_discovery_together(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:list",
                argv=hostile_argv("slow_list", "3"),
                cwd=tmp_path,
                env=child_env(),
                timeouts=Timeouts(connect=1.0, call=20, read=20),
            )
            with pytest.raises(UpstreamServerError, match=r"the tool listing did not finish within 1.0 s"):
                await conn.start(tg)
            await conn.wait_closed()


@pytest.mark.req("CW-02")
async def test_a_call_of_a_filtered_tool_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:filtered",
                argv=hostile_argv("plain"),
                cwd=tmp_path,
                env=child_env(),
                timeout_seconds=20,
                tool_filter=lambda name: name != "record",
            )
            await conn.start(tg)
            try:
                with pytest.raises(ToolError, match=r"'record' is hidden by the definition's enabled_tools"):
                    await conn.call("record", {"text": "sent?"})
                assert (await conn.call("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
            finally:
                conn.close()
                await conn.wait_closed()
    assert not (tmp_path / "calls.log").exists()
