"""Input a delegated job asks of its host: the seam between the Tasks extension and approvals asked in the host.

A job that waits for a person (an exact approval, ENG-07) can be shown to the host in the
host's own terms: on 2026-07-28 a task reads ``input_required`` and ``tasks/get`` carries the
job's outstanding ``inputRequests`` (``elicitation/create`` requests, answered through
``tasks/update``); on the legacy revisions the server may send ``elicitation/create`` to the
owning client. Which requests are outstanding, what an answer does and whether it is
genuine is not the Tasks extension's business: an :class:`InputBroker` decides, and the
engine stays the judge of the approval itself (DESIGN.md, "the host's own terms").

One broker serves one connection (one owner: a stdio session, a relayed session, or the
gateway). It is built once, where the connection is built
(:func:`shadowcode.mcp.server.app.input_broker`), from the connection's
:class:`~shadowcode.mcp.server.context.ServerContext`, and handed to
:class:`~shadowcode.mcp.server.delegation.Delegation`, which calls it:

* :meth:`InputBroker.input_requests` on every ``tasks/get`` of an owned job that is
  ``waiting`` in the engine, and for every ``notifications/tasks`` it sends about one. A
  non-empty map makes the task read ``input_required`` with that map as ``inputRequests``;
  an empty one keeps it ``working``, with a status message naming the pending approval and
  the terminal command that resolves it.
* :meth:`InputBroker.input_responses` on ``tasks/update`` with the client's
  ``inputResponses``, after the task was found to be the caller's own (a foreign or unknown
  task id never reaches the broker).
* :meth:`InputBroker.job_changed` from the connection's job watcher, once per observed
  status change of an owned job (the hook for legacy ``elicitation/create`` pushes).

:class:`NoInputBroker`, the default, asks nothing: no job ever reads ``input_required``
and every ``tasks/update`` key is refused as unknown. An approval is a person's decision:
a broker that lets a host answer one must only exist where the user turned that on.
"""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["InputBroker", "NoInputBroker"]


class InputBroker(Protocol):
    """What a connection asks its host for on behalf of its owned jobs, and how answers come back.

    Every method is called on the connection's event loop, with a job id that is one of this
    connection's owner's own jobs (ownership is checked before the call; SRV-16, SRV-21). No
    method may block the loop; each should return within a second or two (a ``tasks/get``
    waits for :meth:`input_requests`).
    """

    async def input_requests(
        self, job_id: str, client_capabilities: types.ClientCapabilities | None
    ) -> dict[str, dict[str, Any]]:
        """The job's outstanding input requests, for a client that declared ``client_capabilities``.

        Args:
            job_id: the owned job (``task_<hex>``), which the engine reports ``waiting``.
            client_capabilities: what the client declared on the ``tasks/get`` (or the
                ``subscriptions/listen``) request that asks; None when it declared nothing.
                A broker offers only what the client can answer (e.g. elicitation).

        Returns:
            ``{key: {"method": "elicitation/create", "params": {...}}}``: JSON objects, each
            key unique over the task's lifetime and never reused for another request (the
            Tasks extension's rule); ``{}`` when there is nothing to ask. The same
            outstanding request keeps its key on every call.
        """
        ...

    async def input_responses(self, job_id: str, responses: dict[str, Any]) -> None:
        """Apply the client's answers to the job's input requests (``tasks/update``).

        Args:
            job_id: the owned job.
            responses: ``inputResponses`` as the client sent them: ``{key: JSON value}``
                (for an elicitation ``{"action": "accept" | "decline" | "cancel", "content": {...}}``).

        Raises:
            MCPError: ``INVALID_PARAMS`` for an answer that is refused (a key this broker
                never issued or already answered, a tampered, replayed, expired or foreign
                request state); a refusal changes nothing, and the approval stays pending.
        """
        ...

    async def job_changed(self, job_id: str, status: str) -> None:
        """Hear that an owned job's engine status changed (the watcher saw it move).

        Args:
            job_id: the owned job.
            status: its new engine status (:class:`shadowcode.enums.TaskStatus` value:
                ``queued``, ``running``, ``waiting``, ``done``, ``failed``, ``cancelled``,
                ``interrupted``); ``waiting`` means it waits for an approval.

        Must not raise: an exception is logged and dropped, and the watcher goes on.
        """
        ...


class NoInputBroker:
    """The default :class:`InputBroker`: asks the host for nothing.

    Jobs that wait for an approval stay ``working`` (the status message names the approval
    and ``shadowcode approve ID``), and any ``tasks/update`` answer is refused.
    """

    async def input_requests(
        self, job_id: str, client_capabilities: types.ClientCapabilities | None
    ) -> dict[str, dict[str, Any]]:
        """Nothing is ever asked: ``{}``."""
        return {}

    async def input_responses(self, job_id: str, responses: dict[str, Any]) -> None:
        """Refuse every key: none was ever issued.

        Raises:
            MCPError: ``INVALID_PARAMS``, naming the first unknown key, whenever ``responses``
                is non-empty; an empty map is accepted and changes nothing.
        """
        for key in responses:
            raise MCPError(types.INVALID_PARAMS, f"no outstanding input request {key!r} for task {job_id}")

    async def job_changed(self, job_id: str, status: str) -> None:
        """Nothing to push."""
