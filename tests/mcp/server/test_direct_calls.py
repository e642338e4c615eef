"""``tools/call`` answered beside the SDK's dispatch (issue 15): the same answers, the same limits.

The stdio transport runs in process over pipes twice, once with the direct path and once
without it, and every answer a client sees must be the same JSON document on every
handshake-era revision: results, tool errors, unknown tools, bad params, a 2026-07-28
envelope. Then what only the direct path does: it stays out of the way before ``initialize``
was answered, a cancelled call is never answered, and the in-flight limit is the one the
SDK's handler counts (SRV-25).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.limits import OPERATIONS_IN_FLIGHT_MAX
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS, DirectToolCalls
from shadowcode.mcp.server.stdio import StdioLimits
from shadowcode.mcp.server.tool_calls import Operations, ToolCalls
from shadowcode.mcp.server.tools import ToolSpec, tool_named
from tests.support.stdio_peer import Peer, count_direct_claims, in_process_transport
from tests.support.tool_results import assert_declared_output

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-25")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _frame(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def _call(request_id: object, name: str, arguments: Any = None, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **params}
    if arguments is not None:
        body["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


REQUESTS: list[dict[str, Any]] = [
    _call(10, "shadow_status", {}),
    _call("s-11", "shadow_status"),
    _call(12, "shadow_models", {}, _meta={"progressToken": "p1", "vendor/x": 1}),
    _call(13, "shadow_sessions", {"limit": "many"}),  # invalid arguments: an isError result
    _call(14, "shadow_memory", {"action": "read"}),
    _call(15, "shadow_nope", {}),  # unknown tool: a JSON-RPC error from the SDK
    _call(16, "shadow_status", [1, 2]),  # arguments not an object
    _call(17, "shadow_status", {}, extra=True),  # params the direct path does not take apart
    _call(18, "shadow_status", {}, _meta={"progressToken": True}),
    {"jsonrpc": "2.0", "id": 19, "method": "tools/call"},
]


async def _session(api: LocalEngine, project_dir: Path, revision: str, *, direct: bool) -> list[dict[str, Any]]:
    """Initialize at ``revision``, send every request of :data:`REQUESTS`, return the answers by request order."""
    async with in_process_transport(api, project_dir, direct=direct) as peer:
        init = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await peer.send(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        assert (await peer.line())["result"]["protocolVersion"] == revision
        await peer.send(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        answers = []
        for request in REQUESTS:
            await peer.send(_frame(request))
            answers.append(await peer.line())
        return answers


@pytest.mark.parametrize("revision", sorted(HANDSHAKE_REVISIONS))
async def test_the_direct_path_answers_exactly_as_the_sdk_does(
    api: LocalEngine, project_dir: Path, revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_sdk = await _session(api, project_dir, revision, direct=False)
    taken = count_direct_claims(monkeypatch, "take")
    direct = await _session(api, project_dir, revision, direct=True)
    assert taken == [10, "s-11", 12, 13, 14]  # the plain calls of known tools; the rest went to the SDK
    assert direct == through_sdk
    assert [a["id"] for a in direct] == [r["id"] for r in REQUESTS]
    status = direct[0]["result"]
    assert status["isError"] is False
    assert_declared_output("shadow_status", status["structuredContent"], status["content"][0]["text"])
    assert direct[3]["result"]["isError"] is True and "invalid arguments" in direct[3]["result"]["content"][0]["text"]
    assert "error" in direct[5]


def _calls(api: LocalEngine, project_dir: Path, ops_max: int = OPERATIONS_IN_FLIGHT_MAX) -> ToolCalls:
    ctx = ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access())
    return ToolCalls(ctx, Operations(ops_max), operation_deadline_seconds=30.0, result_max_bytes=1 << 20)


def _initialized(direct: DirectToolCalls, revision: str = "2025-06-18") -> None:
    """Show ``direct`` an ``initialize`` and the SDK's answer to it."""
    assert direct.take(_frame({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {}})) is None
    direct.observe(types.JSONRPCResponse(jsonrpc="2.0", id="i", result={"protocolVersion": revision}))


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status", "x": NaN}}',
        b'{"jsonrpc": "2.0", "id": true, "method": "tools/call", "params": {"name": "shadow_status"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status"}, "more": 1}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status",'
        b' "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}',
        b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status"}}]',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
    ],
)
async def test_frames_it_cannot_take_apart_with_certainty_go_to_the_sdk(
    api: LocalEngine, project_dir: Path, line: bytes
) -> None:
    direct = DirectToolCalls(_calls(api, project_dir))
    _initialized(direct)
    assert direct.take(line) is None


async def test_nothing_is_taken_before_the_sdk_answered_initialize_or_on_a_2026_session(
    api: LocalEngine, project_dir: Path
) -> None:
    call = _frame(_call(5, "shadow_status", {}))
    direct = DirectToolCalls(_calls(api, project_dir))
    assert direct.take(call) is None  # no initialize seen
    assert direct.take(_frame({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {}})) is None
    assert direct.take(call) is None  # seen, not yet answered
    modern = DirectToolCalls(_calls(api, project_dir))
    _initialized(modern, "2026-07-28")
    assert modern.take(call) is None
    _initialized(direct)
    direct.take(_frame({"jsonrpc": "2.0", "id": "again", "method": "initialize", "params": {}}))
    direct.observe(types.JSONRPCError(jsonrpc="2.0", id="again", error=types.ErrorData(code=-32600, message="no")))
    taken = direct.take(call)  # a refused second initialize changes nothing
    assert taken is not None and taken[0] == 5
    assert taken is not None
    answer = json.loads(await taken[1](None))
    assert answer["id"] == 5 and answer["result"]["isError"] is False


async def _slow(_ctx: ServerContext, _args: Any) -> dict[str, Any]:
    await anyio.sleep(30)
    return {}


def _slow_spec() -> ToolSpec:
    status = tool_named("shadow_status")
    assert status is not None
    return ToolSpec("shadow_status", status.description, status.input_model, status.hints, _slow)


async def test_a_cancelled_call_is_never_answered_and_frees_its_slot(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _calls(api, project_dir)
    monkeypatch.setattr("shadowcode.mcp.server.direct_calls.tool_named", lambda _name: _slow_spec())
    direct = DirectToolCalls(calls)
    _initialized(direct)
    taken = direct.take(_frame(_call("slow", "shadow_status", {})))
    assert taken is not None
    assert direct.take(_frame(_call("slow", "shadow_status", {}))) is None  # the same id while it runs: the SDK's
    answers: list[bytes | None] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            answers.append(await taken[1](None))

        tg.start_soon(run)
        with anyio.fail_after(5):
            while calls.ops.running == 0:
                await anyio.sleep(0.01)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}
        assert direct.take(_frame(cancel)) is None  # the SDK sees the notification too
    assert answers == [None]
    assert calls.ops.running == 0


async def test_the_in_flight_limit_is_shared_with_the_sdk_handler(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _calls(api, project_dir, ops_max=1)
    direct = DirectToolCalls(calls)
    _initialized(direct)
    calls.ops.enter()  # one operation running through the SDK's handler: the limit is reached
    try:
        taken = direct.take(_frame(_call(7, "shadow_status", {})))
        assert taken is not None
        refused = json.loads(await taken[1](None))
    finally:
        calls.ops.leave()
    assert refused["id"] == 7 and "too many operations in flight" in refused["error"]["message"]
    taken = direct.take(_frame(_call(8, "shadow_status", {})))
    assert taken is not None
    assert json.loads(await taken[1](None))["result"]["isError"] is False


async def test_over_the_wire_a_pipelined_burst_is_answered_once_each(api: LocalEngine, project_dir: Path) -> None:
    """A client that writes many calls at once gets each answer once, whichever path took it."""
    async with in_process_transport(api, project_dir, direct=True) as peer:
        await _handshake(peer)
        burst = b"".join(_frame(_call(100 + i, "shadow_status", {})) for i in range(40))
        await peer.send(burst)
        ids = sorted([(await peer.line())["id"] for _ in range(40)])
    assert ids == list(range(100, 140))


async def _handshake(peer: Peer) -> None:
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    await peer.send(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    await peer.line()
    await peer.send(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))


async def test_a_call_still_running_when_the_connection_ends_is_cancelled(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EOF with a call past the drain time: the call is cancelled and the transport returns (SRV-21)."""
    started, ended = anyio.Event(), anyio.Event()

    async def hanging(_ctx: ServerContext, _args: Any) -> dict[str, Any]:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()
        return {}

    status = tool_named("shadow_status")
    assert status is not None
    spec = ToolSpec("shadow_status", status.description, status.input_model, status.hints, hanging)
    monkeypatch.setattr("shadowcode.mcp.server.direct_calls.tool_named", lambda _name: spec)
    async with in_process_transport(api, project_dir, StdioLimits(eof_drain_seconds=0.2), direct=True) as peer:
        await _handshake(peer)
        await peer.send(_frame(_call("hangs", "shadow_status", {})))
        with anyio.fail_after(5):
            await started.wait()
        os.close(peer.write_fd)
        peer.write_fd = -1
        assert await peer.closed_within(5)
        assert ended.is_set()


async def test_a_direct_call_that_fails_ends_the_transport_with_its_error(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the direct path is not swallowed: it surfaces as a failure of the task group would."""

    async def broken(_notify: object) -> bytes | None:
        raise RuntimeError("broken answer")

    original = DirectToolCalls.take

    def take(self: DirectToolCalls, line: bytes) -> Any:
        taken = original(self, line)
        return None if taken is None else (taken[0], broken)

    monkeypatch.setattr(DirectToolCalls, "take", take)
    with pytest.raises(BaseExceptionGroup) as caught:
        async with in_process_transport(api, project_dir, direct=True) as peer:
            await _handshake(peer)
            await peer.send(_frame(_call(3, "shadow_status", {})))
            assert await peer.closed_within(5)
    assert caught.group_contains(RuntimeError, match="broken answer")
