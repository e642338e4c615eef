"""What one Build task knows of each external MCP server, and the views and checks made from it.

Implements CLI-07, CLI-13, CLI-14, CLI-15, CW-02, CW-05, CW-07, CW-10.

A :class:`ServerState` holds a server's definition, its tool catalog (cached or read at
connection time) and its connection. A connection that failed or closed no longer serves its
catalog (:attr:`ServerState.lost`): the listing shows no tools for it and every view or call
of it says it is unavailable (CLI-15). :func:`check_arguments` refuses a call before anything
is sent: unknown tool, arguments that are not an object, larger than
MCP_TOOL_ARGUMENTS_MAX_BYTES or not valid for the tool's input schema (CLI-13, CLI-14), and a
tool the definition's ``enabled_tools`` / ``disabled_tools`` hide (CW-02). Hidden tools are
never part of :attr:`ServerState.tools`: the model, ``mcp_tools`` and ``mcp tools`` see only
what :meth:`ServerState.offer` let through; :attr:`ServerState.listed` keeps every name the
server listed, for the warnings of :func:`filter_warnings`.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any

import anyio

from shadowcode.errors import ToolError
from shadowcode.json_values import json_object
from shadowcode.limits import MCP_TIMEOUT_DEFAULT_SECONDS, MCP_TOOL_ARGUMENTS_MAX_BYTES, MCP_TOOL_NAMES_PAGE_MAX
from shadowcode.mcp.client.connection import Connection, ConnectionState
from shadowcode.mcp.client.definitions import ServerDefinition, ServerOptions
from shadowcode.mcp.client.timeouts import Timeouts, timeouts_of

__all__ = ["ServerState", "check_arguments", "filter_warnings", "list_server", "list_servers"]

logger = logging.getLogger(__name__)


@dataclass
class ServerState:
    """One enabled server of a task.

    Attributes:
        definition: the definition fixed at submission.
        tools: the catalog (``tools/list`` entries as JSON), or None when none could be read.
        conn: the task's connection, once started (never re-opened after a failure).
        unavailable: why the server offers no catalog or could not connect, or None.
        closed_recorded: whether ``mcp.closed`` was recorded for ``conn``.
        generation: the connection's ``tools_generation`` that ``tools`` holds (CW-05).
        offered: the ``generation`` the model last saw (its latest request or ``mcp_tools``
            listing); a call made against an older one is refused (CW-05).
        listed: every tool name the server listed, before the filters.
        starting: set once the task's one start of this server has ended (either way); None
            before a start was attempted (CW-10).
    """

    definition: ServerDefinition
    tools: list[dict[str, Any]] | None = None
    conn: Connection | None = None
    unavailable: str | None = None
    closed_recorded: bool = False
    generation: int = 0
    offered: int = 0
    listed: list[str] | None = None
    starting: anyio.Event | None = None

    def offer(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep the names the server ``tools`` lists and return those the filters let through (CW-02)."""
        self.listed = [str(t.get("name")) for t in tools]
        spec = self.definition.spec
        return [t for t in tools if spec.allows(str(t.get("name")))]

    @property
    def timeouts(self) -> Timeouts:
        """The connect, call and read timeouts, defaults applied (CW-07)."""
        return timeouts_of(self.definition.spec)

    @property
    def timeout_seconds(self) -> float:
        """Seconds for initialization, discovery and each call."""
        return self.definition.spec.timeout_sec or MCP_TIMEOUT_DEFAULT_SECONDS

    @property
    def lost(self) -> str | None:
        """Why a connection that failed or closed no longer serves the catalog, or None (CLI-15)."""
        conn = self.conn
        if conn is None or conn.state in (ConnectionState.CONNECTING, ConnectionState.READY):
            return None
        return conn.error or f"the connection is {conn.state.value}"

    @property
    def state(self) -> str:
        """``not connected``, ``connecting``, ``connected``, ``failed``, ``closed`` or ``unavailable`` (CW-10).

        ``connecting`` only while a start is in flight (a handshake, or a sign-in being looked
        up); a server never started (lazy, or not yet reached) is ``not connected``.
        """
        conn = self.conn
        if conn is not None and conn.state is ConnectionState.READY:
            return "connected"
        if conn is not None and conn.state is not ConnectionState.CONNECTING:
            return conn.state.value
        if conn is not None or (self.starting is not None and not self.starting.is_set()):
            return "connecting"
        return "unavailable" if self.unavailable else "not connected"

    def unavailable_error(self, reason: str, *, sent: bool = False) -> ToolError:
        """The error of a view or call of a lost server; ``sent=False`` adds that nothing was sent."""
        return ToolError(
            f"MCP server {self.definition.id} is unavailable ({reason}); "
            + ("" if sent else "nothing was sent; ")
            + "start a new task to reconnect"
        )

    def tool(self, name: str) -> dict[str, Any] | None:
        """The catalog entry named ``name``, or None."""
        for tool in self.tools or ():
            if tool.get("name") == name:
                return tool
        return None


def list_servers(servers: list[ServerState]) -> dict[str, Any]:
    """``mcp_tools`` without arguments: ``{"servers": [{"server", "id", "description", "tools", "state", "lazy"}]}``.

    ``tools`` is the number of tools, or None when the server has no catalog or lost its connection;
    ``state`` is :attr:`ServerState.state` (CW-10).
    """
    return {
        "servers": [
            {
                "server": s.definition.name,
                "id": s.definition.id,
                "description": s.definition.spec.description,
                "tools": None if s.tools is None or s.lost is not None else len(s.tools),
                "state": s.state,
                "lazy": s.definition.spec.lazy,
            }
            for s in servers
        ]
    }


def list_server(server: ServerState, args: dict[str, Any]) -> dict[str, Any]:
    """``mcp_tools`` with ``server``: one page of tool names, or with ``tool`` that tool's exact schema.

    Raises:
        ToolError: the server lost its connection or has no catalog, no such tool, a negative page.
    """
    if server.tools is None:
        raise ToolError(f"MCP server {server.definition.id} has no tool list: {server.unavailable}")
    if server.lost is not None:
        raise server.unavailable_error(server.lost, sent=True)
    if args.get("tool"):
        tool = server.tool(str(args["tool"]))
        if tool is None:
            raise ToolError(f"MCP server {server.definition.name} has no tool {args['tool']!r}")
        return {
            "server": server.definition.name,
            "tool": {
                "name": tool.get("name"),
                "description": tool.get("description"),
                "input_schema": tool.get("inputSchema"),
                "annotations": tool.get("annotations"),
            },
        }
    page = int(args.get("page", 0))
    if page < 0:
        raise ToolError("page must be 0 or more")
    names = [str(t.get("name")) for t in server.tools]
    pages = max(1, math.ceil(len(names) / MCP_TOOL_NAMES_PAGE_MAX))
    chunk = names[page * MCP_TOOL_NAMES_PAGE_MAX : (page + 1) * MCP_TOOL_NAMES_PAGE_MAX]
    return {
        "server": server.definition.name,
        "tools": chunk,
        "page": page,
        "pages": pages,
        "next_page": page + 1 if page + 1 < pages else None,
    }


def check_arguments(server: ServerState, tool_name: str, given: object) -> dict[str, Any]:
    """The arguments of a call, checked before anything is sent (CLI-13, CLI-14, CLI-15).

    Raises:
        ToolError: the server lost its connection or has no catalog, a tool its filters hide (CW-02),
            no such tool, arguments that are not an object, larger than MCP_TOOL_ARGUMENTS_MAX_BYTES
            or invalid for the schema.
    """
    if server.tools is None:
        raise ToolError(f"MCP server {server.definition.id} has no tool list: {server.unavailable}")
    if server.lost is not None:
        raise server.unavailable_error(server.lost)
    if not server.definition.spec.allows(tool_name):
        raise ToolError(
            f"the tool {tool_name!r} of MCP server {server.definition.name} is hidden by its definition's "
            "enabled_tools or disabled_tools; nothing was sent"
        )
    tool = server.tool(tool_name)
    if tool is None:
        raise ToolError(f"MCP server {server.definition.name} has no tool {tool_name!r}; nothing was sent")
    arguments = json_object(given)
    if arguments is None:
        raise ToolError("arguments must be a JSON object; nothing was sent")
    size = len(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MCP_TOOL_ARGUMENTS_MAX_BYTES:
        raise ToolError(
            f"the arguments are {size} bytes; the limit is {MCP_TOOL_ARGUMENTS_MAX_BYTES} bytes; nothing was sent"
        )
    _validate(tool, arguments)
    return arguments


def _validate(tool: dict[str, Any], arguments: dict[str, Any]) -> None:
    """Refuse arguments that do not match the tool's input schema (CLI-14); nothing is sent."""
    from jsonschema import SchemaError, ValidationError
    from jsonschema.validators import validator_for

    schema = json_object(tool.get("inputSchema"))
    if schema is None:
        return
    try:
        validator_cls = validator_for(schema)
        validator_cls.check_schema(schema)
    except SchemaError:
        logger.warning(
            "the input schema of MCP tool %r is not valid JSON Schema; arguments are not checked", tool.get("name")
        )
        return
    try:
        validator_cls(schema).validate(arguments)
    except ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ToolError(
            f"invalid arguments for {tool.get('name')} at {where}: {exc.message}; nothing was sent"
        ) from None


def filter_warnings(spec: ServerOptions, listed: list[str]) -> list[str]:
    """One warning per ``enabled_tools`` entry naming no tool the server listed (CW-02).

    Such an entry is not an error (a server may add the tool later); it hides nothing and lets
    nothing through.

    Args:
        spec: the definition.
        listed: every tool name the server listed, before the filters.
    """
    names = set(listed)
    return [
        f"enabled_tools names {name!r}, which the server does not list"
        for name in spec.enabled_tools or ()
        if name not in names
    ]
