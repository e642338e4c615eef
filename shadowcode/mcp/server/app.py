"""Builds the SDK ``Server`` for one connection: discovery, tools, resources, prompts.

The SDK supplies negotiation (2026-07-28 per-request metadata and ``server/discover``, and
the legacy ``initialize`` revisions, SRV-03) and JSON-RPC correlation. This module adds the
operation limits of SRV-25 that are not the transport's: at most OPERATIONS_IN_FLIGHT_MAX tool
and resource operations at once, OPERATION_DEADLINE_SECONDS each, results of at most
RESULT_MAX_BYTES.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from shadowcode import __version__
from shadowcode.errors import NotFound, ShadowcodeError
from shadowcode.limits import OPERATION_DEADLINE_SECONDS, OPERATIONS_IN_FLIGHT_MAX, RESULT_MAX_BYTES
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.direct_calls import DirectToolCalls
from shadowcode.mcp.server.resources import PROMPTS, RESOURCES, read_resource, render_prompt
from shadowcode.mcp.server.tools import TOOLS, ToolSpec, tool_named

__all__ = ["ToolCalls", "ToolOutcome", "build_server", "build_session", "result_too_large"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "ShadowCode serves one fixed project. Inspect it with shadow_status, shadow_understand, shadow_review and "
    "shadow_doctor; keep notes with shadow_memory and goals with shadow_goal; query project databases read-only "
    "with shadow_sqlite. The server is read-only unless started with --allow-write."
)


class _Operations:
    """Counts tool/resource operations in flight on one connection (SRV-25).

    ``enter`` refuses the operation past ``limit`` with a JSON-RPC error (``INVALID_REQUEST``)
    and a stderr line; ``leave`` must follow every successful ``enter``.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0

    def enter(self) -> None:
        if self.running >= self.limit:
            sys.stderr.write(f"shadowcode: refusing a request: more than {self.limit} operations in flight\n")
            raise MCPError(
                types.INVALID_REQUEST,
                f"too many operations in flight: at most {self.limit} tool or resource operations run at once; "
                "retry after one finishes",
            )
        self.running += 1

    def leave(self) -> None:
        self.running -= 1


def result_too_large(text: str, max_bytes: int = RESULT_MAX_BYTES) -> bool:
    """Whether a serialized tool or resource result is over the result limit (SRV-25).

    Args:
        text: the result as sent, i.e. the JSON text of a tool's document or a resource's text.
        max_bytes: the limit in bytes of UTF-8; a result of exactly ``max_bytes`` is allowed.

    Returns:
        True when ``text`` encodes to more than ``max_bytes`` bytes.
    """
    if len(text) > max_bytes:
        return True  # every character is at least one byte
    return len(text.encode("utf-8")) > max_bytes


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


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's answer: the JSON text and document of a result, or an error's message.

    Attributes:
        text: the result's JSON text, or the error message (``is_error``).
        document: the result as structured content; None for an error.
    """

    text: str
    document: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.document is None


class ToolCalls:
    """Runs the seventeen tools for one connection under SRV-25's operation limits.

    A tool failure (a :class:`ShadowcodeError`, invalid arguments, an oversized result, the
    deadline, an unexpected exception) is an error outcome, never an exception; only a request
    past the in-flight limit raises (``MCPError``, ``INVALID_REQUEST``).
    """

    def __init__(
        self, ctx: ServerContext, ops: _Operations, operation_deadline_seconds: float, result_max_bytes: int
    ) -> None:
        self.ctx = ctx
        self.ops = ops
        self.operation_deadline_seconds = operation_deadline_seconds
        self.result_max_bytes = result_max_bytes

    async def run(
        self, spec: ToolSpec, arguments: dict[str, Any], scope: anyio.CancelScope | None = None
    ) -> ToolOutcome | None:
        """Validate ``arguments`` against ``spec`` and run it.

        Args:
            spec: the tool.
            arguments: the call's arguments.
            scope: a fresh cancel scope the call runs in (the direct path cancels it when the
                client cancels the call); its deadline is set here.

        Returns:
            The outcome; None when ``scope`` was cancelled before the deadline.

        Raises:
            MCPError: more operations in flight than the connection allows (SRV-25).
        """
        try:
            args = spec.input.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            return ToolOutcome(f"invalid arguments for {spec.name}: {problems}")
        deadline = self.operation_deadline_seconds
        scope = scope or anyio.CancelScope()
        scope.deadline = anyio.current_time() + deadline
        doc: dict[str, Any] | None = None
        self.ops.enter()
        try:
            with scope:
                doc = await spec.handler(self.ctx, args)
        except ShadowcodeError as exc:
            return ToolOutcome(exc.message)
        except Exception:
            logger.exception("tool handler failed")
            return ToolOutcome(f"{spec.name} failed unexpectedly; details are in the server's stderr")
        finally:
            self.ops.leave()
        if doc is None:
            if anyio.current_time() < scope.deadline:
                return None  # cancelled by the client
            sys.stderr.write(f"shadowcode: {spec.name} passed its {deadline:g} s deadline\n")
            return ToolOutcome(f"{spec.name} did not finish within {deadline:g} seconds")
        text = json.dumps(doc, ensure_ascii=False)
        if result_too_large(text, self.result_max_bytes):
            sys.stderr.write(f"shadowcode: the result of {spec.name} is over {self.result_max_bytes} bytes\n")
            return ToolOutcome(
                f"the result of {spec.name} is too large: more than {self.result_max_bytes} bytes; narrow the request"
            )
        return ToolOutcome(text, doc)


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
    ops = _Operations(operations_max)
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
