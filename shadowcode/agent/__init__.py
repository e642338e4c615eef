"""Agent tasks: the turn loop, the model providers and the native tools (ENG-04, ENG-05, CLI-07).

- :mod:`~shadowcode.agent.loop`: the turn loop; :mod:`~shadowcode.agent.toolbox`: the task's
  environment and the dispatch of tool calls; :mod:`~shadowcode.agent.files`: the file tools.
- :mod:`~shadowcode.agent.tool_specs`: the one registry of the tools a model can be given.
- :mod:`~shadowcode.agent.ports`: the protocols of what the engine hands a task (event log,
  approvals, write log, processes, MCP catalog cache); the agent never imports the engine.
- A Build task's external MCP tools reach the loop as :class:`~shadowcode.agent.toolbox.McpTools`
  (their schemas are in the registry); the engine implements them
  (:mod:`shadowcode.engine.mcp.task_servers`), with the grants, approvals and catalog they need.

Submodules are imported where they are needed; importing this package loads nothing else,
so the command-line entry point stays cheap.
"""

from __future__ import annotations

__all__: list[str] = []
