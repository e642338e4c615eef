"""The runner isolates each check, bounds it in time, and never lets one failure stop the run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.context import Context
from shadowcode_conformance.limits import EXEC_SETTLE_SECONDS
from shadowcode_conformance.processes import _between_fork_and_environ, kill_marked
from shadowcode_conformance.registry import Check, CheckResult, SubResult
from shadowcode_conformance.runner import run_checks, run_one

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"


def stand_in_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def _check(name: str, fn, timeout: float = 10.0, covers: tuple[str, ...] = ("SRV-01",)) -> Check:
    return Check(name=name, group="unit", covers=covers, fn=fn, timeout_seconds=timeout)


def _run(checks: list[Check], jobs: int = 2):
    async def go():
        with anyio.fail_after(30):
            return await run_checks(
                checks,
                target=["true"],
                cwd=Path.cwd(),
                repo_root=SUITE,
                project_factory=stand_in_project,
                jobs=jobs,
            )

    return anyio.run(go)


@pytest.mark.req("CONF-01")
def test_failing_raising_and_slow_checks_are_recorded_and_the_run_continues() -> None:
    async def fails(ctx: Context) -> CheckResult:
        return CheckResult(False, "expected failure")

    async def raises(ctx: Context) -> CheckResult:
        raise RuntimeError("boom")

    async def hangs(ctx: Context) -> CheckResult:
        await anyio.sleep_forever()
        raise AssertionError

    async def passes(ctx: Context) -> CheckResult:
        return CheckResult(True, "fine")

    outcome = _run([_check("a", fails), _check("b", raises), _check("c", hangs, timeout=0.3), _check("d", passes)])
    by_name = {r.name: r for r in outcome.records}
    assert [r.name for r in outcome.records] == ["a", "b", "c", "d"]
    assert not by_name["a"].ok and by_name["a"].detail == "expected failure"
    assert not by_name["b"].ok and "RuntimeError: boom" in by_name["b"].detail
    assert not by_name["c"].ok and "timed out after 0.3 s" in by_name["c"].detail
    assert by_name["d"].ok


@pytest.mark.req("CONF-01")
def test_each_check_gets_private_home_project_and_scratch_that_are_removed() -> None:
    seen: list[Context] = []

    async def look(ctx: Context) -> CheckResult:
        seen.append(ctx)
        assert ctx.env["SHADOWCODE_HOME"] == str(ctx.home)
        assert ctx.home.is_dir() and not any(ctx.home.iterdir())
        assert (ctx.project / "README.md").is_file() and ctx.scratch.is_dir()
        assert 0 < ctx.remaining() <= 10
        return CheckResult(True, "ok")

    outcome = _run([_check("one", look), _check("two", look)])
    assert all(r.ok for r in outcome.records)
    homes = {c.home for c in seen}
    assert len(homes) == 2
    for c in seen:
        assert not c.home.exists() and not c.project.exists() and not c.scratch.exists()


@pytest.mark.req("CONF-01")
def test_processes_left_running_by_a_check_are_killed_at_its_end() -> None:
    started: list[subprocess.Popen[bytes]] = []

    async def leaks(ctx: Context) -> CheckResult:
        started.append(
            subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"], env=ctx.env, start_new_session=True
            )
        )
        return CheckResult(True, "left a process behind")

    outcome = _run([_check("leaky", leaks)])
    assert outcome.records[0].ok and "killed 1 process" in outcome.records[0].detail, outcome.records[0].detail
    assert started and started[0].wait(timeout=10) == -9


@pytest.mark.req("CONF-01")
def test_a_run_cancelled_from_outside_still_sweeps_each_started_check() -> None:
    """What a stop signal does to the run (shadowcode_conformance.cli): the sweep is shielded from the cancellation."""
    started: list[subprocess.Popen[bytes]] = []
    seen: list[Context] = []

    async def leaks_then_hangs(ctx: Context) -> CheckResult:
        seen.append(ctx)
        command = [sys.executable, "-c", "import time; time.sleep(120)"]
        started.append(subprocess.Popen(command, env=ctx.env, start_new_session=True))
        await anyio.sleep_forever()
        raise AssertionError

    async def go() -> None:
        with anyio.fail_after(30), anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: run_checks(
                        [_check("stopped", leaks_then_hangs, timeout=60)],
                        target=["true"],
                        cwd=Path.cwd(),
                        repo_root=SUITE,
                        project_factory=stand_in_project,
                        jobs=1,
                    )
                )
                while not started:
                    await anyio.sleep(0.01)
                scope.cancel()

    try:
        anyio.run(go)
        assert started[0].wait(timeout=10) == -9
        assert not seen[0].home.exists() and not seen[0].scratch.exists()
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.req("CONF-01")
def test_sub_results_become_checks_and_unknown_ids_fail_them() -> None:
    async def with_subs(ctx: Context) -> CheckResult:
        ctx.record_revision("probe", "2026-07-28")
        return CheckResult(
            True,
            "parent",
            subresults=[SubResult("probe:a", ("SRV-04",), True, "fine"), SubResult("probe:b", ("NOPE-1",), True, "x")],
        )

    outcome = _run([_check("parent", with_subs, covers=("CONF-02",))])
    names = [(r.name, r.ok, r.covers) for r in outcome.records]
    assert names == [("parent", True, ("CONF-02",)), ("probe:a", True, ("SRV-04",)), ("probe:b", False, ())]
    assert "NOPE-1" in outcome.records[2].detail
    assert outcome.revisions == {"probe": "2026-07-28"}


@pytest.mark.req("CONF-01")
def test_a_broken_project_factory_fails_the_check_with_its_reason() -> None:
    def broken(dest: Path) -> Path:
        raise OSError("disk full")

    async def never(ctx: Context) -> CheckResult:
        raise AssertionError("must not run")

    async def go():
        with anyio.fail_after(30):
            return await run_one(
                _check("x", never),
                target=["true"],
                cwd=Path.cwd(),
                repo_root=SUITE,
                project_factory=broken,
            )

    records, _ = anyio.run(go)
    assert not records[0].ok and "disk full" in records[0].detail


@pytest.mark.req("CONF-01")
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process discovery uses /proc")
def test_commands_that_outlive_their_time_bound_are_killed() -> None:
    async def slow(ctx: Context) -> CheckResult:
        done = await ctx.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout_seconds=0.5)
        return CheckResult(done.timed_out and done.returncode == -9, f"rc={done.returncode}")

    outcome = _run([_check("slow", slow)])
    assert outcome.records[0].ok, outcome.records[0].detail


@pytest.mark.req("CONF-04", "PKG-01")
def test_a_target_never_inherits_how_the_harness_finds_its_code() -> None:
    from shadowcode_conformance.runner import target_environment

    env = target_environment({"PYTHONPATH": "/checkout", "PYTHONHOME": "/x", "PATH": "/bin", "HOME": "/h"})
    assert env == {"PATH": "/bin", "HOME": "/h"}


@pytest.mark.req("CONF-01")
def test_a_process_with_an_empty_environment_is_read_again_for_a_bounded_time_and_spared(tmp_path: Path) -> None:
    # An empty /proc/PID/environ is what a program looks like inside execve, after Popen has
    # returned; the sweep reads it again, but gives up after EXEC_SETTLE_SECONDS.
    bare = subprocess.Popen(["/bin/sleep", "60"], env={}, start_new_session=True)
    marked = subprocess.Popen(["/bin/sleep", "60"], env={"SHADOWCODE_HOME": str(tmp_path)}, start_new_session=True)
    try:
        entry = Path(f"/proc/{bare.pid}")
        deadline = time.monotonic() + 30
        while (entry / "environ").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)  # the environment of `env={}` is empty once exec is done
        assert _between_fork_and_environ(entry)
        zombie = subprocess.Popen(["/bin/true"], env={})
        stat = Path(f"/proc/{zombie.pid}/stat")
        while b") Z " not in stat.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)  # exited, not reaped: a zombie has an empty environment for good
        assert not _between_fork_and_environ(stat.parent)
        zombie.wait(timeout=30)
        began = time.monotonic()
        killed = kill_marked(f"SHADOWCODE_HOME={tmp_path}")
        took = time.monotonic() - began
        assert killed == [marked.pid]
        assert marked.wait(timeout=30) == -9
        assert bare.poll() is None
        assert EXEC_SETTLE_SECONDS <= took < EXEC_SETTLE_SECONDS + 20
    finally:
        for p in (bare, marked):
            p.kill()
            p.wait(timeout=30)


@pytest.mark.req("CONF-01")
@pytest.mark.parametrize("way", ["run_command", "spawn"])
def test_a_deadline_that_falls_while_a_command_starts_leaves_no_process_behind(way: str) -> None:
    """Cancelled at each step of starting it, a command is still killed and reaped, its pipes closed."""
    import gc

    from shadowcode_conformance.processes import run_command, spawn

    marker = f"shadowcode-start-cancelled-{os.getpid()}-{way}"
    argv = [sys.executable, "-c", "import sys; sys.stdin.read()", marker]  # ends when its stdin closes

    async def start() -> None:
        if way == "run_command":
            await run_command(argv, env=dict(os.environ), cwd=Path.cwd(), timeout_seconds=30)
        else:
            async with spawn(argv, env=dict(os.environ), cwd=Path.cwd()):
                await anyio.sleep(30)

    async def cancelled_after(steps: int) -> None:
        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as scope:

                async def cancel() -> None:
                    for _ in range(steps):
                        await anyio.lowlevel.checkpoint()
                    scope.cancel()

                tg.start_soon(cancel)
                await start()

    for steps in range(12):
        anyio.run(cancelled_after, steps)
    gc.collect()
    left = [p for p in gc.get_objects() if isinstance(p, subprocess.Popen) and marker in p.args]
    assert [p.returncode for p in left if p.returncode is None] == []
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and marker.encode() in _cmdline(pid)]


def _cmdline(pid: str) -> bytes:
    try:
        return (Path("/proc") / pid / "cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return b""
