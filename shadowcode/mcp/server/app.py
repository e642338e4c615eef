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
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from shadowcode import __version__
from shadowcode.errors import NotFound, ShadowcodeError
from shadowcode.limits import OPERATION_DEADLINE_SECONDS, OPERATIONS_IN_FLIGHT_MAX, RESULT_MAX_BYTES
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import DirectToolCalls
from shadowcode.mcp.server.resources import PROMPTS, RESOURCES, read_resource, render_prompt
from shadowcode.mcp.server.tool_calls import Operations, ToolCalls, result_too_large
from shadowcode.mcp.server.tools import TOOLS, tool_named

__all__ = ["build_server", "build_session", "result_too_large"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "ShadowCode serves one fixed project. Inspect it with shadow_status, shadow_understand, shadow_review and "
    "shadow_doctor; keep notes with shadow_memory and goals with shadow_goal; query project databases read-only "
    "with shadow_sqlite. The server is read-only unless started with --allow-write."
)


@functools.cache
def _tool_list() -> tuple[types.Tool, ...]:
    """The seventeen tools as listed; built once per process (their JSON Schemas took 7 ms a session)."""
    return tuple(
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.input.model_json_schema(),
            annotations=types.ToolAnnotations(
                title=t.name.removeprefix("shadow_").replace("_", " ").capitalize(),
                read_only_hint=t.read_only,
                destructive_hint=t.destructive,
                idempotent_hint=t.idempotent,
                open_world_hint=t.open_world,
            ),
        )
        for t in TOOLS
    )


@functools.cache
def _input_schemas() -> dict[str, dict[str, Any]]:
    """Each tool's input JSON Schema by name, for the SDK's ``Mcp-Param-*`` header check (2026-07-28 HTTP)."""
    return {tool.name: tool.input_schema for tool in _tool_list()}


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


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
    operations_max: int = OPERATIONS_IN_FLIGHT_MAX,
    operation_deadline_seconds: float = OPERATION_DEADLINE_SECONDS,
    result_max_bytes: int = RESULT_MAX_BYTES,
) -> tuple[Server[Any], DirectToolCalls]:
    """:func:`build_server`, and the stdio transport's direct ``tools/call`` path sharing its limits.

    Both answer a tool call through the same :class:`ToolCalls`, so the in-flight count, the
    deadline and the result limit are one per connection whichever path a call takes (SRV-25).

    Returns:
        ``(server, direct)``: hand ``direct`` to :func:`shadowcode.mcp.server.stdio.stdio_transport`.
    """
    ops = Operations(operations_max)
    calls = ToolCalls(ctx, ops, operation_deadline_seconds, result_max_bytes)
    tools = _tool_list()

    async def list_tools(_rctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def call_tool(_rctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = tool_named(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        outcome = await calls.run(spec, params.arguments or {})
        assert outcome is not None  # only a scope of the caller's can be cancelled
        if outcome.is_error:
            return _error_result(outcome.text)
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

    async def read(_rctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        ops.enter()
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
        on_read_resource=read,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        # Without it the SDK builds the whole tool listing for every 2026-07-28 HTTP tools/call.
        get_tool_input_schema=_input_schemas().get,
    )
    # The SDK wraps every request in an OpenTelemetry span by default; ShadowCode installs no
    # exporter, so the spans only cost time on every request (the SDK's documented opt-out).
    server.middleware = []
    return server, DirectToolCalls(calls)
