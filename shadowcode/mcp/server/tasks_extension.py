"""The Tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28) over delegated jobs (SRV-26).

A delegated job and an MCP task are one thing seen twice: the task id is the job id, and the
task is its connection's owned job, so ownership decides who may read or cancel it exactly
as for ``shadow_jobs`` (SRV-16, SRV-21): another owner's job, or an unknown id, is
``-32602``. Only a request whose ``_meta["io.modelcontextprotocol/clientCapabilities"]``
declares the extension gets a task; everything else keeps today's answers.

* ``tools/call`` of ``shadow_run`` or ``shadow_test`` from a declaring request answers a flat
  ``CreateTaskResult`` (``resultType: "task"``) once the job is recorded; a refused
  submission is the usual ``isError`` result and creates nothing.
* ``tasks/get`` reads the job (:class:`~shadowcode.engine.api.JobState`) and renders it as a
  ``DetailedTask``: queued or running jobs read ``working`` with the step they are on; a job
  waiting for an approval reads ``input_required`` with the broker's ``inputRequests`` when
  the :class:`~shadowcode.mcp.server.input_broker.InputBroker` has any, else ``working``
  with a message naming the approval and ``shadowcode approve ID``; ``done`` and ``failed``
  jobs read ``completed`` with the job's result as a ``CallToolResult`` (``isError`` for a
  failed job); ``cancelled`` reads ``cancelled``; an ``interrupted`` job (its engine stopped
  before it finished, so no result will ever exist) reads ``failed`` with an internal error.
* ``tasks/cancel`` is the owner's cancel (idempotent), ``tasks/update`` hands
  ``inputResponses`` to the broker; both answer an empty result.
* ``tasks/*`` from a request that did not declare the extension answers ``-32021`` naming it;
  on a legacy (``initialize``) connection the methods do not exist (``-32601``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from shadowcode.engine import api as m
from shadowcode.enums import TaskStatus
from shadowcode.errors import NotFound, ShadowcodeError
from shadowcode.json_values import json_object
from shadowcode.limits import RESULT_MAX_BYTES, TASK_POLL_INTERVAL_SECONDS
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.input_broker import InputBroker
from shadowcode.mcp.server.tool_calls import json_text, result_too_large

__all__ = [
    "DELEGATING_TOOLS",
    "TASKS_EXTENSION",
    "TaskParams",
    "TaskUpdateParams",
    "declares_tasks",
    "detailed_task",
    "missing_tasks_capability",
    "require_tasks",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier, advertised in ``server/discover``'s ``capabilities.extensions`` (2026-07-28)."""

DELEGATING_TOOLS = frozenset({"shadow_run", "shadow_test"})
"""The tools whose call becomes a task for a client that declared the extension."""

_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel`` parameters: ``{"taskId": str}``."""

    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskParams):
    """``tasks/update`` parameters: ``{"taskId": str, "inputResponses": {key: value}}``."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def declares_tasks(params: Any) -> bool:
    """Whether a request's raw params declare the extension in ``_meta``'s client capabilities.

    Args:
        params: the request's ``params`` as received (any JSON value).
    """
    request = json_object(params)
    if request is None:
        return False
    meta = json_object(request.get("_meta"))
    capabilities = json_object(meta.get(_CAPABILITIES_KEY)) if meta is not None else None
    extensions = json_object(capabilities.get("extensions")) if capabilities is not None else None
    return extensions is not None and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_tasks_capability(method: str) -> MCPError:
    """The ``-32021`` error for ``method`` asked without declaring the extension (SRV-26)."""
    return MCPError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {method} needs the {TASKS_EXTENSION} extension declared in "
        f"_meta[{_CAPABILITIES_KEY!r}].extensions",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def require_tasks(rctx: Any) -> None:
    """Refuse a ``tasks/*`` request that may not be served (SRV-26).

    Args:
        rctx: the SDK's request context.

    Raises:
        MCPError: ``-32601`` on a legacy connection; ``-32021`` when the request did not
            declare the extension.
    """
    if rctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found", data=rctx.method)
    if not declares_tasks(rctx.params):
        raise missing_tasks_capability(rctx.method)


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _outcome(state: m.JobState) -> dict[str, Any]:
    """A finished job's result as a ``CallToolResult``: the job's final report as structured content, and a
    text block saying how it ended with its answer or error (what a host hands its model)."""
    report = {
        "job_id": state.id,
        "mode": str(state.mode),
        "status": str(state.status),
        "answer": state.answer,
        "error": state.error,
        "created_at": state.created_at,
        "finished_at": state.finished_at,
    }
    outcome = state.answer if state.answer is not None else state.error
    text = f"Job {state.id} ({state.mode}) ended {state.status}" + (f": {outcome}" if outcome else ".")
    if result_too_large(json_text(report), RESULT_MAX_BYTES) or result_too_large(text, RESULT_MAX_BYTES):
        message = f"the result of job {state.id} is over {RESULT_MAX_BYTES} bytes; read it with shadow_jobs"
        return {"content": [{"type": "text", "text": message}], "isError": True}
    is_error = state.status is not TaskStatus.DONE
    return {"content": [{"type": "text", "text": text}], "structuredContent": report, "isError": is_error}


async def detailed_task(
    ctx: ServerContext,
    broker: InputBroker,
    job_id: str,
    client_capabilities: types.ClientCapabilities | None,
) -> dict[str, Any]:
    """The ``DetailedTask`` of the owned job ``job_id``, as ``tasks/get`` and ``notifications/tasks`` carry it.

    Args:
        ctx: the connection (its engine and owner).
        broker: asked for the input requests of a job that waits for an approval.
        job_id: the task id.
        client_capabilities: what the asking request declared (handed to the broker).

    Returns:
        ``{"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs",
        "pollIntervalMs"}`` plus ``inputRequests``, ``result`` or ``error`` as the status
        asks. ``ttlMs`` is null: a job is never discarded while its owner lives.

    Raises:
        MCPError: ``INVALID_PARAMS`` when ``job_id`` is not a job of this connection's owner;
            ``INTERNAL_ERROR`` when the engine cannot be asked.
    """
    try:
        state = await ctx.api.job_state(m.JobRef(job_id), ctx.caller())
    except NotFound as exc:
        raise MCPError(types.INVALID_PARAMS, f"Failed to retrieve task: no task {job_id!r} of this connection") from exc
    except ShadowcodeError as exc:
        raise MCPError(types.INTERNAL_ERROR, exc.message) from exc
    task: dict[str, Any] = {
        "taskId": state.id,
        "status": "working",
        "statusMessage": state.step,
        "createdAt": _iso(state.created_at),
        "lastUpdatedAt": _iso(state.updated_at),
        "ttlMs": None,
        "pollIntervalMs": round(TASK_POLL_INTERVAL_SECONDS * 1000),
    }
    status = state.status
    if status is TaskStatus.WAITING:
        requests = await broker.input_requests(state.id, client_capabilities)
        if requests:
            task["status"] = "input_required"
            task["inputRequests"] = requests
    elif status in (TaskStatus.DONE, TaskStatus.FAILED):
        task["status"] = "completed"
        task["result"] = _outcome(state)
    elif status is TaskStatus.CANCELLED:
        task["status"] = "cancelled"
    elif status is TaskStatus.INTERRUPTED:
        task["status"] = "failed"
        task["error"] = {"code": types.INTERNAL_ERROR, "message": state.error or "the engine running the job stopped"}
    return task


def created_task(task: dict[str, Any]) -> dict[str, Any]:
    """A ``CreateTaskResult`` from a job's ``DetailedTask``: the flat task with ``resultType: "task"`` (SRV-26).

    Only the ``Task`` fields are kept (a freshly recorded job has no result, input requests or
    error to carry).
    """
    keys = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs")
    return {"resultType": "task", **{key: task[key] for key in keys if key in task}}
