"""The stdio front and the relay hand the client's stdin and stdout to the server behind them (issue 15).

First the server's side alone: what :class:`Handover` takes from the socket, then the bounded
transport in process over a socketpair played by the test as the front (a line cut in two by
the handover, the mark both ways, the lifetime count across both ways in, the end of the
socket ending the session). Then the real processes: the full server behind the front and
the headless engine behind the relay hold the client's own pipe after the first exchanges,
and a SIGKILL of the front or relay still ends the session (SRV-21, SRV-22).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.mcp.server.app import build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.handover import MARK, Handover
from shadowcode.mcp.server.stdio import StdioLimits, stdio_transport
from tests.support.engine import PY, cli_env, headless_engine
from tests.support.process import ANSWER_SECONDS, INIT, ServerProcess, alive, wait_for

pytestmark = [
    pytest.mark.req("SRV-25"),
    pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _frame(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def _send_fds(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


# --- Handover alone ---------------------------------------------------------------------


def test_the_mark_with_two_descriptors_hands_over_and_is_not_passed_on() -> None:
    ours, theirs = socket.socketpair()
    read_end, write_end = os.pipe()
    handover = Handover(theirs.fileno())
    try:
        ours.sendall(b'{"partial":')
        _send_fds(ours, MARK, [read_end, write_end])
        ours.sendall(b"after")
        assert handover.receive() == b'{"partial":'
        assert handover.taken
        assert handover.receive() == b"after"  # the socket goes on carrying bytes; the server stops reading it
        assert handover.stdout is not None and handover.stdin is not None
        os.write(handover.stdout, b"through")
        assert os.read(handover.stdin, 16) == b"through"  # the two ends of the test's pipe, handed over
    finally:
        handover.close()
        for end in (ours, theirs):
            end.close()
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize(("data", "count"), [(b"x", 2), (MARK, 3), (MARK, 1)])
def test_descriptors_without_the_mark_or_not_two_are_closed_and_ignored(data: bytes, count: int) -> None:
    ours, theirs = socket.socketpair()
    pipes = [os.pipe() for _ in range(count)]
    handover = Handover(theirs.fileno())
    before = set(os.listdir("/proc/self/fd"))
    try:
        _send_fds(ours, data, [p[0] for p in pipes])
        assert handover.receive() == data
        assert not handover.taken
        assert set(os.listdir("/proc/self/fd")) <= before  # every received copy was closed again
    finally:
        handover.close()
        for end in (ours, theirs):
            end.close()
        for pair in pipes:
            for fd in pair:
                os.close(fd)


# --- the transport in process, the test as the front -------------------------------------


class _Front:
    """The test's side: the socket the server reads at first, and the client's pipes it hands over."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.stdin_r, self.stdin_w = os.pipe()  # the client writes stdin_w
        self.stdout_r, self.stdout_w = os.pipe()  # the client reads stdout_r
        for fd in (self.sock.fileno(), self.stdout_r):
            os.set_blocking(fd, False)

    async def read(self, fd: int) -> bytes:
        with anyio.fail_after(10):
            while True:
                try:
                    return os.read(fd, 65536)
                except BlockingIOError:
                    await anyio.wait_readable(fd)

    async def answer(self, fd: int) -> dict[str, Any]:
        data = b""
        while not data.endswith(b"\n"):
            chunk = await self.read(fd)
            assert chunk, "EOF before an answer"
            data += chunk
        return json.loads(data)

    def hand_over(self) -> None:
        _send_fds(self.sock, MARK, [self.stdin_r, self.stdout_w])

    def close(self) -> None:
        self.sock.close()
        for fd in (self.stdin_r, self.stdin_w, self.stdout_r, self.stdout_w):
            os.close(fd)


@asynccontextmanager
async def _served(api: LocalEngine, project_dir: Path, lim: StdioLimits) -> AsyncIterator[tuple[_Front, anyio.Event]]:
    ours, theirs = socket.socketpair()
    read_fd = os.dup(theirs.fileno())
    write_fd = os.dup(theirs.fileno())
    theirs.close()
    for fd in (read_fd, write_fd):
        os.set_blocking(fd, False)
    server, direct = build_session(ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access()))
    handover = Handover(read_fd)
    finished = anyio.Event()

    async def serve() -> None:
        try:
            async with stdio_transport(read_fd, write_fd, lim, direct=direct, handover=handover) as streams:
                await server.run(*streams, server.create_initialization_options())
        finally:
            finished.set()

    front = _Front(ours)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            yield front, finished
            tg.cancel_scope.cancel()
    finally:
        handover.close()
        front.close()
        for fd in (read_fd, write_fd):
            os.close(fd)


@pytest.mark.anyio
async def test_a_line_cut_by_the_handover_is_read_whole_and_the_output_changes_pipes_after_the_mark(
    api: LocalEngine, project_dir: Path
) -> None:
    async with _served(api, project_dir, StdioLimits()) as (front, finished):
        front.sock.sendall(_frame(INIT))
        assert (await front.answer(front.sock.fileno()))["id"] == INIT["id"]
        call = _frame({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shadow_status"}})
        front.sock.sendall(call[:20])
        front.hand_over()
        os.write(front.stdin_w, call[20:])
        assert await front.read(front.sock.fileno()) == MARK  # the server's last byte down the socket
        front.sock.sendall(MARK)  # everything before it is out
        answer = await front.answer(front.stdout_r)
        assert answer["id"] == 2 and answer["result"]["isError"] is False
        os.write(front.stdin_w, _frame({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        assert await front.answer(front.stdout_r) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        front.sock.shutdown(socket.SHUT_RDWR)  # the front is gone: the session ends
        with anyio.fail_after(10):
            await finished.wait()


@pytest.mark.anyio
@pytest.mark.parametrize("extra", [0, 1])
async def test_the_lifetime_limit_counts_the_bytes_of_both_ways_in(
    api: LocalEngine, project_dir: Path, extra: int
) -> None:
    """At the limit the session serves; one byte past it, sent after the handover, closes it."""
    init = _frame(INIT)
    ping = _frame({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    lim = StdioLimits(lifetime_max_bytes=len(init) + len(ping) + 1)
    async with _served(api, project_dir, lim) as (front, finished):
        front.sock.sendall(init)
        await front.answer(front.sock.fileno())
        front.hand_over()
        os.write(front.stdin_w, ping + b"\n")  # a blank line counts as bytes too: exactly at the limit
        assert await front.read(front.sock.fileno()) == MARK
        front.sock.sendall(MARK)
        assert (await front.answer(front.stdout_r))["id"] == 9
        os.write(front.stdin_w, b"\n" * extra)
        with anyio.move_on_after(3 if extra else 1):
            await finished.wait()
        assert finished.is_set() == bool(extra)


# --- the real processes -----------------------------------------------------------------


def _pipe_inode(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def _holds(pid: int, target: str) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


CALL = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}}


@pytest.mark.req("SRV-07", "SRV-21")
def test_the_server_behind_the_front_reads_the_clients_pipe_and_a_killed_front_still_ends_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    server = ServerProcess(project, tmp_path / "home", front=True)
    try:
        server.initialize()
        (child,) = wait_for(server.child_pids)
        stdin = _pipe_inode(server.proc.stdin.fileno())  # type: ignore[union-attr]
        for request_id in (5, 6):  # the first call waits for the child; the one after it goes through the handover
            server.send({**CALL, "id": request_id})
            assert server.read_until_response(request_id)["result"]["isError"] is False
        wait_for(lambda: _holds(child, stdin))
        server.send({**CALL, "id": 7})
        assert server.read_until_response(7)["result"]["isError"] is False
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(ANSWER_SECONDS)
        wait_for(lambda: not alive(child))  # the child follows its front (PR_SET_PDEATHSIG)
    finally:
        server.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="unix sockets and process groups")
@pytest.mark.req("SRV-21", "SRV-22")
def test_the_engine_reads_the_clients_pipe_after_the_handover_and_a_killed_relay_ends_the_session(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with headless_engine(home) as engine:
        engine_pid = engine.proc.pid
        relay = subprocess.Popen(
            [PY, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve"],
            env=cli_env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert relay.stdin is not None and relay.stdout is not None
            stdin = _pipe_inode(relay.stdin.fileno())
            relay.stdin.write(_frame(INIT) + _frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            relay.stdin.flush()
            assert json.loads(relay.stdout.readline())["id"] == INIT["id"]
            for request_id in (5, 6, 7):
                relay.stdin.write(_frame({**CALL, "id": request_id}))
                relay.stdin.flush()
                answer = json.loads(relay.stdout.readline())
                assert answer["id"] == request_id
                assert answer["result"]["structuredContent"]["engine"] == {"mode": "attached"}
            wait_for(lambda: _holds(engine_pid, stdin))
            relay.kill()
            relay.wait(ANSWER_SECONDS)
            wait_for(lambda: not _holds(engine_pid, stdin))  # the session ended: its descriptors are closed
            assert alive(engine_pid)
        finally:
            if relay.poll() is None:
                relay.kill()
                relay.wait(ANSWER_SECONDS)
            for stream in (relay.stdin, relay.stdout):
                if stream is not None:
                    stream.close()
