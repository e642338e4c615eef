"""Discovery answered from the recording by the stdio front and the relay (issue 15, SRV-03).

The state machine both share: what is answered here, what goes on under an id of ours and is
dropped when the server answers it, when answering stops; and the line cutting both use.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from shadowcode.limits import STDIO_FRAME_MAX_BYTES
from shadowcode.mcp.server.discovery import load_manifest
from shadowcode.mcp.server.early_answers import EarlyAnswers
from shadowcode.mcp.server.stdio_pipes import ClientLines

pytestmark = pytest.mark.req("SRV-03")

MANIFEST = load_manifest()
INIT = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}


def _line(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode("utf-8") + b"\n"


def _early() -> EarlyAnswers:
    assert MANIFEST is not None
    return EarlyAnswers(MANIFEST, "ours-")


def test_a_recorded_handshake_is_answered_here_and_sent_on_under_an_id_of_ours() -> None:
    early = _early()
    answer, forward, request = early.take(_line(INIT))

    assert answer is not None and request is None
    assert json.loads(answer)["id"] == 7 and json.loads(answer)["result"]["protocolVersion"] == "2025-06-18"
    sent = json.loads(forward)
    assert sent["id"] == "ours-0" and sent["params"] == INIT["params"]
    assert early.take(_line(INITIALIZED)) == (None, _line(INITIALIZED), None)
    answer, forward, _ = early.take(_line(LIST))
    assert answer is not None and len(json.loads(answer)["result"]["tools"]) == 17
    assert json.loads(forward)["id"] == "ours-1"
    assert early.waiting


def test_the_servers_answer_to_an_id_of_ours_is_dropped_once_and_nothing_else_is() -> None:
    early = _early()
    early.take(_line(INIT))
    ours = _line({"jsonrpc": "2.0", "id": "ours-0", "result": {}})

    assert not early.drop(_line({"jsonrpc": "2.0", "id": 7, "result": {}}))  # the client's own id
    assert not early.drop(b'{"jsonrpc": "2.0", "id": "ours-0", "res')  # not a whole message
    assert early.drop(ours)
    assert not early.waiting
    assert not early.drop(ours)  # once


def test_a_request_the_recording_cannot_answer_first_ends_the_answering_here() -> None:
    early = _early()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shadow_status"}}
    assert early.take(_line(call)) == (None, _line(call), (1, "tools/call"))
    assert not early.answering
    assert early.take(_line(INIT))[0] is None  # a later handshake goes to the server


def _modern(request_id: int, method: str, **params: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}


def test_a_modern_request_sent_on_does_not_end_the_answering_of_modern_listings() -> None:
    early = _early()
    assert early.take(_line(_modern(1, "server/discover")))[0] is not None
    call = _modern(2, "tools/call", name="shadow_status", arguments={})
    assert early.take(_line(call)) == (None, _line(call), (2, "tools/call"))
    assert early.answering
    answer, _, _ = early.take(_line(_modern(3, "tools/list")))
    assert answer is not None and len(json.loads(answer)["result"]["tools"]) == 17


def test_the_first_listen_for_list_changes_is_acknowledged_here_and_the_servers_acknowledgement_dropped() -> None:
    early = _early()
    early.take(_line(_modern(1, "server/discover")))
    listen = _modern(2, "subscriptions/listen", notifications={"resourcesListChanged": True})
    ack, forward, request = early.take(_line(listen))
    assert ack is not None and forward == _line(listen) and request == (2, "subscriptions/listen")
    notice = json.loads(ack)
    assert notice["method"] == "notifications/subscriptions/acknowledged"
    assert notice["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 2}
    assert notice["params"]["notifications"] == {"resourcesListChanged": True}
    assert early.drop(_line({"jsonrpc": "2.0", "id": "ours-0", "result": {}}))  # the recorded discover's
    assert early.waiting  # the server's acknowledgement is still to come
    servers = {**notice, "params": {**notice["params"], "notifications": {"resourcesListChanged": True}}}
    assert early.drop(_line(servers))
    assert not early.waiting
    assert not early.drop(_line(servers))  # once


def test_a_listen_naming_task_ids_is_left_to_the_server() -> None:
    early = _early()
    early.take(_line(_modern(1, "server/discover")))
    listen = _modern(2, "subscriptions/listen", notifications={"taskIds": ["task_1"]})
    assert early.take(_line(listen)) == (None, _line(listen), (2, "subscriptions/listen"))


def test_a_request_without_modern_metadata_still_ends_the_answering_of_a_modern_session() -> None:
    early = _early()
    early.take(_line(_modern(1, "server/discover")))
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shadow_status"}}
    early.take(_line(call))
    assert not early.answering
    assert early.take(_line(_modern(3, "tools/list")))[0] is None


def test_after_stop_every_line_goes_to_the_server_unchanged() -> None:
    early = _early()
    early.stop()
    assert early.take(_line(INIT)) == (None, _line(INIT), (7, "initialize"))
    assert not early.waiting


def test_a_client_id_in_our_own_prefix_is_never_answered_here() -> None:
    early = _early()
    mimic = {**INIT, "id": "ours-0"}
    assert early.take(_line(mimic))[0] is None


def test_client_lines_are_cut_whole_and_one_at_the_bound_is_still_looked_at() -> None:
    lines = ClientLines(STDIO_FRAME_MAX_BYTES)
    at_bound = b"x" * STDIO_FRAME_MAX_BYTES

    assert lines.feed(b'{"a":1}\n{"b"') == [(True, b'{"a":1}\n')]
    assert lines.feed(b":2}\n") == [(True, b'{"b":2}\n')]
    assert lines.feed(at_bound) == []  # held: its newline may still come
    assert lines.feed(b"\n") == [(True, at_bound + b"\n")]
    assert lines.rest() == b""


def test_a_client_line_past_the_bound_passes_through_as_it_comes() -> None:
    lines = ClientLines(STDIO_FRAME_MAX_BYTES)
    past = b"x" * (STDIO_FRAME_MAX_BYTES + 1)

    assert lines.feed(past) == [(False, past)]
    assert lines.feed(b"yy") == [(False, b"yy")]  # still inside that line
    assert lines.feed(b'y\n{"c":3}\n') == [(False, b"y\n"), (True, b'{"c":3}\n')]
    assert lines.feed(b'{"d"') == [] and lines.rest() == b'{"d"'
