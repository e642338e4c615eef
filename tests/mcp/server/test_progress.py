"""Progress of slow tool calls: ``notifications/progress`` once a second for a call that gave a token (SRV-28).

The runner itself with a short interval, then the two ways a call is answered (the SDK's
handler in both eras, and the stdio transport's direct path) with a tool made slow.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.limits import OPERATION_DEADLINE_SECONDS, PROGRESS_INTERVAL_SECONDS, RESULT_MAX_BYTES
from shadowcode.mcp.server import tools
from shadowcode.mcp.server.app import build_server
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import DirectToolCalls
from shadowcode.mcp.server.tool_calls import Operations, ToolCalls
from tests.mcp.server.wire import modern_meta, serve_wire

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-28")]

SLOW_SECONDS = PROGRESS_INTERVAL_SECONDS * 1.6
"""A call this slow sends exactly one progress notification at the contract's interval."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def slow_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """shadow_status takes SLOW_SECONDS (shadow_review stays quick)."""
    spec = tools.tool_named("shadow_status")
    assert spec is not None

    async def slow(ctx: ServerContext, args: Any) -> dict[str, Any]:
        await anyio.sleep(SLOW_SECONDS)
        return {"slow": True}

    monkeypatch.setitem(tools._BY_NAME, "shadow_status", dataclasses.replace(spec, handler=slow))


def runner(ctx: ServerContext, interval: float) -> ToolCalls:
    deadline, size = OPERATION_DEADLINE_SECONDS, RESULT_MAX_BYTES
    return ToolCalls(ctx, Operations(8), deadline, size, progress_interval_seconds=interval)


async def test_a_slow_call_ticks_once_per_interval_and_a_quick_one_never(
    engine: LocalEngine, project_dir: Path, slow_status: None
) -> None:
    ctx = ServerContext(api=engine, root=project_dir, access=Access())
    sent: list[tuple[float, str]] = []

    async def progress(value: float, message: str) -> None:
        sent.append((value, message))

    calls = runner(ctx, SLOW_SECONDS / 4.5)
    spec = tools.tool_named("shadow_status")
    assert spec is not None
    outcome = await calls.run(spec, {}, progress=progress)
    assert outcome is not None and outcome.document == {"slow": True}
    values = [value for value, _ in sent]
    assert 2 <= len(values) <= 4 and values == [float(n) for n in range(1, len(values) + 1)]  # one per interval
    assert all("shadow_status is still working" in message for _, message in sent)
    quick: list[Any] = []

    async def record(value: float, message: str) -> None:
        quick.append(value)

    spec_why = tools.tool_named("shadow_why")
    assert spec_why is not None
    async with engine.running():
        await runner(ctx, SLOW_SECONDS).run(spec_why, {"path": "x"}, progress=record)
    assert quick == []


async def test_a_progress_send_that_fails_never_fails_the_call(
    engine: LocalEngine, project_dir: Path, slow_status: None
) -> None:
    ctx = ServerContext(api=engine, root=project_dir, access=Access())
    attempts = 0

    async def broken(value: float, message: str) -> None:
        nonlocal attempts
        attempts += 1
        raise OSError("the client is gone")

    spec = tools.tool_named("shadow_status")
    assert spec is not None
    outcome = await runner(ctx, SLOW_SECONDS / 4.5).run(spec, {}, progress=broken)
    assert outcome is not None and not outcome.is_error
    assert attempts == 1  # the first failure stopped the ticks


async def test_the_sdk_handler_sends_progress_with_the_token_in_both_eras(
    engine: LocalEngine, project_dir: Path, slow_status: None
) -> None:
    ctx = ServerContext(api=engine, root=project_dir, access=Access())
    async with serve_wire(build_server(ctx)) as wire:
        meta = modern_meta(progressToken="tok-1")
        modern = await wire.call("tools/call", {"name": "shadow_status", "arguments": {}, "_meta": meta})
    [note] = wire.notifications("notifications/progress")
    assert note["params"]["progressToken"] == "tok-1" and note["params"]["progress"] == 1.0
    assert wire.frames.index(note) < wire.frames.index(modern)  # before the answer, on the call's stream
    async with serve_wire(build_server(ctx)) as wire:
        await wire.handshake("2025-06-18")
        await wire.call("tools/call", {"name": "shadow_status", "arguments": {}, "_meta": {"progressToken": 5}})
        await wire.call("tools/call", {"name": "shadow_status", "arguments": {}})  # no token: no progress
    assert [n["params"]["progressToken"] for n in wire.notifications("notifications/progress")] == [5]


async def test_the_direct_path_writes_progress_frames_before_its_answer(
    engine: LocalEngine, project_dir: Path, slow_status: None
) -> None:
    ctx = ServerContext(api=engine, root=project_dir, access=Access())
    direct = DirectToolCalls(runner(ctx, PROGRESS_INTERVAL_SECONDS))
    direct.revision = "2025-11-25"
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
    line = json.dumps(call | {"params": {"name": "shadow_status", "arguments": {}, "_meta": {"progressToken": "p"}}})
    taken = direct.take(line.encode())
    assert taken is not None
    frames: list[bytes] = []

    async def notify(frame: bytes) -> None:
        frames.append(frame)

    answer = await taken[1](notify)
    assert answer is not None and json.loads(answer)["id"] == 9
    [frame] = frames
    sent = json.loads(frame)
    assert sent["jsonrpc"] == "2.0" and sent["method"] == "notifications/progress" and "id" not in sent
    assert sent["params"]["progressToken"] == "p" and sent["params"]["progress"] == 1.0
    assert "shadow_status is still working" in sent["params"]["message"]
    assert frame.endswith(b"\n")
    stateless = json.dumps(call | {"params": {"name": "shadow_status", "_meta": {"progressToken": "p"}}}).encode()
    assert direct.take_stateless(stateless) is None  # over HTTP the SDK streams it


async def test_a_tool_error_of_a_call_with_progress_is_its_own_message_not_an_unexpected_failure(
    engine: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shadowcode.errors import ToolError

    spec = tools.tool_named("shadow_status")
    assert spec is not None

    async def refusing(ctx: ServerContext, args: Any) -> dict[str, Any]:
        await anyio.sleep(0.05)
        raise ToolError("the query ran longer than 5 s and was stopped")

    monkeypatch.setitem(tools._BY_NAME, "shadow_status", dataclasses.replace(spec, handler=refusing))
    ctx = ServerContext(api=engine, root=project_dir, access=Access())

    async def progress(value: float, message: str) -> None:
        return None

    outcome = await runner(ctx, 0.01).run(tools._BY_NAME["shadow_status"], {}, progress=progress)
    assert outcome is not None and outcome.is_error
    assert outcome.text == "the query ran longer than 5 s and was stopped"
