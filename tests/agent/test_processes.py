"""Commands and background processes: output bounds, deadlines, group stops, reaping (ENG-04, SRV-21, SRV-23)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

import shadowcode
from shadowcode.agent.processes import CommandResult, ProcessManager
from shadowcode.errors import NotFound, ToolError
from shadowcode.limits import (
    BACKGROUND_OUTPUT_MAX_BYTES,
    BACKGROUND_PROCESSES_MAX,
    COMMAND_TIMEOUT_MAX_SECONDS,
    PROCESS_OUTPUT_MAX_BYTES,
    PROCESS_TERM_GRACE_SECONDS,
)
from shadowcode.process_group import pids_alive

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups are checked through /proc"),
]

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
REPO = Path(shadowcode.__file__).resolve().parents[1]
_PR_SET_CHILD_SUBREAPER = 36

# A leader that ignores SIGTERM, starts a grandchild that ignores it too, and reports both pids.
STUBBORN_FAMILY = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nprint('up', flush=True)\\ntime.sleep(60)"
child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
child.stdout.readline()
print("ready", os.getpid(), child.pid, flush=True)
time.sleep(60)
"""

STUBBORN = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)"
)

# The same, announcing itself through the FIFO named by its first argument instead of stdout.
STUBBORN_FIFO = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "with open(sys.argv[1], 'w', encoding='utf-8') as fifo:\n"
    "    fifo.write('ready')\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def manager() -> AsyncIterator[ProcessManager]:
    pm = ProcessManager()
    yield pm
    with anyio.fail_after(20):
        await pm.aclose()


@pytest.fixture
def subreaper() -> Iterator[None]:
    """Adopt orphaned grandchildren here, so a test can reap them (PID 1 may never do it)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("cannot become a child subreaper")
    try:
        yield
    finally:
        prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


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


def _reap_adopted(pid: int) -> None:
    """Reap an orphan adopted through the subreaper fixture once it has exited."""
    assert _wait_dead(pid)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


async def _cancel_when(ready: str, manager: ProcessManager, argv: list[str], seen: list[str]) -> float:
    """Run ``argv``, cancel the run once ``ready`` appears in its output; return the seconds the stop took."""
    got = anyio.Event()

    async def watch(text: str) -> None:
        seen.append(text)
        if ready in "".join(seen):
            got.set()

    async with anyio.create_task_group() as tg:

        async def go() -> None:
            await manager.run(argv, Path.cwd(), env=ENV, timeout_seconds=60, on_output=watch)
            raise AssertionError("the run should have been cancelled")

        tg.start_soon(go)
        with anyio.fail_after(10):
            await got.wait()
        started = time.monotonic()
        tg.cancel_scope.cancel()
    return time.monotonic() - started


# --- run --------------------------------------------------------------------------------


@pytest.mark.req("ENG-04")
async def test_run_returns_exit_code_and_combined_output(manager: ProcessManager) -> None:
    with anyio.fail_after(10):
        result = await manager.run(
            ["sh", "-c", "echo out; echo err >&2; exit 3"], Path.cwd(), env=ENV, timeout_seconds=10
        )
    assert isinstance(result, CommandResult)
    assert (result.exit_code, result.signal, result.timed_out, result.truncated) == (3, None, False, False)
    assert result.output == "out\nerr\n"
    assert result.duration_seconds > 0 and _gone(result.pid)


@pytest.mark.req("ENG-04")
async def test_run_passes_argv_literally_with_no_stdin_and_only_the_given_env(
    manager: ProcessManager, tmp_path: Path
) -> None:
    with anyio.fail_after(10):
        literal = await manager.run(["echo", "$HOME; rm -rf *"], tmp_path, env=ENV, timeout_seconds=10)
        stdin = await manager.run(["cat"], tmp_path, env=ENV, timeout_seconds=10)
        env = await manager.run(["env"], tmp_path, env=ENV | {"ONLY_THIS": "1"}, timeout_seconds=10)
        where = await manager.run(["pwd", "-P"], tmp_path, env=ENV, timeout_seconds=10)
    assert literal.output == "$HOME; rm -rf *\n"
    assert stdin.exit_code == 0 and stdin.output == ""
    assert sorted(env.output.split()) == sorted([f"{k}={v}" for k, v in ENV.items()] + ["ONLY_THIS=1"])
    assert where.output.strip() == str(tmp_path.resolve())


@pytest.mark.req("ENG-04")
async def test_run_starts_the_child_as_leader_of_its_own_group_and_session(manager: ProcessManager) -> None:
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    with anyio.fail_after(10):
        result = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=10)
    pid, pgid, sid = (int(x) for x in result.output.split())
    assert pid == pgid == sid == result.pid


@pytest.mark.req("ENG-04")
async def test_run_refuses_bad_commands_and_out_of_range_bounds(manager: ProcessManager) -> None:
    for argv in ([], ["no-such-command-anywhere"], ["echo", "a\x00b"]):
        with pytest.raises(ToolError):
            await manager.run(argv, Path.cwd(), env=ENV, timeout_seconds=5)
    for timeout in (0, -1, COMMAND_TIMEOUT_MAX_SECONDS + 0.001):
        with pytest.raises(ToolError, match="timeout_seconds"):
            await manager.run(["true"], Path.cwd(), env=ENV, timeout_seconds=timeout)
    for size in (0, PROCESS_OUTPUT_MAX_BYTES + 1):
        with pytest.raises(ToolError, match="output_max_bytes"):
            await manager.run(["true"], Path.cwd(), env=ENV, timeout_seconds=5, output_max_bytes=size)
    with anyio.fail_after(10):
        ok = await manager.run(
            ["true"],
            Path.cwd(),
            env=ENV,
            timeout_seconds=COMMAND_TIMEOUT_MAX_SECONDS,
            output_max_bytes=PROCESS_OUTPUT_MAX_BYTES,
        )
    assert ok.exit_code == 0


@pytest.mark.req("ENG-04")
async def test_output_over_the_cap_keeps_the_tail_and_never_blocks_the_child(manager: ProcessManager) -> None:
    code = "import sys; sys.stdout.write('a' * 1_000_000 + 'TAIL-END'); sys.stdout.flush()"
    with anyio.fail_after(20):
        result = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=20, output_max_bytes=100)
    assert result.exit_code == 0 and result.truncated is True
    assert len(result.output) == 100 and result.output.endswith("aTAIL-END")


@pytest.mark.req("ENG-04")
async def test_output_exactly_at_the_cap_is_not_truncated(manager: ProcessManager) -> None:
    code = "import sys; sys.stdout.write('b' * 100)"
    with anyio.fail_after(10):
        at = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=10, output_max_bytes=100)
        over = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=10, output_max_bytes=99)
    assert (at.output, at.truncated) == ("b" * 100, False)
    assert (over.output, over.truncated) == ("b" * 99, True)


@pytest.mark.req("ENG-04")
async def test_a_cut_tail_does_not_start_inside_a_utf8_character(manager: ProcessManager) -> None:
    code = "import sys; sys.stdout.buffer.write('€'.encode() * 10)"
    with anyio.fail_after(10):
        result = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=10, output_max_bytes=7)
    assert result.output == "€€" and result.truncated is True


@pytest.mark.req("ENG-04")
async def test_on_output_sees_the_output_as_it_arrives(manager: ProcessManager) -> None:
    seen: list[str] = []

    async def collect(text: str) -> None:
        seen.append(text)

    with anyio.fail_after(10):
        result = await manager.run(
            ["sh", "-c", "echo one; echo two"], Path.cwd(), env=ENV, timeout_seconds=10, on_output=collect
        )
    assert "".join(seen) == result.output == "one\ntwo\n"


@pytest.mark.req("ENG-04")
async def test_a_leader_killed_by_a_signal_reports_the_signal(manager: ProcessManager) -> None:
    with anyio.fail_after(10):
        result = await manager.run(["sh", "-c", "kill -9 $$"], Path.cwd(), env=ENV, timeout_seconds=10)
    assert (result.exit_code, result.signal) == (None, signal.SIGKILL)


@pytest.mark.req("ENG-04")
async def test_timeout_stops_the_group_and_says_so(manager: ProcessManager) -> None:
    with anyio.fail_after(10):
        result = await manager.run(["sleep", "60"], Path.cwd(), env=ENV, timeout_seconds=0.2)
    assert result.timed_out is True and result.signal == signal.SIGTERM and result.exit_code is None
    assert 0.2 <= result.duration_seconds < 5
    assert _gone(result.pid) and _group_gone(result.pid)


@pytest.mark.req("ENG-04", "SRV-21")
async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(
    manager: ProcessManager,
) -> None:
    seen: list[str] = []
    took = await _cancel_when("ready", manager, [PY, "-c", STUBBORN], seen)
    assert PROCESS_TERM_GRACE_SECONDS <= took < PROCESS_TERM_GRACE_SECONDS + 5


@pytest.mark.req("SRV-21")
async def test_cancellation_mid_run_leaves_no_process(manager: ProcessManager) -> None:
    seen: list[str] = []
    await _cancel_when("pid", manager, ["sh", "-c", "echo pid $$; exec sleep 60"], seen)
    pid = int("".join(seen).split()[1])
    assert _gone(pid)  # the leader was reaped, not just signalled
    assert _group_gone(pid)
    assert pids_alive(pid) == []


@pytest.mark.req("SRV-21")
async def test_a_grandchild_in_the_group_dies_with_the_command(manager: ProcessManager, subreaper: None) -> None:
    seen: list[str] = []
    grandchild = 0
    try:
        took = await _cancel_when("ready", manager, [PY, "-c", STUBBORN_FAMILY], seen)
        words = "".join(seen).split()
        leader, grandchild = int(words[words.index("ready") + 1]), int(words[words.index("ready") + 2])
        assert took >= PROCESS_TERM_GRACE_SECONDS
        assert _wait_dead(grandchild), "the grandchild outlived the stop"  # it ignores SIGTERM: only KILL ends it
        _reap_adopted(grandchild)
        assert _gone(leader) and _gone(grandchild)
        assert pids_alive(leader) == []
        assert _group_gone(leader)
    finally:
        if grandchild:
            _kill_quietly(grandchild)


@pytest.mark.req("SRV-21")
async def test_the_whole_group_is_gone_once_the_command_returns(manager: ProcessManager, subreaper: None) -> None:
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "sys.exit(0)\n"  # the leader ends by itself; its group member must not linger
    )
    with anyio.fail_after(10):
        result = await manager.run([PY, "-c", code], Path.cwd(), env=ENV, timeout_seconds=10)
    grandchild = int(result.output.split()[0])
    try:
        assert result.exit_code == 0
        _reap_adopted(grandchild)
        assert pids_alive(result.pid) == []
        assert _group_gone(result.pid)
    finally:
        _kill_quietly(grandchild)


@pytest.mark.req("ENG-04")
def test_commands_die_with_the_engine_that_started_them(tmp_path: Path) -> None:
    helper = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "import anyio\n"
        "from shadowcode.agent.processes import ProcessManager\n"
        "async def show(text):\n"
        "    sys.stdout.write(text)\n"
        "    sys.stdout.flush()\n"
        "async def main():\n"
        "    await ProcessManager().run(['sh', '-c', 'echo $$; exec sleep 60'], Path('.'),\n"
        "        env={'PATH': os.environ['PATH']}, timeout_seconds=120, on_output=show)\n"
        "anyio.run(main)\n"
    )
    proc = subprocess.Popen(
        [PY, "-c", helper],
        cwd=tmp_path,
        env=ENV | {"PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    sleeper = 0
    try:
        assert proc.stdout is not None
        readable, _, _ = select.select([proc.stdout], [], [], 20)
        assert readable, "the helper never reported its command"
        sleeper = int(proc.stdout.readline())
        assert pids_alive(sleeper) == [sleeper]
        proc.kill()
        proc.wait(timeout=10)
        assert _wait_dead(sleeper), "the command outlived the engine process"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
        if sleeper:
            _kill_quietly(sleeper)


# --- background processes ---------------------------------------------------------------


@pytest.mark.req("SRV-23")
async def test_background_start_list_output_and_stop(manager: ProcessManager, tmp_path: Path) -> None:
    started = manager.start_background(["sh", "-c", "echo hello; exec sleep 60"], tmp_path, ENV, tmp_path)
    assert set(started) == {"id", "pid", "argv", "cwd", "started_at"}
    assert started["id"].startswith("bg_") and started["argv"] == ["sh", "-c", "echo hello; exec sleep 60"]
    listed = manager.list_background(tmp_path)
    assert [b["id"] for b in listed] == [started["id"]] and listed[0]["running"] is True
    assert manager.background_output(started["id"])["running"] is True
    # Stop only once the child has written: a TERM that lands before `echo` runs leaves no output.
    with anyio.fail_after(10):
        while manager.background_output(started["id"])["output"] != "hello\n":
            await anyio.sleep(0.01)
        stopped = await manager.stop_background(started["id"])
    assert stopped["signal"] == signal.SIGTERM and stopped["output"] == "hello\n"
    assert _gone(started["pid"]) and _group_gone(started["pid"])
    assert manager.list_background() == []
    with pytest.raises(NotFound):
        manager.background_output(started["id"])


@pytest.mark.req("SRV-23", "SRV-08")
async def test_background_processes_are_confined_to_their_project(manager: ProcessManager, tmp_path: Path) -> None:
    mine, other = tmp_path / "mine", tmp_path / "other"
    started = manager.start_background(["sleep", "60"], tmp_path, ENV, mine)
    assert manager.list_background(other) == [] and len(manager.list_background(mine)) == 1
    with pytest.raises(NotFound):
        manager.background_output(started["id"], project=other)
    with pytest.raises(NotFound):
        await manager.stop_background(started["id"], project=other)
    assert pids_alive(started["pid"]) == [started["pid"]]
    with pytest.raises(NotFound):
        await manager.stop_background("bg_unknown")


@pytest.mark.req("SRV-23")
async def test_background_process_outlives_the_cancelled_task_that_started_it(
    manager: ProcessManager, tmp_path: Path
) -> None:
    started: dict[str, object] = {}
    with anyio.CancelScope() as scope:
        started.update(manager.start_background(["sleep", "60"], tmp_path, ENV, tmp_path))
        scope.cancel()
        await anyio.lowlevel.checkpoint()  # where the cancellation is delivered
    assert scope.cancelled_caught
    pid = int(str(started["pid"]))
    assert pids_alive(pid) == [pid]
    assert manager.list_background()[0]["running"] is True


@pytest.mark.req("SRV-23")
async def test_stopping_a_background_process_that_ignores_sigterm_kills_it(
    manager: ProcessManager, tmp_path: Path
) -> None:
    fifo = tmp_path / "ready.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        started = manager.start_background([PY, "-c", STUBBORN_FIFO, str(fifo)], tmp_path, ENV, tmp_path)
        readable, _, _ = select.select([reader], [], [], 10)
        assert readable and os.read(reader, 16) == b"ready"
    finally:
        os.close(reader)
    with anyio.fail_after(10):
        stopped = await manager.stop_background(started["id"])
    assert stopped["signal"] == signal.SIGKILL
    assert _gone(started["pid"]) and _group_gone(started["pid"])


@pytest.mark.req("SRV-23")
async def test_background_output_keeps_only_the_newest_bytes(manager: ProcessManager, tmp_path: Path) -> None:
    code = f"import sys; sys.stdout.write('x' * {BACKGROUND_OUTPUT_MAX_BYTES * 3} + 'NEWEST'); sys.stdout.flush()"
    started = manager.start_background([PY, "-c", code], tmp_path, ENV, tmp_path)
    assert _wait_dead(started["pid"], 10)
    assert manager.list_background()[0]["running"] is False and manager.list_background()[0]["exit_code"] == 0
    with anyio.fail_after(10):
        stopped = await manager.stop_background(started["id"])
    assert stopped["exit_code"] == 0 and stopped["truncated"] is True
    assert len(stopped["output"]) == BACKGROUND_OUTPUT_MAX_BYTES and stopped["output"].endswith("xNEWEST")


@pytest.mark.req("SRV-23")
async def test_background_process_count_is_accepted_at_the_limit_and_refused_past_it(
    manager: ProcessManager, tmp_path: Path
) -> None:
    pids = [
        manager.start_background(["sleep", "60"], tmp_path, ENV, tmp_path)["pid"]
        for _ in range(BACKGROUND_PROCESSES_MAX)
    ]
    assert len(manager.list_background()) == BACKGROUND_PROCESSES_MAX
    with pytest.raises(ToolError, match="at most"):
        manager.start_background(["sleep", "60"], tmp_path, ENV, tmp_path)
    with anyio.fail_after(20):
        await manager.aclose()
    assert all(_gone(pid) for pid in pids)


@pytest.mark.req("SRV-23")
async def test_closing_the_manager_stops_background_processes_and_refuses_new_work(tmp_path: Path) -> None:
    pm = ProcessManager()
    started = pm.start_background(["sleep", "60"], tmp_path, ENV, tmp_path)
    with anyio.fail_after(10):
        await pm.aclose()
    assert _gone(started["pid"]) and _group_gone(started["pid"])
    assert pm.list_background() == []
    with pytest.raises(ToolError, match="closed"):
        pm.start_background(["sleep", "60"], tmp_path, ENV, tmp_path)
    with pytest.raises(ToolError, match="closed"):
        await pm.run(["true"], tmp_path, env=ENV, timeout_seconds=5)


@pytest.mark.req("SRV-21")
async def test_closing_the_manager_stops_a_running_command(tmp_path: Path) -> None:
    pm = ProcessManager()
    result: list[CommandResult] = []
    up = anyio.Event()

    async def watch(text: str) -> None:
        up.set()

    async def go() -> None:
        argv = ["sh", "-c", "echo up; exec sleep 60"]
        result.append(await pm.run(argv, tmp_path, env=ENV, timeout_seconds=60, on_output=watch))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await up.wait()
            await pm.aclose()
    assert result[0].signal == signal.SIGTERM and _gone(result[0].pid)


@pytest.mark.req("SRV-21")
async def test_the_leader_is_reaped_only_after_the_group_was_signalled(
    manager: ProcessManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []
    real_killpg, real_wait = os.killpg, subprocess.Popen.wait

    def killpg(pgid: int, sig: int) -> None:
        steps.append(signal.Signals(sig).name)
        real_killpg(pgid, sig)

    def wait(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        steps.append("reap")
        return real_wait(self, timeout)

    monkeypatch.setattr(os, "killpg", killpg)
    monkeypatch.setattr(subprocess.Popen, "wait", wait)
    with anyio.fail_after(10):
        timed_out = await manager.run(["sleep", "60"], Path.cwd(), env=ENV, timeout_seconds=0.1)
        finished = await manager.run(["true"], Path.cwd(), env=ENV, timeout_seconds=10)
    assert timed_out.timed_out and finished.exit_code == 0
    assert steps == ["SIGTERM", "SIGKILL", "reap", "SIGKILL", "reap"]


@pytest.mark.req("ENG-04")
async def test_a_failing_output_callback_does_not_disturb_the_command(
    manager: ProcessManager, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    async def broken(text: str) -> None:
        calls.append(text)
        raise RuntimeError("viewer went away")

    argv = [PY, "-c", "import time; print('first', flush=True); time.sleep(0.05); print('second', flush=True)"]
    with anyio.fail_after(10):
        result = await manager.run(argv, Path.cwd(), env=ENV, timeout_seconds=10, on_output=broken)
    assert result.exit_code == 0 and result.output == "first\nsecond\n"
    assert len(calls) == 1 and "output callback failed" in caplog.text
