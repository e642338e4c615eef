"""``subscriptions/listen`` (2026-07-28): live lists and task status pushed to a listening client (SRV-27).

One listen request is one stream. Its first frame is the acknowledgement
(``notifications/subscriptions/acknowledged``) naming what will be sent; every frame after it
carries the request's id under ``_meta["io.modelcontextprotocol/subscriptionId"]``, and only
the kinds asked for are ever sent:

* ``resourcesListChanged``: ``notifications/resources/list_changed`` when one of this
  connection's jobs appears or ends (``shadow://sessions`` changed);
* ``resourceSubscriptions``: ``notifications/resources/updated`` for ``shadow://sessions``
  whenever one of the connection's jobs changes status (other URIs are acknowledged and
  never fire);
* ``toolsListChanged`` / ``promptsListChanged``: left out of the acknowledgement: the tool
  and prompt lists are fixed (``server/discover`` says ``listChanged: false`` for them);
* ``taskIds`` (Tasks extension): ``notifications/tasks`` with the full ``DetailedTask``, the
  same as ``tasks/get`` would answer, once right after the acknowledgement and again on each
  status change. Only ids of this connection's own jobs are acknowledged; naming task ids
  without declaring the extension on the request is ``-32021``.

A stream ends when the client goes away, when its backlog passes LISTEN_BACKLOG_MAX (the
client stopped reading), or after ``lifetime_seconds`` (the gateway's streams, inside its
request deadline), with the final ``SubscriptionsListenResult``; the client listens again.
Nothing is replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    event_matches,
    event_to_notification,
)
from pydantic import BaseModel

from shadowcode.json_values import json_array
from shadowcode.limits import LISTEN_BACKLOG_MAX, LISTEN_STREAMS_MAX, LISTEN_TASK_IDS_MAX
from shadowcode.mcp.server.tasks_extension import declares_tasks, missing_tasks_capability

__all__ = ["LiveLists", "TaskChanged"]

logger = logging.getLogger(__name__)

SESSIONS_URI = "shadow://sessions"


class TaskChanged(BaseModel):
    """A listen stream's event: the task ``task_id`` changed status."""

    task_id: str


class _TasksNotification(BaseModel):
    """``notifications/tasks``: the extension's notification, not in the SDK's vocabulary."""

    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]


Event = ServerEvent | TaskChanged

TaskReader = Callable[[str, types.ClientCapabilities | None], Awaitable[dict[str, Any]]]
"""Reads one owned task as ``tasks/get`` would, for a request that declared those capabilities."""

OwnedIds = Callable[[], Awaitable[set[str]]]
"""The ids of this connection's owned jobs."""


class LiveLists:
    """The listen streams of one connection and the events published to them (SRV-27).

    Args:
        read_task: renders one owned task (``DetailedTask``) for ``notifications/tasks``.
        owned_ids: lists the connection's owned job ids (to acknowledge only owned task ids).
        lifetime_seconds: how long one stream lives before it ends gracefully; None: until
            the client goes away.
        streams_max: streams open at once; one more is refused (``INVALID_REQUEST``).
        backlog_max: events waiting on one stream before it is ended.
    """

    def __init__(
        self,
        read_task: TaskReader,
        owned_ids: OwnedIds,
        *,
        lifetime_seconds: float | None = None,
        streams_max: int = LISTEN_STREAMS_MAX,
        backlog_max: int = LISTEN_BACKLOG_MAX,
    ) -> None:
        self.read_task = read_task
        self.owned_ids = owned_ids
        self.lifetime_seconds = lifetime_seconds
        self.streams_max = streams_max
        self.backlog_max = backlog_max
        self._streams: set[MemoryObjectSendStream[Event]] = set()

    @property
    def open_streams(self) -> int:
        """Listen streams open now."""
        return len(self._streams)

    def publish(self, event: Event) -> None:
        """Queue ``event`` on every open stream (each stream keeps only what it asked for)."""
        for stream in list(self._streams):
            try:
                stream.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning("a listen stream's client stopped reading; ending the stream")
                self._streams.discard(stream)
                stream.close()
            except anyio.ClosedResourceError:
                self._streams.discard(stream)

    async def listen(
        self, rctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` stream until it ends (the SDK's handler signature).

        Raises:
            MCPError: ``-32021`` for task ids without the Tasks extension declared;
                ``INVALID_PARAMS`` for a ``taskIds`` that is not a list of at most
                LISTEN_TASK_IDS_MAX strings; ``INVALID_REQUEST`` past LISTEN_STREAMS_MAX open
                streams or without a request id. Each before the acknowledgement.
        """
        subscription_id = rctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen needs a request id")
        wanted = params.notifications
        task_ids = _task_ids((wanted.model_extra or {}).get("taskIds"))
        if task_ids is not None and not declares_tasks(rctx.params):
            raise missing_tasks_capability("subscriptions/listen with taskIds")
        if len(self._streams) >= self.streams_max:
            raise MCPError(
                types.INVALID_REQUEST,
                f"too many listen streams: at most {self.streams_max} are open at once; close one and listen again",
            )
        agreed: list[str] = []
        extension: dict[str, Any] = {}
        if task_ids is not None:
            owned = await self.owned_ids()
            agreed = [task_id for task_id in task_ids if task_id in owned]
            extension["taskIds"] = agreed  # the extension's key: the filter keeps unknown keys
        honored = types.SubscriptionFilter(
            resources_list_changed=True if wanted.resources_list_changed else None,
            resource_subscriptions=list(wanted.resource_subscriptions) if wanted.resource_subscriptions else None,
            **extension,
        )
        uris = frozenset(honored.resource_subscriptions or ())
        capabilities = rctx.session.client_capabilities
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[Event](self.backlog_max)
        self._streams.add(send)  # before the acknowledgement: nothing published meanwhile is lost
        session = rctx.session

        async def emit(notification: Any) -> None:
            await session.send_notification(notification, related_request_id=subscription_id)

        try:
            await emit(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                )
            )
            for task_id in agreed:
                await self._emit_task(emit, task_id, capabilities, meta)
            with anyio.move_on_after(self.lifetime_seconds if self.lifetime_seconds is not None else float("inf")):
                async for event in receive:
                    if isinstance(event, TaskChanged):
                        if event.task_id in agreed:
                            await self._emit_task(emit, event.task_id, capabilities, meta)
                    elif event_matches(honored, uris, event):
                        await emit(event_to_notification(event, meta))
        finally:
            self._streams.discard(send)
            send.close()
            receive.close()
        return types.SubscriptionsListenResult(_meta=meta)

    async def _emit_task(
        self,
        emit: Callable[[Any], Awaitable[None]],
        task_id: str,
        capabilities: types.ClientCapabilities | None,
        meta: dict[str, Any],
    ) -> None:
        """Send ``notifications/tasks`` for ``task_id``; a task that cannot be read now is skipped."""
        try:
            task = await self.read_task(task_id, capabilities)
        except MCPError as exc:
            logger.warning("task %s could not be read for its listeners: %s", task_id, exc.error.message)
            return
        await emit(_TasksNotification(params={**task, "_meta": meta}))


def _task_ids(value: object) -> list[str] | None:
    """``taskIds`` as asked: None when absent.

    Raises:
        MCPError: ``INVALID_PARAMS`` for anything but a list of at most LISTEN_TASK_IDS_MAX strings.
    """
    if value is None:
        return None
    items = json_array(value)
    task_ids = [item for item in items if isinstance(item, str)] if items is not None else []
    if items is None or len(task_ids) != len(items):
        raise MCPError(types.INVALID_PARAMS, "taskIds must be a list of task id strings")
    if len(task_ids) > LISTEN_TASK_IDS_MAX:
        raise MCPError(types.INVALID_PARAMS, f"taskIds names {len(task_ids)} tasks; at most {LISTEN_TASK_IDS_MAX}")
    return list(dict.fromkeys(task_ids))


def job_events(appeared_or_ended: bool) -> list[Event]:
    """The list events one job change publishes: sessions updated, and the list changed when a job appeared or ended."""
    events: list[Event] = [ResourceUpdated(uri=SESSIONS_URI)]
    if appeared_or_ended:
        events.append(ResourcesListChanged())
    return events
