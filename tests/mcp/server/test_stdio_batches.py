"""JSON-RPC batches: served on a 2025-03-26 connection, one invalid request elsewhere (SRV-01, SRV-25)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from shadowcode.engine.local import LocalEngine
from shadowcode.limits import STDIO_BATCH_MAX_MESSAGES
from shadowcode.mcp.server.batches import Batches
from shadowcode.mcp.server.stdio import decode_frame
from tests.support.stdio_peer import Peer
from tests.support.stdio_peer import in_process_transport as _transport


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _initialize(revision: str) -> bytes:
    params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode() + b"\n"


def _ping(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def _frame(members: list[dict[str, Any]]) -> bytes:
    return json.dumps(members).encode() + b"\n"


async def _open(peer: Peer, revision: str) -> None:
    await peer.send(_initialize(revision))
    assert (await peer.line())["result"]["protocolVersion"] == revision
    await peer.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')


@pytest.mark.req("SRV-01")
@pytest.mark.anyio
async def test_a_batch_on_2025_03_26_gets_one_array_answering_every_member(api: LocalEngine, project_dir: Path) -> None:
    async with _transport(api, project_dir) as peer:
        await _open(peer, "2025-03-26")
        notification = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        wrong = {"jsonrpc": "1.0", "id": 13, "method": "ping"}
        await peer.send(_frame([_ping(11), notification, _ping(12), wrong]))
        answers = await peer.frame()
        assert isinstance(answers, list)
        by_id = {answer["id"]: answer for answer in answers}
        assert sorted(by_id) == [11, 12, 13]
        assert by_id[11]["result"] == {} and by_id[12]["result"] == {}
        assert by_id[13]["error"]["code"] == types.INVALID_REQUEST
        await peer.send(json.dumps(_ping(2)).encode() + b"\n")
        assert (await peer.line()) == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.req("SRV-01", "SRV-25")
@pytest.mark.anyio
async def test_a_batch_at_the_limit_is_served_and_one_past_is_refused_whole(
    api: LocalEngine, project_dir: Path
) -> None:
    async with _transport(api, project_dir) as peer:
        await _open(peer, "2025-03-26")
        await peer.send(_frame([_ping(n) for n in range(1, STDIO_BATCH_MAX_MESSAGES + 1)]))
        answers = await peer.frame()
        assert isinstance(answers, list)
        assert sorted(answer["id"] for answer in answers) == list(range(1, STDIO_BATCH_MAX_MESSAGES + 1))
        await peer.send(_frame([_ping(n) for n in range(100, 100 + STDIO_BATCH_MAX_MESSAGES + 1)]))
        refusal = await peer.line()
        assert refusal["id"] is None and refusal["error"]["code"] == types.INVALID_REQUEST
        assert f"at most {STDIO_BATCH_MAX_MESSAGES} messages" in refusal["error"]["message"]
        await peer.send(json.dumps(_ping(2)).encode() + b"\n")
        assert (await peer.line())["id"] == 2  # nothing of the refused batch was served before it


@pytest.mark.req("SRV-01")
@pytest.mark.anyio
async def test_an_empty_batch_is_refused_and_notifications_alone_get_no_answer(
    api: LocalEngine, project_dir: Path
) -> None:
    async with _transport(api, project_dir) as peer:
        await _open(peer, "2025-03-26")
        await peer.send(b"[]\n")
        assert (await peer.line())["error"]["code"] == types.INVALID_REQUEST
        await peer.send(_frame([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]))
        await peer.send(json.dumps(_ping(3)).encode() + b"\n")
        assert (await peer.line()) == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.req("SRV-01")
@pytest.mark.anyio
@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_a_batch_on_a_later_revision_is_one_invalid_request(
    api: LocalEngine, project_dir: Path, revision: str
) -> None:
    async with _transport(api, project_dir) as peer:
        await _open(peer, revision)
        await peer.send(_frame([_ping(11), _ping(12)]))
        answer = await peer.line()
        assert answer["id"] is None and answer["error"]["code"] == types.INVALID_REQUEST


@pytest.mark.req("SRV-01")
@pytest.mark.anyio
async def test_a_batch_before_initialize_is_one_invalid_request(api: LocalEngine, project_dir: Path) -> None:
    async with _transport(api, project_dir) as peer:
        await peer.send(_frame([_ping(11), _ping(12)]))
        assert (await peer.line())["error"]["code"] == types.INVALID_REQUEST
        await peer.send(json.dumps(_ping(2)).encode() + b"\n")
        assert (await peer.line())["id"] == 2


def _message(doc: dict[str, Any]) -> types.JSONRPCMessage:
    message, error = decode_frame(json.dumps(doc).encode())
    assert message is not None and error is None
    return message


@pytest.mark.req("SRV-01")
def test_a_cancelled_member_is_left_out_and_the_rest_is_written_once() -> None:
    batches = Batches()
    batches.request_seen(
        _message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}})
    )
    assert batches.accepted
    messages, now = batches.split(json.dumps([_ping(1), _ping(2)]).encode(), decode_frame)
    assert len(messages) == 2 and now is None
    held, whole = batches.take_answer(_message({"jsonrpc": "2.0", "id": 1, "result": {}}), b'{"id":1}')
    assert held and whole is None
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    assert batches.request_seen(_message(cancel)) == b'[{"id":1}]\n'
    held, whole = batches.take_answer(_message({"jsonrpc": "2.0", "id": 2, "result": {}}), b'{"id":2}')
    assert not held and whole is None  # a late answer is no batch's any more: written alone


@pytest.mark.req("SRV-01")
def test_the_answer_to_initialize_names_the_revision_that_holds() -> None:
    batches = Batches()
    batches.request_seen(
        _message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}})
    )
    batches.take_answer(_message({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18"}}), b"{}")
    assert not batches.accepted
