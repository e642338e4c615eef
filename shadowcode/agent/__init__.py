"""Agent tasks: the turn loop, the model providers, the native tools and the task's MCP tools (ENG-04, ENG-05, CLI-07).

- :mod:`~shadowcode.agent.loop`: the turn loop; :mod:`~shadowcode.agent.toolbox`: the task's
  environment and the dispatch of tool calls; :mod:`~shadowcode.agent.files`: the file tools.
- :mod:`~shadowcode.agent.tool_specs`: the one registry of the tools a model can be given.
- :mod:`~shadowcode.agent.ports`: the protocols of what the engine hands a task (event log,
  approvals, write log, processes, MCP catalog cache); the agent never imports the engine.
- :mod:`~shadowcode.agent.mcp_tools` and :mod:`~shadowcode.agent.mcp_catalog`: a Build task's
  external MCP servers; :mod:`~shadowcode.agent.mcp_definitions`: reading definition files.

Submodules are imported where they are needed; importing this package loads nothing else,
so the command-line entry point stays cheap.
"""

from __future__ import annotations

__all__: list[str] = []
