"""Builds the SDK ``Server`` for one connection: discovery, tools, resources, prompts.

The SDK supplies negotiation (2026-07-28 per-request metadata and ``server/discover``, and
the legacy ``initialize`` revisions, SRV-03) and JSON-RPC correlation. This module adds the
operation limits of SRV-25 that are not the transport's: at most OPERATIONS_IN_FLIGHT_MAX tool
and resource operations at once, OPERATION_DEADLINE_SECONDS each, results of at most
RESULT_MAX_BYTES.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from shadowcode import __version__
from shadowcode.errors import NotFound, ShadowcodeError
from shadowcode.json_values import json_object
from shadowcode.limits import OPERATION_DEADLINE_SECONDS, OPERATIONS_IN_FLIGHT_MAX, RESULT_MAX_BYTES
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.delegation import Delegation
from shadowcode.mcp.server.direct_calls import HANDSHAKE_REVISIONS, DirectToolCalls
from shadowcode.mcp.server.input_broker import InputBroker, NoInputBroker
from shadowcode.mcp.server.outputs import output_schema
from shadowcode.mcp.server.resources import PROMPTS, RESOURCES, read_resource, render_prompt
from shadowcode.mcp.server.tasks_extension import (
    DELEGATING_TOOLS,
    TASKS_EXTENSION,
    TaskParams,
    TaskUpdateParams,
    declares_tasks,
)
from shadowcode.mcp.server.tool_calls import Operations, Progress, ToolCalls, TooManyOperations, result_too_large
from shadowcode.mcp.server.tools import TOOLS, tool_named

if TYPE_CHECKING:
    from shadowcode.mcp.server.host_approvals import HostApprovals

__all__ = ["build_server", "build_session", "input_broker", "result_too_large"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "ShadowCode serves one fixed project. Inspect it with shadow_status, shadow_understand, shadow_review and "
    "shadow_doctor; keep notes with shadow_memory and goals with shadow_goal; query project databases read-only "
    "with shadow_sqlite. The server is read-only unless started with --allow-write."
)


@functools.cache
def _tool_list() -> tuple[types.Tool, ...]:
    """The seventeen tools as listed, each with its ``outputSchema`` (SRV-04); built once per process, at the
    first listing (their JSON Schemas take tens of milliseconds)."""
    return tuple(
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=_input_schemas()[t.name],
            output_schema=output_schema(t.name),
            annotations=types.ToolAnnotations(
                title=t.name.removeprefix("shadow_").replace("_", " ").capitalize(),
                read_only_hint=t.hints.read_only,
                destructive_hint=t.hints.destructive,
                idempotent_hint=t.hints.idempotent,
                open_world_hint=t.hints.open_world,
            ),
        )
        for t in TOOLS
    )


@functools.cache
def _input_schemas() -> dict[str, dict[str, Any]]:
    """Each tool's input JSON Schema by name, for the SDK's ``Mcp-Param-*`` header check (2026-07-28 HTTP)."""
    return {t.name: t.input.model_json_schema() for t in TOOLS}


def input_broker(ctx: ServerContext) -> InputBroker:
    """The :class:`InputBroker` of the connection ``ctx``: the one place a connection's broker is chosen.

    Every way a connection is built (stdio in process, a session relayed into the headless
    engine, the gateway) goes through :func:`build_session`, which asks here unless its
    caller passed a broker. With ``--approve-in-host`` it is the connection's
    :class:`~shadowcode.mcp.server.host_approvals.HostApprovals` (SRV-29, SRV-30); otherwise
    the host is asked for nothing (:class:`NoInputBroker`).
    """
    if not ctx.access.approve_in_host:
        return NoInputBroker()
    from shadowcode.mcp.server.host_approvals import HostApprovals

    return HostApprovals(ctx, page_preferred=ctx.approval_page)


def _together(
    first: Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]],
    second: Callable[[], AbstractAsyncContextManager[dict[str, Any]]],
) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """One server lifespan entering ``first`` (given the server) and then ``second``; yields ``first``'s state."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncGenerator[dict[str, Any], None]:
        async with first(server) as state, second():
            yield state

    return lifespan


def _asking_host(ctx: ServerContext, broker: InputBroker) -> HostApprovals | None:
    """``broker`` when it asks the host (``--approve-in-host``): it needs the server's lifespan and the
    clients' ``notifications/initialized`` (SRV-29); None otherwise."""
    if not ctx.access.approve_in_host:
        return None
    from shadowcode.mcp.server.host_approvals import HostApprovals

    return broker if isinstance(broker, HostApprovals) else None


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _progress(rctx: Any) -> Progress | None:
    """Where the call's progress goes: the request's own stream, when it carried a token (SRV-28)."""
    params = rctx.params
    request = json_object(params)
    meta = json_object(request.get("_meta")) if request is not None else None
    if meta is None or meta.get("progressToken") is None:
        return None
    session = rctx.session

    async def send(progress: float, message: str) -> None:
        await session.report_progress(progress, None, message)

    return send


def build_server(
    ctx: ServerContext,
    *,
    operations_max: int = OPERATIONS_IN_FLIGHT_MAX,
    operation_deadline_seconds: float = OPERATION_DEADLINE_SECONDS,
    result_max_bytes: int = RESULT_MAX_BYTES,
) -> Server[Any]:
    """A ``Server`` serving the seventeen tools, four resources and two prompts for ``ctx``.

    Tool failures (a :class:`ShadowcodeError`, invalid arguments, an oversized result, the
    deadline) become ``isError`` results; unknown tools and resources, a request past the
    in-flight limit, and a resource over the result limit become JSON-RPC errors (SRV-25).

    Args:
        ctx: the connection's fixed project, engine and flags.
        operations_max: tool and resource operations allowed in flight at once.
        operation_deadline_seconds: seconds one tool or resource operation may run.
        result_max_bytes: UTF-8 bytes of one tool result's JSON text or one resource's text.

    Returns:
        The SDK server, ready for ``Server.run``: it looks up one tool's input schema by name
        for the 2026-07-28 HTTP ``Mcp-Param-*`` header check (GW-05) and wraps no request in
        an OpenTelemetry span (no exporter is ever installed).
    """
    return build_session(
        ctx,
        operations_max=operations_max,
        operation_deadline_seconds=operation_deadline_seconds,
        result_max_bytes=result_max_bytes,
    )[0]


def build_session(
    ctx: ServerContext,
    *,
    broker: InputBroker | None = None,
    operations_max: int = OPERATIONS_IN_FLIGHT_MAX,
    operation_deadline_seconds: float = OPERATION_DEADLINE_SECONDS,
    result_max_bytes: int = RESULT_MAX_BYTES,
    listen_seconds: float | None = None,
    calls: ToolCalls | None = None,
) -> tuple[Server[Any], DirectToolCalls]:
    """:func:`build_server`, and the stdio transport's direct ``tools/call`` path sharing its limits.

    Both answer a tool call through the same :class:`ToolCalls`, so the in-flight count, the
    deadline and the result limit are one per connection whichever path a call takes (SRV-25).

    Args:
        ctx: the connection's fixed project, engine and flags.
        broker: what the connection's owned jobs may ask the host (:mod:`shadowcode.mcp.server.input_broker`);
            None for :func:`input_broker`'s choice.
        listen_seconds: how long one ``subscriptions/listen`` stream lives (the gateway's
            GATEWAY_LISTEN_SECONDS); None: until the client goes away (stdio).
        calls: the connection's tool calls when they were served before the SDK was loaded
            (:mod:`shadowcode.mcp.server.lazy_start`); its limits are kept and the three
            operation-limit arguments are not used.

    The server also serves the Tasks extension (SRV-26), ``subscriptions/listen`` and
    ``resources/templates/list`` (SRV-27) and progress of slow tool calls (SRV-28), through
    one :class:`~shadowcode.mcp.server.delegation.Delegation` whose job watcher runs as the
    server's lifespan.

    Returns:
        ``(server, direct)``: hand ``direct`` to :func:`shadowcode.mcp.server.stdio.stdio_transport`.
    """
    broker = input_broker(ctx) if broker is None else broker
    delegation = Delegation(ctx, broker, listen_seconds=listen_seconds)
    if calls is None:
        calls = ToolCalls(ctx, Operations(operations_max), operation_deadline_seconds, result_max_bytes)
    calls.jobs_touched = delegation.jobs_touched
    ops = calls.ops
    operation_deadline_seconds = calls.operation_deadline_seconds
    result_max_bytes = calls.result_max_bytes
    host = _asking_host(ctx, broker)

    async def list_tools(_rctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(_tool_list()))

    async def call_tool(rctx: Any, params: types.CallToolRequestParams) -> Any:
        spec = tool_named(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        if host is not None and spec.name == "shadow_jobs" and rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            asked = await host.call_input(params, rctx.session.client_capabilities, tasks=declares_tasks(rctx.params))
            if asked is not None:
                return asked  # an input_required result: the host asks, then repeats the call (SRV-29)
        try:
            outcome = await calls.run(spec, params.arguments or {}, progress=_progress(rctx))
        except TooManyOperations as exc:
            raise MCPError(exc.code, exc.message) from None
        assert outcome is not None  # only a scope of the caller's can be cancelled
        if outcome.is_error:
            return _error_result(outcome.text)
        if (
            spec.name in DELEGATING_TOOLS
            and rctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            and declares_tasks(rctx.params)
            and outcome.document is not None
            and isinstance(job_id := outcome.document.get("job_id"), str)
        ):
            return await delegation.create_task(rctx, job_id)  # the job is recorded: tasks/get finds it
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)], structured_content=outcome.document
        )

    async def list_resources(_rctx: Any, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=uri, name=name, description=desc, mime_type="application/json")
                for uri, name, desc in RESOURCES
            ]
        )

    async def list_resource_templates(_rctx: Any, _params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read(_rctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            ops.enter()
        except TooManyOperations as exc:
            raise MCPError(exc.code, exc.message) from None
        try:
            with anyio.fail_after(operation_deadline_seconds):
                text = await read_resource(ctx, uri)
        except NotFound as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from exc
        except ShadowcodeError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from exc
        finally:
            ops.leave()
        if result_too_large(text, result_max_bytes):
            sys.stderr.write(f"shadowcode: resource {uri} is over {result_max_bytes} bytes\n")
            raise MCPError(types.INTERNAL_ERROR, f"resource {uri} is too large: more than {result_max_bytes} bytes")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    async def list_prompts(_rctx: Any, _params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=name,
                    description=desc,
                    arguments=[types.PromptArgument(name=a, description=d, required=r) for a, d, r in args],
                )
                for name, desc, args in PROMPTS
            ]
        )

    async def get_prompt(_rctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            description, text = render_prompt(ctx, params.name, params.arguments)
        except ShadowcodeError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from exc
        return types.GetPromptResult(
            description=description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    server = Server(
        "shadowcode",
        version=__version__,
        title="ShadowCode",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read,
        on_subscriptions_listen=delegation.live.listen,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        # Without it the SDK builds the whole tool listing for every 2026-07-28 HTTP tools/call.
        get_tool_input_schema=_input_schemas().get,
        lifespan=delegation.lifespan if host is None else _together(delegation.lifespan, host.running),
    )
    if host is not None:

        async def initialized(rctx: Any, _params: Any) -> None:
            if rctx.protocol_version in HANDSHAKE_REVISIONS:
                host.attach_legacy(rctx.session)

        server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)

    async def discover(rctx: Any, _params: Any) -> types.DiscoverResult:
        # The SDK's own answer (2026-07-28 only: initialize is unchanged), with the Tasks extension
        # advertised, and listChanged only for resources: the tool and prompt lists are fixed.
        capabilities = server.get_capabilities(protocol_version=rctx.protocol_version, extensions={TASKS_EXTENSION: {}})
        if capabilities.tools is not None:
            capabilities.tools.list_changed = False
        if capabilities.prompts is not None:
            capabilities.prompts.list_changed = False
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS), capabilities=capabilities, instructions=INSTRUCTIONS
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
    server.add_request_handler("tasks/get", TaskParams, delegation.tasks_get)
    server.add_request_handler("tasks/update", TaskUpdateParams, delegation.tasks_update)
    server.add_request_handler("tasks/cancel", TaskParams, delegation.tasks_cancel)
    # The SDK wraps every request in an OpenTelemetry span by default; ShadowCode installs no
    # exporter, so the spans only cost time on every request (the SDK's documented opt-out).
    server.middleware = []
    return server, DirectToolCalls(calls)
