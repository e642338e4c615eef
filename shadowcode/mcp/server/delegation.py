"""One connection's delegated jobs as the host sees them: tasks, live lists and input asked in the host.

Implements SRV-26 and SRV-27 for one connection (a stdio session, a session relayed into the
headless engine, or the whole gateway, which is one owner): :class:`Delegation` holds the
connection's :class:`~shadowcode.mcp.server.job_watch.JobWatcher`, its listen streams
(:class:`~shadowcode.mcp.server.live_lists.LiveLists`) and its
:class:`~shadowcode.mcp.server.input_broker.InputBroker`, and serves ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` (:mod:`shadowcode.mcp.server.tasks_extension`).

Its :meth:`Delegation.lifespan` is the SDK server's lifespan: the watcher runs while the
server serves (``Server.run`` for stdio, the Streamable HTTP manager's ``run`` for the
gateway) and stops with it. Each change the watcher sees goes to the broker
(``job_changed``) and to the listen streams (a task's status, ``shadow://sessions``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from shadowcode.engine import api as m
from shadowcode.errors import NotFound, ShadowcodeError
from shadowcode.limits import JOB_WATCH_INTERVAL_SECONDS
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.input_broker import InputBroker
from shadowcode.mcp.server.job_watch import JobChange, JobWatcher
from shadowcode.mcp.server.live_lists import LiveLists, TaskChanged, job_events
from shadowcode.mcp.server.tasks_extension import (
    TaskParams,
    TaskUpdateParams,
    created_task,
    detailed_task,
    require_tasks,
)

__all__ = ["Delegation"]

logger = logging.getLogger(__name__)


class Delegation:
    """The delegated jobs of one connection, seen as MCP tasks and live lists (SRV-26, SRV-27).

    Args:
        ctx: the connection (its engine, project and owner).
        broker: what its owned jobs may ask the host; see :mod:`shadowcode.mcp.server.input_broker`.
        listen_seconds: how long one listen stream lives; None (stdio): until the client goes away.
        watch_interval_seconds: seconds between two reads of the owned jobs while one is unfinished.
    """

    def __init__(
        self,
        ctx: ServerContext,
        broker: InputBroker,
        *,
        listen_seconds: float | None = None,
        watch_interval_seconds: float = JOB_WATCH_INTERVAL_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.broker = broker
        self.watcher = JobWatcher(ctx, self._changed, interval_seconds=watch_interval_seconds)
        self.live = LiveLists(self.read_task, self._owned_ids, lifetime_seconds=listen_seconds)
        self._entered = 0

    @asynccontextmanager
    async def lifespan(self, _server: object = None) -> AsyncGenerator[dict[str, Any], None]:
        """Run the job watcher while the server serves; a nested entry (a second HTTP manager) shares it."""
        if self._entered:
            self._entered += 1
            try:
                yield {}
            finally:
                self._entered -= 1
            return
        self._entered = 1
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.watcher.run)
                try:
                    yield {}
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._entered = 0

    def jobs_touched(self) -> None:
        """A tool call delegated or cancelled a job: read the owned jobs now."""
        self.watcher.kick()

    async def read_task(self, job_id: str, capabilities: types.ClientCapabilities | None) -> dict[str, Any]:
        """The owned job ``job_id`` as a ``DetailedTask`` (see :func:`.tasks_extension.detailed_task`).

        Raises:
            MCPError: ``INVALID_PARAMS`` for a job that is not this connection's.
        """
        return await detailed_task(self.ctx, self.broker, job_id, capabilities)

    async def create_task(self, rctx: Any, job_id: str) -> dict[str, Any]:
        """The ``CreateTaskResult`` of a job just delegated by a declaring ``tools/call`` (SRV-26)."""
        task = await self.read_task(job_id, rctx.session.client_capabilities)
        return created_task(task)

    # -- tasks/* handlers (SDK request-handler signature) ------------------------------------

    async def tasks_get(self, rctx: Any, params: TaskParams) -> dict[str, Any]:
        """``tasks/get``: the owned task's ``DetailedTask`` (SRV-26)."""
        require_tasks(rctx)
        return await self.read_task(params.task_id, rctx.session.client_capabilities)

    async def tasks_cancel(self, rctx: Any, params: TaskParams) -> dict[str, Any]:
        """``tasks/cancel``: the owner's cancel of the job; idempotent, an empty acknowledgement (SRV-26)."""
        require_tasks(rctx)
        try:
            await self.ctx.api.job_cancel(m.JobRef(params.task_id), self.ctx.caller())
        except NotFound as exc:
            raise MCPError(types.INVALID_PARAMS, f"no task {params.task_id!r} of this connection") from exc
        except ShadowcodeError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from exc
        self.watcher.kick()
        return {}

    async def tasks_update(self, rctx: Any, params: TaskUpdateParams) -> dict[str, Any]:
        """``tasks/update``: the client's ``inputResponses`` go to the broker; an empty acknowledgement (SRV-26).

        Raises:
            MCPError: ``INVALID_PARAMS`` for a task that is not this connection's, or answers the
                broker refuses (nothing changes then).
        """
        require_tasks(rctx)
        try:
            await self.ctx.api.job_state(m.JobRef(params.task_id), self.ctx.caller())
        except NotFound as exc:
            raise MCPError(types.INVALID_PARAMS, f"no task {params.task_id!r} of this connection") from exc
        except ShadowcodeError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from exc
        await self.broker.input_responses(params.task_id, params.input_responses)
        self.watcher.kick()
        return {}

    # -- the watcher's side -----------------------------------------------------------------

    async def _owned_ids(self) -> set[str]:
        if self.ctx.owner is None:
            return set()
        try:
            return {job.id for job in await self.ctx.api.jobs(m.Empty(), self.ctx.caller())}
        except ShadowcodeError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from exc

    async def _changed(self, changes: list[JobChange]) -> None:
        for change in changes:
            try:
                await self.broker.job_changed(change.job_id, str(change.status))
            except Exception:
                logger.exception("the input broker failed on a job change")
            self.live.publish(TaskChanged(task_id=change.job_id))
            for event in job_events(change.appeared or change.ended):
                self.live.publish(event)
