"""``mcp serve`` as a real process: stdout purity, bad frames, frame and rate limits (SRV-01, SRV-25)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowcode.limits import STDIO_FRAME_MAX_BYTES, STDIO_FRAMES_PER_SECOND_MAX
from tests.support.process import INIT, ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    project = tmp_path / "project"
    project.mkdir()
    proc = ServerProcess(project, tmp_path / "home")
    yield proc
    proc.close()


def _ping_of_size(request_id: int, size: int) -> bytes:
    """A ping request frame of exactly ``size`` bytes (newline excluded)."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"_meta": {"pad": ""}}})
    pad = size - len(head)
    assert pad >= 0
    return head.replace('"pad": ""', '"pad": "' + "x" * pad + '"').encode()


@pytest.mark.req("SRV-01")
def test_every_stdout_line_is_json_rpc(server: ServerProcess) -> None:
    server.initialize()
    for i in range(1, 40):
        server.send(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}}
        )
        assert "result" in server.read_until_response(i)
    server.proc.stdin.close()  # type: ignore[union-attr]
    assert server.read_line() is None
    assert server.wait_exit() == 0


@pytest.mark.req("SRV-01")
def test_not_json_gets_a_parse_error_and_the_connection_stays_open(server: ServerProcess) -> None:
    server.initialize()
    server.send_raw(b"this is not json\n")
    error = json.loads(server.read_line() or b"{}")
    assert error["error"]["code"] == -32700 and error["id"] is None
    server.send_raw(b'{"id": 7, "method": "ping"}\n')
    assert server.read_until_response(7)["error"]["code"] == -32600
    server.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert server.read_until_response(8)["result"] == {}


@pytest.mark.req("SRV-25")
def test_invalid_utf8_inside_a_frame_is_answered_not_fatal(server: ServerProcess) -> None:
    server.initialize()
    server.send_raw(b'{"jsonrpc": "2.0", "id": 3, "method": "ping\xff\xfe"}\n')
    line = server.read_line()
    assert line is not None and "error" in json.loads(line)
    server.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    assert server.read_until_response(4)["result"] == {}


@pytest.mark.req("SRV-25")
def test_frame_split_across_one_byte_writes_is_reassembled(server: ServerProcess) -> None:
    server.initialize()
    for byte in json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode() + b"\n":
        server.send_raw(bytes([byte]))
    assert server.read_until_response(5)["result"] == {}


@pytest.mark.req("SRV-25")
def test_frame_at_the_limit_is_accepted_and_one_byte_more_closes(server: ServerProcess) -> None:
    server.initialize()
    server.send_raw(_ping_of_size(9, STDIO_FRAME_MAX_BYTES) + b"\n")
    assert server.read_until_response(9, timeout=20)["result"] == {}
    server.send_raw(_ping_of_size(10, STDIO_FRAME_MAX_BYTES + 1) + b"\n")
    assert server.read_line() is None
    assert server.wait_exit() == 0
    assert "longer than" in server.stderr_text()


@pytest.mark.req("SRV-25")
def test_rate_limit_accepts_the_limit_and_closes_one_past(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    ok = ServerProcess(project, tmp_path / "home")
    try:
        frames = [
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode()
            for i in range(1, STDIO_FRAMES_PER_SECOND_MAX + 1)
        ]
        ok.send_raw(b"\n".join(frames) + b"\n")
        assert ok.read_until_response(STDIO_FRAMES_PER_SECOND_MAX, timeout=20)["result"] == {}
    finally:
        ok.close()
    over = ServerProcess(project, tmp_path / "home")
    try:
        frames = [b"" for _ in range(STDIO_FRAMES_PER_SECOND_MAX)] + [b'{"jsonrpc":"2.0","id":1,"method":"ping"}']
        over.send_raw(b"\n".join(frames) + b"\n")
        assert over.read_line() is None
        assert over.wait_exit() == 0
        assert "frames in one second" in over.stderr_text()
    finally:
        over.close()


@pytest.mark.req("SRV-25")
def test_stdin_closed_mid_frame_ends_the_server_cleanly(server: ServerProcess) -> None:
    server.initialize()
    server.send_raw(b'{"jsonrpc": "2.0", "id": 11, "meth')
    server.proc.stdin.close()  # type: ignore[union-attr]
    assert server.read_line() is None
    assert server.wait_exit() == 0


@pytest.mark.req("SRV-01")
def test_requests_read_before_stdin_eof_are_still_answered(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    server = ServerProcess(project, tmp_path / "home")
    try:

        def call(request_id: int, name: str) -> dict[str, object]:
            params = {"name": name, "arguments": {}}
            return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

        frames = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                  call(1, "shadow_understand"), call(2, "shadow_status")]  # fmt: skip
        server.send_raw(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        server.proc.stdin.close()  # type: ignore[union-attr]
        seen = set()
        while (line := server.read_line(timeout=20)) is not None:
            seen.add(json.loads(line).get("id"))
        assert {0, 1, 2} <= seen
        assert server.wait_exit() == 0
    finally:
        server.close()
