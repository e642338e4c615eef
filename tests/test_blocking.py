"""run_blocking: daemon threads the event loop can abandon, bounded per process (SRV-25)."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading

import anyio
import pytest

from shadowcode.blocking import PROCESS_THREADS, ThreadSlots, run_blocking
from shadowcode.errors import ToolError
from shadowcode.limits import BLOCKING_THREADS_MAX

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-25")]


async def test_returns_the_functions_result_and_raises_its_error() -> None:
    assert await run_blocking(lambda a, b: a + b, 2, 3) == 5

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await run_blocking(fail)


async def test_a_deadline_abandons_a_stuck_call_at_once() -> None:
    release = threading.Event()
    with anyio.fail_after(5):
        with anyio.move_on_after(0.2) as scope:
            await run_blocking(release.wait)
    assert scope.cancelled_caught
    release.set()


@pytest.mark.parametrize("limit", [2, BLOCKING_THREADS_MAX])
async def test_threads_are_bounded_at_the_limit_and_refused_one_past_it(limit: int) -> None:
    slots = ThreadSlots(limit)
    release = threading.Event()
    async with anyio.create_task_group() as tg:
        for _ in range(limit):
            tg.start_soon(functools.partial(run_blocking, release.wait, slots=slots))
        with anyio.fail_after(10):
            while slots.taken < limit:
                await anyio.sleep(0.01)
        with pytest.raises(ToolError, match=f"at most {limit} threads"):
            await run_blocking(lambda: None, slots=slots)
        release.set()
    with anyio.fail_after(10):
        while slots.taken:
            await anyio.sleep(0.01)
    assert await run_blocking(lambda: "free again", slots=slots) == "free again"


async def test_an_abandoned_thread_keeps_its_slot_until_it_ends() -> None:
    slots = ThreadSlots(1)
    release = threading.Event()
    with anyio.move_on_after(0.05):
        await run_blocking(release.wait, slots=slots)
    with pytest.raises(ToolError, match="at most 1 threads"):
        await run_blocking(lambda: None, slots=slots)
    release.set()
    with anyio.fail_after(10):
        while slots.taken:
            await anyio.sleep(0.01)
    assert await run_blocking(lambda: "free", slots=slots) == "free"


def test_the_process_shares_one_count_at_the_limit() -> None:
    assert PROCESS_THREADS.limit == BLOCKING_THREADS_MAX


def test_an_abandoned_thread_never_keeps_the_process_alive() -> None:
    code = (
        "import anyio, threading\n"
        "from shadowcode.blocking import run_blocking\n"
        "async def main():\n"
        "    with anyio.move_on_after(0.1):\n"
        "        await run_blocking(threading.Event().wait)\n"
        "anyio.run(main)\n"
        "print('exited')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exited"
