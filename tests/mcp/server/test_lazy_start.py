"""A stdio session served before the SDK is loaded (issue 32): the same answers, the same limits.

The transport runs in process twice over pipes, once with the SDK-free start and once with
the SDK serving from the first frame, and the client must see the same JSON documents in
the same order: the recorded discovery, read-only tool calls, then whatever wakes the SDK
and everything after it. The SDK wakes exactly when a frame needs it, and not before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from shadowcode.engine.local import LocalEngine
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS
from shadowcode.mcp.server.stdio import StdioLimits
from tests.support.stdio_peer import Peer, in_process_transport

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-03"), pytest.mark.req("SRV-25")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _frame(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def _request(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        doc["params"] = params
    return doc


def _call(request_id: object, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _request(request_id, "tools/call", {"name": name, "arguments": arguments})


def _initialize(revision: str, request_id: object = 1) -> dict[str, Any]:
    params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return _request(request_id, "initialize", params)


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ASLEEP = [
    _request(2, "ping"),
    _request(3, "tools/list"),
    _request(4, "prompts/list"),
    _request(5, "resources/templates/list"),
    _call(6, "shadow_status", {}),
    _call("s-7", "shadow_tools", {}),
    _call(8, "shadow_sessions", {"limit": "many"}),  # invalid arguments: an isError result
]
"""Requests answered without the SDK after the handshake: recorded discovery, read-only tools."""
WAKING = [
    _request(9, "resources/list"),
    _call(10, "shadow_memory", {"action": "read"}),  # not read-only: the direct path takes it only now
    _request(11, "ping"),
    _request(12, "no/such/method"),
    _initialize("2025-06-18", 13),  # a second initialize
]


async def _answers(peer: Peer, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    answers = []
    for frame in frames:
        await peer.send(_frame(frame))
        if "id" in frame:
            answers.append(await peer.line())
    return answers


async def _session(api: LocalEngine, project_dir: Path, revision: str, *, lazy: bool) -> tuple[list[Any], bool]:
    """Every answer of a whole session, and whether the SDK was still asleep after :data:`ASLEEP`."""
    async with in_process_transport(api, project_dir, direct=True, lazy=lazy) as peer:
        first = await _answers(peer, [_initialize(revision), INITIALIZED, *ASLEEP])
        asleep = peer.lazy is not None and not peer.lazy.woken
        rest = await _answers(peer, WAKING)
        assert peer.lazy is None or peer.lazy.woken
        return first + rest, asleep


@pytest.mark.parametrize("revision", sorted(HANDSHAKE_REVISIONS))
async def test_a_session_is_answered_exactly_as_by_the_sdk_and_wakes_it_only_when_needed(
    api: LocalEngine, project_dir: Path, revision: str
) -> None:
    through_sdk, _ = await _session(api, project_dir, revision, lazy=False)
    lazily, asleep = await _session(api, project_dir, revision, lazy=True)
    assert asleep, "discovery and read-only tools woke the SDK"
    assert lazily == through_sdk
    assert [a["id"] for a in lazily] == [1, *(f["id"] for f in ASLEEP + WAKING)]  # the kept handshake's answer dropped
    assert (
        lazily[5]["result"]["isError"] is False
        and lazily[5]["result"]["structuredContent"]["engine"]["mode"] == "temporary"
    )
    assert "error" in lazily[-2] and "error" not in lazily[-4]


@pytest.mark.parametrize(
    "frames",
    [
        [_request(1, "tools/list"), _initialize("2025-06-18", 2)],  # a request before initialize
        [_initialize("1999-01-01"), INITIALIZED, _request(2, "tools/list")],  # a revision not recorded
        [INITIALIZED, _initialize("2025-06-18", 2), _request(3, "tools/list")],  # initialized first
        [b"not json"],  # a frame that is not JSON-RPC
        [
            _initialize("2025-03-26"),
            INITIALIZED,
            b'[{"jsonrpc": "2.0", "id": 2, "method": "ping"}, ' + _frame(_call(3, "shadow_status", {})).strip() + b"]",
        ],
    ],
    ids=["request-first", "unknown-revision", "initialized-first", "not-json", "batch-on-2025-03-26"],
)
async def test_what_the_recording_cannot_answer_goes_to_the_sdk_unchanged(
    api: LocalEngine, project_dir: Path, frames: list[Any]
) -> None:
    async def run(lazy: bool) -> list[object]:
        async with in_process_transport(api, project_dir, direct=True, lazy=lazy) as peer:
            answers = []
            for frame in frames:
                await peer.send(frame + b"\n" if isinstance(frame, bytes) else _frame(frame))
                if isinstance(frame, bytes) or "id" in frame:
                    answers.append(await peer.frame())
            assert peer.lazy is None or peer.lazy.woken
            return answers

    assert await run(lazy=True) == await run(lazy=False)


async def test_a_cancellation_before_the_sdk_is_needed_wakes_nothing(api: LocalEngine, project_dir: Path) -> None:
    async with in_process_transport(api, project_dir, direct=True, lazy=True) as peer:
        await _answers(peer, [_initialize("2025-06-18"), INITIALIZED])
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        assert await _answers(peer, [cancel, _request(2, "ping")]) == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
        assert peer.lazy is not None and not peer.lazy.woken


async def test_the_session_ends_at_eof_without_ever_loading_the_sdk(api: LocalEngine, project_dir: Path) -> None:
    async with in_process_transport(api, project_dir, direct=True, lazy=True) as peer:
        await _answers(peer, [_initialize("2025-06-18"), INITIALIZED, _call(2, "shadow_status", {})])
        os.close(peer.write_fd)
        peer.write_fd = -1
        assert await peer.closed_within(10)
        assert peer.lazy is not None and not peer.lazy.woken


def _sized_call(request_id: int, size: int) -> bytes:
    """A ``shadow_status`` call of exactly ``size`` bytes (newline excluded), padded in its ``_meta``."""
    bare = json.dumps(
        {**_call(request_id, "shadow_status", {}), "params": {"name": "shadow_status", "_meta": {"pad": ""}}}
    )
    frame = bare.replace('"pad": ""', '"pad": "' + "x" * (size - len(bare)) + '"').encode()
    assert len(frame) == size
    return frame


async def test_the_transport_limits_hold_before_the_sdk_is_loaded(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A frame at the limit is served and one byte more closes the connection while the SDK sleeps (SRV-25)."""
    async with in_process_transport(api, project_dir, StdioLimits(frame_max_bytes=400), direct=True, lazy=True) as peer:
        await _answers(peer, [_initialize("2025-06-18"), INITIALIZED])
        await peer.send(_sized_call(2, 400) + b"\n")
        assert (await peer.line())["result"]["isError"] is False
        await peer.send(_sized_call(3, 401) + b"\n")
        assert await peer.closed_within(5)
        assert peer.lazy is not None and not peer.lazy.woken
    assert "a frame is longer than 400 bytes" in capsys.readouterr().err


def test_the_handshake_revisions_are_the_sdks_before_2026() -> None:
    assert {v for v in KNOWN_PROTOCOL_VERSIONS if v < "2026"} == HANDSHAKE_REVISIONS


async def test_a_client_id_like_ours_is_answered_after_the_wake(api: LocalEngine, project_dir: Path) -> None:
    """Ids the recording used for answers it never sent on are not awaited from the SDK: a client
    request under such an id after the wake gets its answer, as with the SDK from the first frame."""
    frames = [
        _initialize("2025-06-18"),
        INITIALIZED,
        _request(2, "tools/list"),  # answered here; its id of ours never reaches the SDK
        _request("shadowcode-lazy-0", "resources/list"),  # wakes the SDK
        _request("shadowcode-lazy-1", "ping"),
    ]

    async def run(lazy: bool) -> list[Any]:
        async with in_process_transport(api, project_dir, direct=True, lazy=lazy) as peer:
            return await _answers(peer, frames)

    lazily = await run(lazy=True)
    assert [a["id"] for a in lazily] == [1, 2, "shadowcode-lazy-0", "shadowcode-lazy-1"]
    assert lazily == await run(lazy=False)


async def test_a_waking_call_under_the_kept_initializes_id_is_answered_after_eof(
    api: LocalEngine, project_dir: Path
) -> None:
    """Dropping the SDK's answer to the kept initialize leaves a client request under the same id
    counted: EOF still waits for its answer, as with the SDK from the first frame."""
    async with in_process_transport(api, project_dir, direct=True, lazy=True) as peer:
        await _answers(peer, [_initialize("2025-06-18"), INITIALIZED])
        await peer.send(_frame(_call("shadowcode-lazy-0", "shadow_memory", {"action": "read"})))
        os.close(peer.write_fd)
        peer.write_fd = -1
        assert (await peer.line())["id"] == "shadowcode-lazy-0"
