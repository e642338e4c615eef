"""A connection's watch over its owned jobs: who learns that a job appeared, moved or ended (SRV-26, SRV-27).

The engine pushes nothing to its frontends; its one API answers questions. So each
connection reads its owner's job list (``job/list``, one call) every
``JOB_WATCH_INTERVAL_SECONDS`` while any of its jobs is unfinished, and compares it with what
it saw last. With no owner yet, or only finished jobs, it reads nothing and waits for
:meth:`JobWatcher.kick` (a tool call delegated or cancelled a job). Policy stays in the
engine: the watcher only notices, and hands each change to its listener.

A failed read (the engine went away) is logged and retried after the interval; the watcher
never ends the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from shadowcode.engine import api as m
from shadowcode.enums import TaskStatus
from shadowcode.errors import ShadowcodeError
from shadowcode.limits import JOB_WATCH_INTERVAL_SECONDS
from shadowcode.mcp.server.context import ServerContext

__all__ = ["JobChange", "JobWatcher"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobChange:
    """One observed change of an owned job.

    Attributes:
        job_id: the job.
        status: its status now.
        before: its status when last seen; None when it is new to the watcher.
    """

    job_id: str
    status: TaskStatus
    before: TaskStatus | None

    @property
    def appeared(self) -> bool:
        """The job is new to this connection's list."""
        return self.before is None

    @property
    def ended(self) -> bool:
        """The job moved from unfinished to finished."""
        return not self.status.active and (self.before is None or self.before.active)


class JobWatcher:
    """Reads one connection's owned jobs on a bounded interval and reports each change.

    Args:
        ctx: the connection (its engine and owner).
        changed: awaited with the changes of one read, in the engine's listing order; it must
            not raise (an exception is logged and the watcher goes on).
        interval_seconds: seconds between two reads while a job is unfinished.
    """

    def __init__(
        self,
        ctx: ServerContext,
        changed: Callable[[list[JobChange]], Awaitable[None]],
        *,
        interval_seconds: float = JOB_WATCH_INTERVAL_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.changed = changed
        self.interval_seconds = interval_seconds
        self.seen: dict[str, TaskStatus] = {}
        self.reads = 0  # engine reads made, for tests and diagnostics
        self._wake = anyio.Event()

    def kick(self) -> None:
        """Read again now: a job was delegated, cancelled or asked about."""
        self._wake.set()

    async def run(self) -> None:
        """Watch until cancelled."""
        while True:
            if self.ctx.owner is None or not any(status.active for status in self.seen.values()):
                await self._wake.wait()  # nothing unfinished: no engine reads until a kick
            self._wake = anyio.Event()
            await self.read_once()
            with anyio.move_on_after(self.interval_seconds):
                await self._wake.wait()

    async def read_once(self) -> list[JobChange]:
        """Read the owner's jobs once, report what changed since the last read, and return it."""
        if self.ctx.owner is None:
            return []
        self.reads += 1
        try:
            jobs = await self.ctx.api.jobs(m.Empty(), self.ctx.caller())
        except ShadowcodeError as exc:
            logger.warning("reading this connection's jobs failed: %s", exc.message)
            return []
        changes = [
            JobChange(job.id, job.status, self.seen.get(job.id)) for job in jobs if self.seen.get(job.id) != job.status
        ]
        self.seen = {job.id: job.status for job in jobs}
        if changes:
            try:
                await self.changed(changes)
            except Exception:
                logger.exception("handling a job change failed")
        return changes
