"""The bare SDK baseline: a one-tool MCP server on the ``mcp`` 2.3 SDK's lowlevel ``Server``.

Nothing but what the SDK gives: its own ``stdio_server()`` transport, one trivial tool
(``echo``, returns its ``message`` argument as text), no limits, no store, no engine. The
benchmark compares ShadowCode's start-up, call latency and memory against this server to
show what ShadowCode adds on top of the SDK it is built on.

Run: ``python bench/bare_server.py``; serves one client on stdin/stdout until EOF.
"""

from __future__ import annotations

from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["TOOL_NAME", "build", "main"]

TOOL_NAME: Final = "echo"
"""The one tool this server lists."""

_TOOL: Final = types.Tool(
    name=TOOL_NAME,
    description="Return the message.",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)


async def _list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_TOOL])


async def _call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("message", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build() -> Server[Any]:
    """The SDK server with the ``echo`` tool.

    Returns:
        A lowlevel ``Server`` named ``bare`` handling ``tools/list`` and ``tools/call``.
    """
    return Server("bare", version="0", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _serve() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    """Serve one client over stdio until stdin reaches EOF."""
    anyio.run(_serve)


if __name__ == "__main__":
    main()
