"""A child leading its own process group: argv check, pipes, stop sequence, live members, output tail."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from shadowcode.errors import ToolError, UpstreamServerError
from shadowcode.limits import PROCESS_TERM_GRACE_SECONDS
from shadowcode.process_group import GroupChild, OutputTail, pdeathsig_preexec, pids_alive

pytestmark = [
    pytest.mark.req("SRV-21", "CLI-19"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups are checked through /proc"),
]

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}

STUBBORN = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _wait_dead(pid: int, timeout: float = 5.0) -> bool:
    """Wait (bounded) until ``pid`` has exited; True when it has (zombie or gone)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


async def _read_until(fd: int, marker: bytes) -> bytes:
    seen = b""
    with anyio.fail_after(10):
        while marker not in seen:
            await anyio.wait_readable(fd)
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.req("SRV-21")
def test_pids_alive_lists_live_group_members_only() -> None:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert pids_alive(proc.pid) == [proc.pid]
        proc.kill()
        assert _wait_dead(proc.pid)
        assert pids_alive(proc.pid) == []  # a zombie does not count
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("argv", [[], "echo", ["echo", 1], ["echo", "a\x00b"]])
def test_a_bad_argv_is_refused_before_anything_starts(argv: object) -> None:
    with pytest.raises(ToolError):
        GroupChild(argv, Path.cwd(), ENV)  # type: ignore[arg-type]


def test_a_command_that_cannot_start_raises_the_given_error_class() -> None:
    with pytest.raises(UpstreamServerError, match="cannot start"):
        GroupChild(["no-such-command-anywhere"], Path.cwd(), ENV, error=UpstreamServerError)


def test_pdeathsig_preexec_is_offered_on_linux() -> None:
    assert callable(pdeathsig_preexec(os.getpid()))


@pytest.mark.anyio
async def test_a_command_child_leads_its_group_with_merged_output_and_no_stdin() -> None:
    code = (
        "import os, sys\n"
        "print(os.getpgid(0), os.getsid(0), flush=True)\n"
        "sys.stderr.write('err\\n')\n"
        "sys.stderr.flush()\n"
        "print(sys.stdin.read() == '', flush=True)\n"
    )
    child = GroupChild([PY, "-c", code], Path.cwd(), ENV)
    try:
        assert child.in_fd is None and child.err_fd is None
        out = await _read_until(child.out_fd, b"True")
        with anyio.fail_after(10):
            await child.wait_exit()
        assert child.exit_status() == (0, None)
        assert not child.reaped  # exited, not yet reaped
    finally:
        with anyio.fail_after(10):
            await child.stop()
        child.close_pipe()
    pgid, sid = (int(x) for x in out.split()[:2])
    assert pgid == sid == child.pid
    assert b"err" in out
    assert child.reaped and child.exit_status() == (0, None)


@pytest.mark.anyio
async def test_a_protocol_child_gets_three_separate_pipes() -> None:
    code = "import sys; line = sys.stdin.readline(); sys.stdout.write('out:' + line); sys.stderr.write('err\\n')"
    child = GroupChild([PY, "-c", code], Path.cwd(), ENV, protocol_pipes=True)
    try:
        assert child.in_fd is not None and child.err_fd is not None
        os.write(child.in_fd, b"hi\n")
        assert await _read_until(child.out_fd, b"\n") == b"out:hi\n"
        assert await _read_until(child.err_fd, b"\n") == b"err\n"
    finally:
        with anyio.fail_after(10):
            await child.stop()
        child.close_pipe()


@pytest.mark.anyio
async def test_stop_terms_the_group_waits_the_grace_then_kills_and_reaps() -> None:
    child = GroupChild([PY, "-c", STUBBORN], Path.cwd(), ENV)
    try:
        await _read_until(child.out_fd, b"ready")
        started = anyio.current_time()
        with anyio.fail_after(10):
            await child.stop()
        took = anyio.current_time() - started
    finally:
        child.close_pipe()
    assert child.term_sent and child.kill_sent and child.reaped
    assert child.exit_status() == (None, signal.SIGKILL)
    assert PROCESS_TERM_GRACE_SECONDS <= took < PROCESS_TERM_GRACE_SECONDS + 5
    assert pids_alive(child.pid) == []
    with anyio.fail_after(5):
        await child.stop()  # a repeated stop only finishes what is left: nothing


def test_output_tail_keeps_the_newest_bytes_exactly_at_and_past_its_bound() -> None:
    at = OutputTail(4)
    at.add(b"ab")
    at.add(b"cd")
    assert (at.text(), at.truncated) == ("abcd", False)
    at.add(b"e")
    assert (at.text(), at.truncated) == ("bcde", True)


def test_output_tail_never_starts_inside_a_utf8_character() -> None:
    tail = OutputTail(7)
    tail.add("€".encode() * 3)  # 9 bytes: the kept 7 start with two continuation bytes
    assert tail.text() == "€€"
