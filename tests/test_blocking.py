"""run_blocking: daemon threads the event loop can abandon, bounded per process (SRV-25)."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading

import anyio
import pytest

from shadowcode.blocking import blocking_threads, run_blocking
from shadowcode.errors import ToolError

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


async def test_threads_are_bounded_at_the_limit_and_refused_one_past_it() -> None:
    release = threading.Event()
    before = blocking_threads()
    limit = before + 2
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(functools.partial(run_blocking, release.wait, threads_max=limit))
        with anyio.fail_after(5):
            while blocking_threads() < limit:
                await anyio.sleep(0.01)
        with pytest.raises(ToolError, match=f"at most {limit} threads"):
            await run_blocking(lambda: None, threads_max=limit)
        release.set()
    with anyio.fail_after(5):
        while blocking_threads() > before:
            await anyio.sleep(0.01)
    assert await run_blocking(lambda: "free again", threads_max=limit) == "free again"


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
