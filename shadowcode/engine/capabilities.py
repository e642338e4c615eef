"""The native tools a delegated task can be given, and the level each needs (ENG-04, SRV-20)."""

from __future__ import annotations

__all__ = ["NATIVE_TOOLS", "native_tools"]

NATIVE_TOOLS: tuple[tuple[str, str, str], ...] = (
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
)


def native_tools() -> list[dict[str, str]]:
    """``[{"name", "level", "description"}]`` in a fixed order."""
    return [{"name": n, "level": lvl, "description": d} for n, lvl, d in NATIVE_TOOLS]
