"""Blocking work the event loop can walk away from: one daemon thread a call (SRV-25).

Reading a project (a slow disk, a huge tree, a file that never answers) can block for longer
than an operation may last, and a blocked event loop would stall every other session of the
process. :func:`run_blocking` runs such a function on a daemon thread of its own and waits for
it on the event loop. When the waiting task is cancelled (its operation deadline, the end of
its connection) the wait ends at once and the thread is abandoned: it finishes on its own, its
result is dropped, and being a daemon thread it never keeps the process alive at exit.

At most ``BLOCKING_THREADS_MAX`` such threads exist at once in a process, abandoned ones
included, so work that hangs for ever cannot make threads pile up; past that, new work is
refused with :class:`~shadowcode.errors.ToolError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from shadowcode.errors import ToolError
from shadowcode.limits import BLOCKING_THREADS_MAX

__all__ = ["PROCESS_THREADS", "ThreadSlots", "run_blocking"]

T = TypeVar("T")


class ThreadSlots:
    """A count of blocking-work threads alive at once, abandoned ones included.

    Args:
        limit: threads allowed at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._taken = 0

    @property
    def taken(self) -> int:
        """Threads alive right now that hold a slot."""
        with self._lock:
            return self._taken

    def take(self) -> bool:
        """Take a slot; ``False`` when all ``limit`` are taken."""
        with self._lock:
            if self._taken >= self.limit:
                return False
            self._taken += 1
            return True

    def give(self) -> None:
        """Give back a slot taken by :meth:`take`."""
        with self._lock:
            self._taken -= 1


PROCESS_THREADS = ThreadSlots(BLOCKING_THREADS_MAX)
"""The slots every caller of :func:`run_blocking` shares unless it brings its own."""


async def run_blocking(fn: Callable[..., T], *args: Any, slots: ThreadSlots = PROCESS_THREADS) -> T:
    """Run ``fn(*args)`` on a daemon thread; cancelling the caller abandons the thread.

    Args:
        fn: a blocking function; it must not touch the event loop.
        *args: its positional arguments.
        slots: the thread count this call takes a slot of for as long as its thread lives.

    Returns:
        What ``fn`` returned.

    Raises:
        ToolError: every slot is taken (some threads may be stuck).
        Exception: whatever ``fn`` raised, unchanged.
    """
    if not slots.take():
        raise ToolError(
            f"too much blocking work is in progress in this process (at most {slots.limit} threads, "
            "some may be stuck on an unresponsive file); retry later"
        )
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting task unchanged
            outcome.append((False, exc))
        finally:
            slots.give()
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except Exception:  # noqa: BLE001 - the event loop has ended: nobody waits any more
            pass

    threading.Thread(target=target, name=f"shadowcode blocking {getattr(fn, '__name__', 'work')}", daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if ok:
        return value
    raise value
