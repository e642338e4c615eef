"""The engine's task queue: at most TASKS_RUNNING_MAX tasks run; the rest wait in order.

Every task runs inside its own cancel scope in the engine's task group, so cancelling it
(owner gone, explicit cancel, engine close) unwinds its awaits and lets its cleanup run.
A queued task is cancelled at once, without waiting behind unrelated work (SRV-22).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from shadowcode.limits import TASKS_RUNNING_MAX

__all__ = ["Scheduler"]

logger = logging.getLogger(__name__)

Run = Callable[[], Awaitable[None]]


@dataclass
class _Slot:
    run: Run
    on_dequeued_cancel: Callable[[], None]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    started: bool = False


class Scheduler:
    """Queues and runs task coroutines in a task group owned by the engine.

    Args:
        tg: the engine's task group; tasks run inside it.
        running_max: tasks running at once.
    """

    def __init__(self, tg: anyio.abc.TaskGroup, running_max: int = TASKS_RUNNING_MAX) -> None:
        self._tg = tg
        self._running_max = running_max
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._running = 0
        self._closing = False

    def submit(self, task_id: str, run: Run, on_dequeued_cancel: Callable[[], None]) -> None:
        """Queue ``run`` for ``task_id``; it starts as soon as a running slot is free.

        ``on_dequeued_cancel`` is called (synchronously) if the task is cancelled while queued.
        """
        self._slots[task_id] = _Slot(run=run, on_dequeued_cancel=on_dequeued_cancel)
        self._pump()

    def queued(self) -> list[str]:
        """Ids of tasks waiting for a running slot, in order."""
        return [tid for tid, slot in self._slots.items() if not slot.started]

    def running(self) -> list[str]:
        """Ids of tasks running now."""
        return [tid for tid, slot in self._slots.items() if slot.started]

    def close(self) -> None:
        """Start no more queued tasks: the engine is shutting down and will cancel them."""
        self._closing = True

    def _pump(self) -> None:
        if self._closing:
            return
        for task_id, slot in list(self._slots.items()):
            if self._running >= self._running_max:
                return
            if not slot.started:
                slot.started = True
                self._running += 1
                self._tg.start_soon(self._run, task_id, slot, name=f"task {task_id}")

    async def _run(self, task_id: str, slot: _Slot) -> None:
        try:
            with slot.scope:
                await slot.run()
        except Exception:  # noqa: BLE001 - a task's own failure never takes the engine down
            logger.exception("task runner failed")
        finally:
            self._running -= 1
            self._slots.pop(task_id, None)
            slot.done.set()
            self._pump()

    async def cancel(self, task_id: str, *, wait_seconds: float) -> bool:
        """Cancel a task: a queued one at once, a running one by its scope, then wait for its cleanup.

        Returns:
            True when the task was known here (queued or running) and has finished cleanup
            within ``wait_seconds``; False when it was not known or cleanup overran.
        """
        slot = self._slots.get(task_id)
        if slot is None:
            return False
        if not slot.started:
            self._slots.pop(task_id, None)
            slot.on_dequeued_cancel()
            slot.done.set()
            return True
        slot.scope.cancel()
        with anyio.move_on_after(wait_seconds):
            await slot.done.wait()
            return True
        return False

    async def cancel_all(self, *, wait_seconds: float) -> None:
        """Cancel every queued and running task and wait (bounded) for their cleanup."""
        for task_id in self.queued():
            await self.cancel(task_id, wait_seconds=wait_seconds)
        async with anyio.create_task_group() as tg:
            for task_id in self.running():
                tg.start_soon(lambda t=task_id: self.cancel(t, wait_seconds=wait_seconds))
