"""The one registry of the tools a task's model can be given (ENG-04, SRV-20, CLI-07).

Each :class:`ToolSpec` names a tool, the permission level a task needs for it, the text the
model reads (``description``), the one line a person reads in the ``shadow_tools`` listing
(``summary``) and the JSON schema of its arguments (``parameters``). The native tools
(files, commands, tests, background processes), the two compact MCP tools (``mcp_tools``,
``mcp_call``) and the resource and prompt helpers (``mcp_resources``, ``mcp_read_resource``,
``mcp_get_prompt``, CW-06) live here; the toolbox, the ``shadow_tools`` listing and a Build task's
MCP tools (:mod:`shadowcode.engine.mcp.task_servers`) all read this table, in this order.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.limits import MCP_RESOURCES_PAGE_MAX, MCP_TOOL_NAMES_PAGE_MAX

__all__ = [
    "COMPACT_MCP_TOOLS",
    "MCP_HELPER_TOOLS",
    "TOOL_SPECS",
    "ToolSpec",
    "function_schema",
    "listing",
    "native_tools_for",
    "spec",
]


@dataclass(frozen=True)
class ToolSpec:
    """One tool a task's model can call.

    Attributes:
        name: the function name the model calls.
        level: the lowest effective permission level of a task given this tool.
        description: what the model is told the tool does.
        summary: the one line the ``shadow_tools`` listing shows a person (SRV-20).
        parameters: the JSON schema of the argument object.
        mcp: ``"compact"`` for ``mcp_tools`` and ``mcp_call`` (CLI-07), ``"helper"`` for the resource
            and prompt helpers (CW-06); both are given only to Build tasks with enabled servers.
            None for a native tool.
    """

    name: str
    level: PermissionLevel
    description: str
    summary: str
    parameters: dict[str, Any]
    mcp: Literal["compact", "helper"] | None = None


_STR: dict[str, Any] = {"type": "string"}
_ARGV: dict[str, Any] = {
    "type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Literal argv; no shell."}  # fmt: skip


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object schema accepting exactly ``properties`` (the native tools refuse unknown arguments)."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _open(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_READ, _WRITE, _ELEVATED = PermissionLevel.READ_ONLY, PermissionLevel.WORKSPACE, PermissionLevel.ELEVATED

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("read_file", _READ, "Read a text file of the project.", "Read a file inside the project.",
             _closed({"path": _STR, "offset": {"type": "integer", "minimum": 0}}, ["path"])),
    ToolSpec("list_files", _READ, "List a directory of the project.", "List a directory inside the project.",
             _closed({"path": _STR}, [])),
    ToolSpec("search_files", _READ, "Search the project's files for a text (or a regex with regex=true).",
             "Search file contents inside the project.",
             _closed({"pattern": _STR, "path": _STR, "regex": {"type": "boolean"}}, ["pattern"])),
    ToolSpec("write_file", _WRITE, "Create or overwrite a file (checkpointed first).",
             "Create or overwrite a file (checkpointed first).",
             _closed({"path": _STR, "content": _STR}, ["path", "content"])),
    ToolSpec("edit_file", _WRITE, "Replace one exact occurrence of old with new in a file (checkpointed first).",
             "Replace text in a file (checkpointed first).",
             _closed({"path": _STR, "old": _STR, "new": _STR}, ["path", "old", "new"])),
    ToolSpec("run_command", _WRITE,
             "Run one command (literal argv, no shell) after the user approves that exact argv and cwd.",
             "Run one command line after exact approval of argv and cwd.",
             _closed({"argv": _ARGV, "cwd": {"type": "string", "description": "Project-relative directory."}},
                     ["argv"])),
    ToolSpec("run_tests", _WRITE, "Run the project's test command after approval (detected when command is omitted).",
             "Run the detected test command as a test job, after approval.",
             _closed({"command": _ARGV}, [])),
    ToolSpec("background_start", _ELEVATED, "Start a background process (outlives the task) after approval.",
             "Start a background process that outlives the task, after approval.",
             _closed({"argv": _ARGV, "cwd": _STR}, ["argv"])),
    ToolSpec("background_stop", _ELEVATED, "Stop a background process by id.", "Stop a background process.",
             _closed({"id": _STR}, ["id"])),
    ToolSpec("mcp_tools", _WRITE,
             "Discover external MCP tools: no arguments lists the enabled servers; `server` lists its tool "
             f"names ({MCP_TOOL_NAMES_PAGE_MAX} a page, `page` from 0); `server` with `tool` returns that tool's "
             "exact input schema.",
             "Discover tools of enabled external MCP servers (Build tasks).",
             _open({"server": _STR, "tool": _STR, "page": {"type": "integer", "minimum": 0}}, []), mcp="compact"),
    ToolSpec("mcp_call", _WRITE,
             "Call a tool of an enabled external MCP server with an argument object. Each call waits for the "
             "user's approval of this exact server, tool and arguments.",
             "Call an external MCP tool after an approval naming its exact arguments.",
             _open({"server": _STR, "tool": _STR, "arguments": {"type": "object"}}, ["server", "tool"]), mcp="compact"),
    ToolSpec("mcp_resources", _WRITE,
             "List the resources, resource templates, prompts and verified skills of one enabled external MCP "
             f"server (`server`) or of all of them, {MCP_RESOURCES_PAGE_MAX} of each a page (`page` from 0). "
             "Needs no approval; listing a skill loads nothing.",
             "List resources, templates and prompts of enabled external MCP servers (Build tasks).",
             _open({"server": _STR, "page": {"type": "integer", "minimum": 0}}, []), mcp="helper"),
    ToolSpec("mcp_read_resource", _WRITE,
             "Read one resource of an enabled external MCP server by its exact URI (a listed one or one "
             "built from a template). Each read waits for the user's approval of this exact server and URI. "
             "A file of a listed skill is checked against its listed size and digest and refused on a mismatch.",
             "Read an external MCP resource after an approval naming its exact URI.",
             _open({"server": _STR, "uri": _STR}, ["server", "uri"]), mcp="helper"),
    ToolSpec("mcp_get_prompt", _WRITE,
             "Get one prompt of an enabled external MCP server with its string arguments, which must match "
             "the prompt's declared arguments. Each request waits for the user's approval of this exact "
             "server, prompt and arguments.",
             "Get an external MCP prompt after an approval naming its exact arguments.",
             _open({"server": _STR, "prompt": _STR, "arguments": {"type": "object"}}, ["server", "prompt"]),
             mcp="helper"),
)  # fmt: skip
"""Every tool, in the order the listing shows them and tasks are offered them."""

_BY_NAME: dict[str, ToolSpec] = {s.name: s for s in TOOL_SPECS}

COMPACT_MCP_TOOLS: tuple[str, ...] = tuple(s.name for s in TOOL_SPECS if s.mcp)
"""The tools every Build task with enabled servers gets: ``mcp_tools``, ``mcp_call`` (CLI-07), then the
resource and prompt helpers ``mcp_resources``, ``mcp_read_resource`` and ``mcp_get_prompt`` (CW-06)."""

MCP_HELPER_TOOLS: tuple[str, ...] = tuple(s.name for s in TOOL_SPECS if s.mcp == "helper")
"""The resource and prompt helpers among them (CW-06), answered by the task's resource tools."""


def spec(name: str) -> ToolSpec | None:
    """The spec named ``name``, or None for a name outside the registry (an inline MCP tool)."""
    return _BY_NAME.get(name)


def native_tools_for(mode: str, level: str) -> tuple[str, ...]:
    """Names of the native tools for a task of ``mode`` at effective ``level``, in registry order (ENG-04).

    Plan and Review tasks, and any task at ``read_only``, get the reading tools only; ``workspace``
    adds writing, commands and tests; ``elevated`` adds background processes.
    """
    ceiling = PermissionLevel.READ_ONLY if mode in (TaskMode.PLAN, TaskMode.REVIEW) else PermissionLevel(level)
    return tuple(s.name for s in TOOL_SPECS if not s.mcp and s.level.within(ceiling))


def function_schema(tool: ToolSpec) -> dict[str, Any]:
    """The OpenAI function-tool schema of ``tool``: ``{"type": "function", "function": {...}}`` (a fresh copy)."""
    parameters = copy.deepcopy(tool.parameters)
    function = {"name": tool.name, "description": tool.description, "parameters": parameters}
    return {"type": "function", "function": function}


def listing() -> list[dict[str, str]]:
    """The ``shadow_tools`` view: ``[{"name", "level", "description"}]`` in registry order (SRV-20).

    ``description`` is the tool's one-line :attr:`ToolSpec.summary`.
    """
    return [{"name": s.name, "level": s.level.value, "description": s.summary} for s in TOOL_SPECS]
