"""The one registry of agent tool specs: the shadow_tools listing, the tools per mode and level, the schemas.

Covers ENG-04, SRV-20, CLI-07, CW-06.
"""

from __future__ import annotations

import pytest

from shadowcode.agent.tool_specs import COMPACT_MCP_TOOLS, TOOL_SPECS, function_schema, listing, native_tools_for, spec
from shadowcode.engine.api import Caller, Empty
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.wire import to_json

_LISTED = [
    ("read_file", "read_only", "Read a file inside the project."),
    ("list_files", "read_only", "List a directory inside the project."),
    ("search_files", "read_only", "Search file contents inside the project."),
    ("write_file", "workspace", "Create or overwrite a file (checkpointed first)."),
    ("edit_file", "workspace", "Replace text in a file (checkpointed first)."),
    ("run_command", "workspace", "Run one command line after exact approval of argv and cwd."),
    ("run_tests", "workspace", "Run the detected test command as a test job, after approval."),
    ("background_start", "elevated", "Start a background process that outlives the task, after approval."),
    ("background_stop", "elevated", "Stop a background process."),
    ("mcp_tools", "workspace", "Discover tools of enabled external MCP servers (Build tasks)."),
    ("mcp_call", "workspace", "Call an external MCP tool after an approval naming its exact arguments."),
    (
        "mcp_resources",
        "workspace",
        "List resources, templates and prompts of enabled external MCP servers (Build tasks).",
    ),
    ("mcp_read_resource", "workspace", "Read an external MCP resource after an approval naming its exact URI."),
    ("mcp_get_prompt", "workspace", "Get an external MCP prompt after an approval naming its exact arguments."),
]


@pytest.mark.req("SRV-20")
@pytest.mark.anyio
async def test_the_shadow_tools_listing_names_every_tool_with_its_level_in_a_fixed_order(api: LocalEngine) -> None:
    listed = to_json(await api.tool_list(Empty(), Caller()))
    assert listed == listing() == [{"name": n, "level": lvl, "description": d} for n, lvl, d in _LISTED]


@pytest.mark.req("ENG-04")
@pytest.mark.parametrize(
    ("mode", "level", "last"),
    [
        ("build", "read_only", "search_files"),
        ("build", "workspace", "run_tests"),
        ("build", "elevated", "background_stop"),
        ("plan", "elevated", "search_files"),
        ("review", "workspace", "search_files"),
    ],
)
def test_a_task_gets_the_native_tools_of_its_mode_and_level_in_registry_order(mode: str, level: str, last: str) -> None:
    names = [n for n, _, _ in _LISTED if n not in COMPACT_MCP_TOOLS]
    assert native_tools_for(mode, level) == tuple(names[: names.index(last) + 1])


@pytest.mark.req("ENG-04", "CLI-07", "CW-06")
def test_function_schemas_carry_the_model_text_and_a_fresh_copy_of_the_arguments_schema() -> None:
    assert COMPACT_MCP_TOOLS == ("mcp_tools", "mcp_call", "mcp_resources", "mcp_read_resource", "mcp_get_prompt")
    assert [s.name for s in TOOL_SPECS] == [n for n, _, _ in _LISTED]
    read = function_schema(spec("read_file"))  # type: ignore[arg-type]
    assert read["function"]["description"] == "Read a text file of the project."
    assert read["function"]["parameters"]["additionalProperties"] is False
    read["function"]["parameters"]["properties"].clear()
    assert function_schema(spec("read_file"))["function"]["parameters"]["properties"]  # type: ignore[arg-type]
    call = function_schema(spec("mcp_call"))  # type: ignore[arg-type]
    assert call["function"]["parameters"]["required"] == ["server", "tool"]
    assert "additionalProperties" not in call["function"]["parameters"]
    assert spec("mcp__server__tool") is None
