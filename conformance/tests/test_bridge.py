"""The stdio bridge: any stdio MCP server over loopback Streamable HTTP for the official package (CONF-01)."""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from shadowcode_conformance.bridge import StdioBridge

SERVER = r"""
import json, os, sys
for raw in sys.stdin:
    msg = json.loads(raw)
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "0"}}
    else:
        result = {"seen_id": msg["id"], "pid": os.getpid()}
    if msg["method"] == "notify/me":
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
        sys.stdout.write(json.dumps(note) + "\n")
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _post(url: str, message: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.request("POST", parts.path, body=json.dumps(message), headers=sent)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _request(ident: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, **({"params": params} if params is not None else {})}


@pytest.fixture
def bridge(tmp_path: Path):
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    with StdioBridge([sys.executable, str(script)], dict(os.environ), tmp_path) as running:
        yield running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split()[2] != "Z"


@pytest.mark.req("CONF-01")
def test_each_http_session_gets_its_own_stdio_server_and_ends_with_delete(bridge: StdioBridge) -> None:
    hello = _request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    status, headers, body = _post(bridge.url, hello)
    assert status == 200 and json.loads(body)["result"]["protocolVersion"] == "2025-11-25"
    first = headers["mcp-session-id"]
    second = _post(bridge.url, hello)[1]["mcp-session-id"]
    assert first != second
    answers = [json.loads(_post(bridge.url, _request(5, "ping"), {"Mcp-Session-Id": s})[2]) for s in (first, second)]
    assert [a["id"] for a in answers] == [5, 5] and [a["result"]["seen_id"] for a in answers] == [5, 5]
    pids = {a["result"]["pid"] for a in answers}
    assert len(pids) == 2
    assert _post(bridge.url, _request(6, "ping"))[0] == 400
    assert _post(bridge.url, _request(7, "ping"), {"Mcp-Session-Id": "nope"})[0] == 404
    parts = urllib.parse.urlsplit(bridge.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("DELETE", parts.path, headers={"Mcp-Session-Id": first})
    assert conn.getresponse().status == 200
    conn.close()
    assert _post(bridge.url, _request(8, "ping"), {"Mcp-Session-Id": first})[0] == 404
    assert not _alive(answers[0]["result"]["pid"])


@pytest.mark.req("CONF-01")
def test_modern_requests_share_one_stdio_server_with_their_ids_rewritten_and_restored(bridge: StdioBridge) -> None:
    headers = {"MCP-Protocol-Version": "2026-07-28"}
    answers = [
        json.loads(_post(bridge.url, _request(1, "tools/list", {"_meta": ENVELOPE}), headers)[2]) for _ in range(2)
    ]
    assert [a["id"] for a in answers] == [1, 1]
    seen = [a["result"]["seen_id"] for a in answers]
    assert seen[0] != seen[1] and all(str(s).startswith("bridge-") for s in seen)
    assert answers[0]["result"]["pid"] == answers[1]["result"]["pid"]
    # Without the envelope, the request gets a child of its own, so the shared one keeps its era.
    alone = json.loads(_post(bridge.url, _request(2, "tools/list"), headers)[2])
    assert alone["id"] == 2 and alone["result"]["pid"] != answers[0]["result"]["pid"]


@pytest.mark.req("CONF-01")
def test_a_message_before_the_answer_turns_the_reply_into_an_event_stream(bridge: StdioBridge) -> None:
    status, headers, body = _post(bridge.url, _request(3, "notify/me", {"_meta": ENVELOPE}))
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert [e.get("method") for e in events] == ["notifications/message", None]
    assert events[1]["id"] == 3


@pytest.mark.req("CONF-01")
def test_the_bridge_refuses_foreign_hosts_and_origins_batches_and_bad_json(bridge: StdioBridge) -> None:
    port = urllib.parse.urlsplit(bridge.url).port
    ping = _request(1, "ping", {"_meta": ENVELOPE})
    assert _post(bridge.url, ping, {"Host": f"evil.example.com:{port}"})[0] == 403
    assert _post(bridge.url, ping, {"Origin": "http://evil.example.com"})[0] == 403
    assert _post(bridge.url, [ping, ping])[0] == 400
    parts = urllib.parse.urlsplit(bridge.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", parts.path, body=b"not json", headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 400 and json.loads(resp.read())["error"]["code"] == -32700
    conn.close()


@pytest.mark.req("CONF-01")
def test_leaving_the_bridge_stops_every_stdio_server_it_started(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    with StdioBridge([sys.executable, str(script)], dict(os.environ), tmp_path) as running:
        hello = _request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        session = _post(running.url, hello)[1]["mcp-session-id"]
        pid = json.loads(_post(running.url, _request(1, "ping"), {"Mcp-Session-Id": session})[2])["result"]["pid"]
        shared = json.loads(_post(running.url, _request(1, "ping", {"_meta": ENVELOPE}))[2])["result"]["pid"]
        assert _alive(pid) and _alive(shared)
    assert not _alive(pid) and not _alive(shared)
