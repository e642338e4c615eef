"""One stdio connection against the hostile fixture servers: limits at and past their values, cleanup, capabilities.

Covers CLI-12, CLI-13, CLI-14, CLI-15, CLI-19 (and CLI-04 for the stderr capture).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.errors import ShadowcodeError, UpstreamServerError
from shadowcode.limits import (
    MCP_CATALOG_MAX_BYTES,
    MCP_CATALOG_PAGES_MAX,
    MCP_CATALOG_TOOLS_MAX,
    MCP_CONNECTIONS_MAX,
    MCP_CURSOR_MAX_BYTES,
    MCP_FRAME_MAX_BYTES,
    MCP_FRAMES_PER_SECOND_MAX,
    MCP_STDERR_CAPTURE_BYTES,
)
from shadowcode.mcp.client.connection import Connection, ConnectionState, connections_open
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.stdio import ClientLimits
from tests.support.mcp_client import group_gone, hostile_argv, pid_gone, wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(
    argv: list[str], cwd: Path, *, timeout: float = 5.0, env: dict[str, str] | None = None, **kw: Any
) -> AsyncIterator[Connection]:
    """A started connection (READY, or FAILED with ``error`` set); closed and cleaned up on exit."""
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            conn = Connection(
                server_id="test:h", argv=argv, cwd=cwd, env=env or child_env(), timeout_seconds=timeout, **kw
            )
            try:
                await conn.start(tg)
            except UpstreamServerError:
                pass
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()
    if conn.pid is not None:
        assert group_gone(conn.pid), "the server's process group outlived its connection"


async def _fails(mode: str, *extra: str, cwd: Path, timeout: float = 5.0) -> Connection:
    async with connected(hostile_argv(mode, *extra), cwd, timeout=timeout) as conn:
        assert conn.state is ConnectionState.FAILED, conn.error
    return conn


async def _works(mode: str, *extra: str, cwd: Path, call: bool = True) -> Connection:
    async with connected(hostile_argv(mode, *extra), cwd) as conn:
        assert conn.state is ConnectionState.READY, conn.error
        if call:
            assert (await conn.call("echo", {"text": "still here"}))["content"][0]["text"] == "still here"
    assert conn.state is ConnectionState.CLOSED
    return conn


@pytest.mark.req("CLI-13", "CLI-14")
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("banner", "not a JSON-RPC message"),
        ("huge_line", f"longer than {MCP_FRAME_MAX_BYTES} bytes"),
        ("blank_flood", f"more than {MCP_FRAMES_PER_SECOND_MAX} frames in one second"),
        ("dup_tool", "lists the tool name 'echo' twice"),
        ("cursor_loop", "repeated a pagination cursor"),
        ("crash_at_init", "closed its output"),
    ],
)
async def test_a_hostile_server_fails_its_connection_with_the_named_cause_and_leaves_no_process(
    tmp_path: Path, mode: str, message: str
) -> None:
    conn = await _fails(mode, cwd=tmp_path)
    assert message in (conn.error or "")


@pytest.mark.req("CLI-13")
async def test_a_server_that_never_answers_initialize_fails_at_its_deadline(tmp_path: Path) -> None:
    started = anyio.current_time()
    conn = await _fails("no_init", cwd=tmp_path, timeout=0.3)
    assert "did not finish initialization within 0.3 s" in (conn.error or "")
    assert anyio.current_time() - started < 5


@pytest.mark.req("CLI-13")
async def test_a_frame_of_exactly_1_mib_is_read_and_one_byte_more_fails(tmp_path: Path) -> None:
    await _works("init_frame", str(MCP_FRAME_MAX_BYTES), cwd=tmp_path)
    conn = await _fails("init_frame", str(MCP_FRAME_MAX_BYTES + 1), cwd=tmp_path)
    assert f"longer than {MCP_FRAME_MAX_BYTES} bytes" in (conn.error or "")


@pytest.mark.req("CLI-13")
async def test_128_frames_in_a_second_blank_lines_included_are_read_and_129_fail(tmp_path: Path) -> None:
    # Three real frames share the second with the burst: the answer to the server/discover probe
    # just before it, and the initialize and tools/list answers after it.
    await _works("blank_burst", str(MCP_FRAMES_PER_SECOND_MAX - 3), cwd=tmp_path, call=False)
    conn = await _fails("blank_burst", str(MCP_FRAMES_PER_SECOND_MAX - 2), cwd=tmp_path)
    assert "frames in one second" in (conn.error or "")


@pytest.mark.req("CLI-13")
@pytest.mark.parametrize(
    ("mode", "at", "message"),
    [
        ("many_tools", MCP_CATALOG_TOOLS_MAX, f"more than {MCP_CATALOG_TOOLS_MAX} tools"),
        ("pages", MCP_CATALOG_PAGES_MAX, f"more than {MCP_CATALOG_PAGES_MAX} pages"),
        ("long_cursor", MCP_CURSOR_MAX_BYTES, f"cursor longer than {MCP_CURSOR_MAX_BYTES} bytes"),
        ("catalog_bytes", MCP_CATALOG_MAX_BYTES, f"larger than {MCP_CATALOG_MAX_BYTES} bytes"),
    ],
)
async def test_catalog_limits_hold_at_their_value_and_fail_one_past_it(
    tmp_path: Path, mode: str, at: int, message: str
) -> None:
    async with connected(hostile_argv(mode, str(at)), tmp_path) as conn:
        assert conn.state is ConnectionState.READY, conn.error
        if mode == "many_tools":
            assert len(conn.tools) == at
    conn = await _fails(mode, str(at + 1), cwd=tmp_path)
    assert message in (conn.error or "")


@pytest.mark.req("CLI-13")
async def test_the_lifetime_byte_limit_holds_at_its_value_and_fails_one_byte_past_it(tmp_path: Path) -> None:
    async with connected(hostile_argv(), tmp_path) as probe:
        assert probe.state is ConnectionState.READY
    used = probe._server.received_bytes  # noqa: SLF001 - the bytes a plain connection reads
    async with connected(hostile_argv(), tmp_path, limits=ClientLimits(lifetime_max_bytes=used)) as conn:
        assert conn.state is ConnectionState.READY, conn.error
    conn = await _fails_with_limits(tmp_path, ClientLimits(lifetime_max_bytes=used - 1))
    assert f"more than {used - 1} bytes" in (conn.error or "")


async def _fails_with_limits(cwd: Path, limits: ClientLimits) -> Connection:
    async with connected(hostile_argv(), cwd, limits=limits) as conn:
        assert conn.state is ConnectionState.FAILED
    return conn


@pytest.mark.req("CLI-13")
async def test_a_server_sending_more_than_32_mib_over_its_life_fails_the_call(tmp_path: Path) -> None:
    async with connected(hostile_argv("volume", str(33 * 1024 * 1024)), tmp_path, timeout=30) as conn:
        with pytest.raises(UpstreamServerError, match="more than 33554432 bytes"):
            await conn.call("echo", {"text": "x"})
        assert conn.state is ConnectionState.FAILED


@pytest.mark.req("CLI-13", "CLI-04")
async def test_stderr_floods_are_drained_past_a_16_kib_capture_and_the_server_keeps_working(
    tmp_path: Path,
) -> None:
    async with connected(hostile_argv("stderr_flood"), tmp_path) as conn:
        await wait_for(lambda: len(conn.stderr_text()) == MCP_STDERR_CAPTURE_BYTES)
        for _ in range(3):
            assert (await conn.call("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
    assert len(conn.stderr_text()) == MCP_STDERR_CAPTURE_BYTES


@pytest.mark.req("CLI-15")
async def test_the_client_advertises_no_capability_fails_sampling_and_declines_elicitation(
    tmp_path: Path,
) -> None:
    async with connected(hostile_argv("capabilities"), tmp_path) as conn:
        params = json.loads((await conn.call("echo", {}))["content"][0]["text"])
    assert params["capabilities"] == {}
    async with connected(hostile_argv("sampling"), tmp_path) as conn:
        reply = json.loads((await conn.call("echo", {}))["content"][0]["text"])
    assert "error" in reply and "result" not in reply
    async with connected(hostile_argv("elicit"), tmp_path) as conn:
        reply = json.loads((await conn.call("echo", {}))["content"][0]["text"])
    assert reply["result"] == {"action": "decline"}


@pytest.mark.req("CLI-15")
async def test_a_task_continuation_is_refused_and_the_old_catalog_is_not_served_after_failure(
    tmp_path: Path,
) -> None:
    async with connected(hostile_argv("input_required"), tmp_path) as conn:
        with pytest.raises(UpstreamServerError):
            await conn.call("echo", {"text": "x"})
        assert conn.state is ConnectionState.FAILED
        with pytest.raises(UpstreamServerError, match="start a new task"):
            await conn.call("echo", {"text": "x"})


@pytest.mark.req("CLI-13", "CLI-15")
async def test_a_call_past_its_deadline_fails_without_retry_and_the_connection_stays_usable(
    tmp_path: Path,
) -> None:
    async with connected(hostile_argv(), tmp_path, timeout=0.5) as conn:
        with pytest.raises(UpstreamServerError, match="within 0.5 s"):
            await conn.call("slow", {"seconds": 3})
        assert conn.state is ConnectionState.READY


@pytest.mark.req("CLI-19")
async def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    started = anyio.current_time()
    async with connected(hostile_argv("ignore_term"), tmp_path) as conn:
        assert conn.state is ConnectionState.READY
    assert conn.cleanup == "killed"
    assert anyio.current_time() - started < 10


@pytest.mark.req("CLI-19")
async def test_a_grandchild_holding_the_pipes_dies_with_the_group(tmp_path: Path) -> None:
    async with connected(hostile_argv("grandchild"), tmp_path) as conn:
        assert conn.state is ConnectionState.READY
        note = tmp_path / "grandchild.pid"
        grandchild = int(await wait_for(lambda: note.is_file() and note.read_text(encoding="utf-8")))
        assert not pid_gone(grandchild)
    assert pid_gone(grandchild)
    assert conn.stragglers == 0


@pytest.mark.req("CLI-19")
async def test_cancelling_during_initialization_stops_the_server_at_once(tmp_path: Path) -> None:
    conn = Connection(
        server_id="test:h", argv=hostile_argv("no_init"), cwd=tmp_path, env=child_env(), timeout_seconds=60
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.start, tg)
            await wait_for(lambda: conn.pid)
            tg.cancel_scope.cancel()
    assert conn.pid is not None and group_gone(conn.pid)
    assert connections_open() == 0


@pytest.mark.req("CLI-12")
async def test_the_server_runs_the_literal_argv_in_the_project_with_a_scrubbed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "SHADOWCODE_HOME",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
    ):
        monkeypatch.setenv(name, "leak-" + name.lower())
    env = child_env({"EXPLICIT": "given"})
    argv = hostile_argv("plain", "x; touch pwned $(touch pwned2)")
    async with connected(argv, tmp_path, env=env) as conn:
        seen = json.loads((await conn.call("env", {}))["content"][0]["text"])
        await conn.call("record", {"text": "here"})
    assert (tmp_path / "calls.log").read_text(encoding="utf-8") == "here\n"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    assert seen["EXPLICIT"] == "given" and "PATH" in seen
    assert not [v for v in seen.values() if v.startswith("leak-")]


@pytest.mark.req("CLI-04")
async def test_configured_values_are_redacted_from_the_catalog_and_results(tmp_path: Path) -> None:
    redactor = Redactor(["plain", "still"])
    async with connected(hostile_argv(), tmp_path, redactor=redactor) as conn:
        result = await conn.call("echo", {"text": "still plain text"})
    assert result["content"][0]["text"] == "[redacted] [redacted] text"


@pytest.mark.req("CLI-14", "CLI-04")
@pytest.mark.parametrize("code", [-32000, -32001, -32603, -32602, 1])
async def test_a_json_rpc_error_reply_is_that_calls_error_and_the_connection_stays_usable(
    tmp_path: Path, code: int
) -> None:
    token = "tok-5e1f0c"
    env = child_env() | {"FIXTURE_TOKEN": token}
    async with connected(hostile_argv("rpc_error"), tmp_path, env=env, redactor=Redactor([token])) as conn:
        with pytest.raises(UpstreamServerError) as raised:
            await conn.call("echo", {"text": str(code)})
        assert conn.state is ConnectionState.READY, conn.error
        assert (await conn.call("echo", {"text": "still here"}))["content"][0]["text"] == "still here"
    message = raised.value.message
    assert f"error {code}" in message and f"refused with {code}: token [redacted]" in message, message
    assert token not in message and "within" not in message and "closed" not in message
    assert raised.value.fields["error_code"] == code
    assert conn.error is None


@pytest.mark.req("CLI-13")
async def test_at_most_16_connections_are_open_at_once_and_the_17th_is_refused(tmp_path: Path) -> None:
    conns: list[Connection] = []
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for _ in range(MCP_CONNECTIONS_MAX):
                conn = Connection(
                    server_id="test:h", argv=hostile_argv(), cwd=tmp_path, env=child_env(), timeout_seconds=10
                )
                conns.append(conn)
                await conn.start(tg)
            assert connections_open() == MCP_CONNECTIONS_MAX
            extra = Connection(
                server_id="test:x", argv=hostile_argv(), cwd=tmp_path, env=child_env(), timeout_seconds=10
            )
            with pytest.raises(ShadowcodeError, match=f"{MCP_CONNECTIONS_MAX} MCP connections are already open"):
                await extra.start(tg)
            assert extra.pid is None
            for conn in conns:
                conn.close()
            for conn in conns:
                await conn.wait_closed()
    assert connections_open() == 0
    assert all(c.pid is not None and group_gone(c.pid) for c in conns)
