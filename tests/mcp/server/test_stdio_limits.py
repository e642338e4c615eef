"""Every stdio transport limit at the limit and one past it (SRV-25, SRV-01).

Two kinds of test: a live ``python -m shadowcode --workspace P mcp serve`` process with the
real constants, and the transport in process over ``os.pipe`` pairs with small
``StdioLimits`` overrides where the real numbers would only add waiting.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from shadowcode.engine.local import LocalEngine
from shadowcode.limits import (
    STDIO_CONNECTION_MAX_BYTES,
    STDIO_FRAME_MAX_BYTES,
    STDIO_FRAMES_PER_SECOND_MAX,
    STDIO_INIT_DEADLINE_SECONDS,
    STDIO_WRITE_DEADLINE_SECONDS,
)
from shadowcode.mcp.server.stdio import StdioLimits, decode_frame
from tests.support.process import INIT, ServerProcess
from tests.support.stdio_peer import in_process_transport as _transport

RSS_BOUND_KIB = 200 * 1024
CLOSING = "shadowcode: closing the connection:"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    project = tmp_path / "project"
    project.mkdir()
    proc = ServerProcess(project, tmp_path / "home")
    yield proc
    proc.close()


def _ping(request_id: int | str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()


def _ping_of_size(request_id: int, size: int) -> bytes:
    """A ping frame of exactly ``size`` bytes, newline excluded."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"_meta": {"pad": ""}}})
    pad = size - len(head)
    assert pad >= 0
    return head.replace('"pad": ""', '"pad": "' + "x" * pad + '"').encode()


def _assert_closed_cleanly(proc: ServerProcess, reason: str) -> str:
    assert proc.read_line(timeout=15) is None
    assert proc.wait_exit(timeout=15) == 0
    stderr = proc.stderr_text()
    assert f"{CLOSING} {reason}" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-4000:]
    return stderr


# --- live process, real constants ------------------------------------------------------


@pytest.mark.req("SRV-25")
def test_lifetime_of_32_mib_is_accepted_and_one_more_byte_closes(server: ServerProcess) -> None:
    frame_bytes = STDIO_FRAME_MAX_BYTES  # newline included: every frame is under the frame limit
    count = STDIO_CONNECTION_MAX_BYTES // frame_bytes
    assert count * frame_bytes == STDIO_CONNECTION_MAX_BYTES and count < STDIO_FRAMES_PER_SECOND_MAX
    for i in range(1, count + 1):
        server.send_raw(_ping_of_size(i, frame_bytes - 1) + b"\n")
    for i in range(1, count + 1):
        assert server.read_until_response(i, timeout=30)["result"] == {}
    assert server.peak_rss_kib() < RSS_BOUND_KIB
    server.send_raw(b"\n")
    _assert_closed_cleanly(server, f"the connection sent more than {STDIO_CONNECTION_MAX_BYTES} bytes")


@pytest.mark.req("SRV-25")
def test_blank_lines_count_as_frames_and_ten_thousand_of_them_close(server: ServerProcess) -> None:
    server.send_raw(b"\n" * (STDIO_FRAMES_PER_SECOND_MAX - 1) + _ping(1) + b"\n")
    assert server.read_until_response(1, timeout=20)["result"] == {}
    server.send_raw(b"\n" * 10_000)
    _assert_closed_cleanly(server, f"more than {STDIO_FRAMES_PER_SECOND_MAX} frames in one second")


@pytest.mark.req("SRV-25")
def test_client_that_never_reads_stdout_is_dropped_by_the_write_deadline(server: ServerProcess) -> None:
    server.initialize()
    stdin = server.proc.stdin
    assert stdin is not None
    os.set_blocking(stdin.fileno(), False)
    burst = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/list"}).encode() + b"\n" for i in range(20)
    )
    started = time.monotonic()
    bound = STDIO_WRITE_DEADLINE_SECONDS + 20
    exited = False
    while not exited and time.monotonic() - started < bound:
        with suppress(BlockingIOError, BrokenPipeError):
            os.write(stdin.fileno(), burst)  # 20 frames per half second stays under the frame rate
        try:
            server.proc.wait(timeout=0.5)
            exited = True
        except subprocess.TimeoutExpired:
            continue  # still running: send the next burst
    assert exited, "the server kept a client that never reads"
    assert time.monotonic() - started >= STDIO_WRITE_DEADLINE_SECONDS
    assert server.proc.returncode == 0
    stderr = server.stderr_text()
    assert f"{CLOSING} a response write took longer than {STDIO_WRITE_DEADLINE_SECONDS:g} seconds" in stderr
    assert "Traceback" not in stderr


@pytest.mark.req("SRV-25")
def test_client_closing_its_end_of_stdout_makes_the_server_exit_without_a_traceback(
    server: ServerProcess,
) -> None:
    server.initialize()
    assert server.proc.stdout is not None
    server.proc.stdout.close()  # EPIPE (or SIGPIPE) on the server's next write
    for i in range(1, 4):
        server.send_raw(_ping(i) + b"\n")
    assert server.wait_exit(timeout=15) == 0
    stderr = server.stderr_text()
    assert f"{CLOSING} stdout failed" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr


@pytest.mark.req("SRV-25")
def test_no_request_within_the_init_deadline_closes_and_one_just_before_is_served(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    silent = ServerProcess(project, tmp_path / "home-silent")
    late = ServerProcess(project, tmp_path / "home-late")
    try:
        started = time.monotonic()
        # Blank lines and a notification do not start the protocol.
        silent.send_raw(b"\n\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        silent.send_raw(b"\n")
        just_before = STDIO_INIT_DEADLINE_SECONDS - 1.0  # counted from spawn, so earlier than the server's clock
        with pytest.raises(TimeoutError):
            late.read_line(timeout=just_before)
        late.send_raw(_ping(1) + b"\n")
        assert late.read_until_response(1)["result"] == {}
        _assert_closed_cleanly(silent, f"no request within {STDIO_INIT_DEADLINE_SECONDS:g} seconds")
        assert time.monotonic() - started >= STDIO_INIT_DEADLINE_SECONDS
        late.send_raw(_ping(2) + b"\n")  # past the deadline and still open
        assert late.read_until_response(2)["result"] == {}
    finally:
        silent.close()
        late.close()


# --- the transport in process, small limits ----------------------------------------------


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_frame_of_exactly_the_limit_is_served_and_one_byte_more_closes(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lim = StdioLimits(frame_max_bytes=120)
    async with _transport(api, project_dir, lim) as peer:
        await peer.send(_ping_of_size(1, 120) + b"\n")
        assert (await peer.line())["id"] == 1
        await peer.send(_ping_of_size(2, 120) + b"\r\n")  # a CR before the newline is not part of the frame
        assert (await peer.line())["id"] == 2
        await peer.send(_ping_of_size(3, 121) + b"\n")
        assert await peer.closed_within(5)
    assert f"{CLOSING} a frame is longer than 120 bytes" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_an_overlong_frame_is_refused_before_its_newline_arrives(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with _transport(api, project_dir, StdioLimits(frame_max_bytes=120)) as peer:
        await peer.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": "' + b"x" * 200)
        assert await peer.closed_within(5)
    assert "a frame is longer than 120 bytes" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_lifetime_bytes_at_the_limit_are_served_and_one_more_byte_closes(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = _ping_of_size(1, 99) + b"\n"
    async with _transport(api, project_dir, StdioLimits(lifetime_max_bytes=4 * len(frame))) as peer:
        for _ in range(4):
            await peer.send(frame)
            assert (await peer.line())["result"] == {}
        await peer.send(b" ")
        assert await peer.closed_within(5)
    assert f"{CLOSING} the connection sent more than {4 * len(frame)} bytes" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_frame_rate_counts_blank_lines_and_closes_one_past(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lim = StdioLimits(frames_per_second_max=5)
    async with _transport(api, project_dir, lim) as peer:
        await peer.send(b"\n\n\n\n" + _ping(1) + b"\n")
        assert (await peer.line())["id"] == 1
    async with _transport(api, project_dir, lim) as peer:
        await peer.send(b"\n\n\n\n\n" + _ping(1) + b"\n")
        assert await peer.closed_within(5)
    assert f"{CLOSING} more than 5 frames in one second" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_only_a_request_meets_the_init_deadline(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lim = StdioLimits(init_deadline_seconds=0.5)
    async with _transport(api, project_dir, lim) as peer:
        notification = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        await peer.send(b"\nnot json\n" + notification + b"\n")
        assert (await peer.line())["error"]["code"] == -32700  # answered, but not a start
        assert await peer.closed_within(5)
    assert f"{CLOSING} no request within 0.5 seconds" in capsys.readouterr().err
    async with _transport(api, project_dir, lim) as peer:
        await peer.send(_ping(1) + b"\n")
        assert (await peer.line())["id"] == 1
        assert not await peer.closed_within(1.0)  # twice the deadline: still open
        await peer.send(_ping(2) + b"\n")
        assert (await peer.line())["id"] == 2


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_a_legacy_initialize_meets_the_init_deadline(api: LocalEngine, project_dir: Path) -> None:
    async with _transport(api, project_dir, StdioLimits(init_deadline_seconds=0.5)) as peer:
        await peer.send(json.dumps(INIT).encode() + b"\n")
        assert "result" in await peer.line()
        assert not await peer.closed_within(1.0)


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_a_client_that_stops_reading_is_dropped_after_the_write_deadline(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lim = StdioLimits(write_deadline_seconds=0.3, frames_per_second_max=1000)
    async with _transport(api, project_dir, lim) as peer:
        await peer.send(json.dumps(INIT).encode() + b"\n")
        assert "result" in await peer.line()
        await peer.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        started = time.monotonic()
        for i in range(1, 40):  # far more tools/list answers than a pipe holds
            await peer.send(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).encode() + b"\n")
            if peer.finished.is_set():
                break
        assert await peer.closed_within(5)
        assert time.monotonic() - started >= 0.3
    assert f"{CLOSING} a response write took longer than 0.3 seconds" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_a_broken_stdout_closes_the_connection(
    api: LocalEngine, project_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with _transport(api, project_dir, StdioLimits()) as peer:
        os.close(peer.read_fd)
        peer.read_fd = -1
        await peer.send(_ping(1) + b"\n")
        assert await peer.closed_within(5)
    err = capsys.readouterr().err
    assert f"{CLOSING} stdout failed ({os.strerror(errno.EPIPE)})" in err


# --- frame decoding ----------------------------------------------------------------------


@pytest.mark.req("SRV-01", "SRV-25")
@pytest.mark.parametrize(
    ("frame", "code", "error_id"),
    [
        (b"[" * 10_000 + b"]" * 10_000, -32700, None),
        (
            b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":' + b"[" * 10_000 + b"]" * 10_000 + b"}}",
            -32700,
            None,
        ),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', -32700, None),
        (b"\xff\xfe", -32700, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None),
        (b"[]", -32600, None),
        (b'"text"', -32600, None),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":3,"method":5}', -32600, 3),
        (b'{"jsonrpc":"1.0","id":"x","method":"ping"}', -32600, "x"),
    ],
)
def test_frames_that_are_not_json_rpc_get_an_error_never_an_exception(
    frame: bytes, code: int, error_id: object
) -> None:
    message, error = decode_frame(frame)
    assert message is None and error is not None
    assert error.error.code == code
    assert error.id == error_id


@pytest.mark.req("SRV-01")
def test_valid_messages_decode_without_an_error() -> None:
    for frame in (
        _ping(1),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":7,"result":{}}',
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"id","progress":1}}',
    ):
        message, error = decode_frame(frame)
        assert message is not None and error is None, frame
