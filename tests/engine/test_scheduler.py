"""The task queue: running bound, order, cancellation of queued and running work (SRV-21, SRV-22)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest

from shadowcode.engine.scheduler import Scheduler
from shadowcode.limits import TASKS_RUNNING_MAX

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Probe:
    """Task bodies that record when they start, block until released, and record their cleanup."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cleaned: list[str] = []
        self.dequeued: list[str] = []
        self.release = anyio.Event()
        self.cleanup_may_end = anyio.Event()

    def body(self, name: str, *, slow_cleanup: bool = False) -> Callable[[], object]:
        async def run() -> None:
            self.started.append(name)
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                if slow_cleanup:
                    with anyio.CancelScope(shield=True):
                        await self.cleanup_may_end.wait()
                raise
            finally:
                self.cleaned.append(name)

        return run

    def on_dequeued(self, name: str) -> Callable[[], None]:
        return lambda: self.dequeued.append(name)


@asynccontextmanager
async def scheduler(running_max: int = TASKS_RUNNING_MAX) -> AsyncIterator[Scheduler]:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            sched = Scheduler(tg, running_max=running_max)
            yield sched
            await sched.cancel_all(wait_seconds=5)


async def settle() -> None:
    """Let started tasks reach their first await."""
    for _ in range(10):
        await anyio.lowlevel.checkpoint()


@pytest.mark.req("SRV-22")
async def test_at_most_the_running_limit_runs_and_the_rest_wait_in_order() -> None:
    probe = Probe()
    async with scheduler() as sched:
        names = [f"t{n}" for n in range(TASKS_RUNNING_MAX + 2)]
        for name in names:
            sched.submit(name, probe.body(name), probe.on_dequeued(name))
        await settle()
        assert sched.running() == names[:TASKS_RUNNING_MAX]  # at the limit: all run
        assert sched.queued() == names[TASKS_RUNNING_MAX:]  # one past it: waits
        assert probe.started == names[:TASKS_RUNNING_MAX]
        assert await sched.cancel(names[0], wait_seconds=5) is True
        await settle()
        assert probe.started == names[: TASKS_RUNNING_MAX + 1]  # the oldest queued task took the slot
        assert sched.queued() == names[TASKS_RUNNING_MAX + 1 :]


@pytest.mark.req("SRV-22")
async def test_a_queued_task_is_cancelled_at_once_without_waiting_behind_running_work() -> None:
    probe = Probe()
    async with scheduler(running_max=1) as sched:
        sched.submit("busy", probe.body("busy", slow_cleanup=True), probe.on_dequeued("busy"))
        sched.submit("waiting", probe.body("waiting"), probe.on_dequeued("waiting"))
        await settle()
        with anyio.fail_after(0.5):
            assert await sched.cancel("waiting", wait_seconds=5) is True
        assert probe.dequeued == ["waiting"]
        assert sched.running() == ["busy"] and sched.queued() == []
        assert "waiting" not in probe.started
        probe.release.set()


@pytest.mark.req("SRV-21")
async def test_cancelling_a_running_task_waits_for_its_cleanup() -> None:
    probe = Probe()
    async with scheduler() as sched:
        sched.submit("job", probe.body("job", slow_cleanup=True), probe.on_dequeued("job"))
        await settle()
        outcome: list[bool] = []

        async def cancel() -> None:
            outcome.append(await sched.cancel("job", wait_seconds=5))

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel)
            await settle()
            assert outcome == [] and probe.cleaned == []  # still cleaning up: cancel has not returned
            probe.cleanup_may_end.set()
        assert outcome == [True] and probe.cleaned == ["job"]
        assert probe.dequeued == []
        assert sched.running() == []


@pytest.mark.req("SRV-21")
async def test_a_cleanup_that_overruns_the_wait_is_reported() -> None:
    probe = Probe()
    async with scheduler() as sched:
        sched.submit("slow", probe.body("slow", slow_cleanup=True), probe.on_dequeued("slow"))
        await settle()
        assert await sched.cancel("slow", wait_seconds=0.05) is False
        assert probe.cleaned == []
        probe.cleanup_may_end.set()


@pytest.mark.req("SRV-21")
async def test_cancelling_an_unknown_task_is_a_no_op() -> None:
    async with scheduler() as sched:
        assert await sched.cancel("nobody", wait_seconds=1) is False


@pytest.mark.req("SRV-21")
async def test_cancel_all_stops_queued_and_running_tasks() -> None:
    probe = Probe()
    async with scheduler(running_max=2) as sched:
        for name in ("a", "b", "c"):
            sched.submit(name, probe.body(name), probe.on_dequeued(name))
        await settle()
        await sched.cancel_all(wait_seconds=5)
        assert sched.running() == [] and sched.queued() == []
    assert sorted(probe.cleaned) == ["a", "b"] and probe.dequeued == ["c"]


@pytest.mark.req("SRV-22")
async def test_a_failing_task_frees_its_slot_for_the_next() -> None:
    probe = Probe()

    async def boom() -> None:
        raise RuntimeError("task bug")

    async with scheduler(running_max=1) as sched:
        sched.submit("bad", boom, probe.on_dequeued("bad"))
        sched.submit("next", probe.body("next"), probe.on_dequeued("next"))
        with anyio.fail_after(2):
            while "next" not in probe.started:
                await anyio.lowlevel.checkpoint()
        assert sched.running() == ["next"]
        probe.release.set()
