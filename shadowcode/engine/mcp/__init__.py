"""Outbound MCP policy: the engine's rules over the external MCP servers a Build task uses.

Covers CLI-01, CLI-02, CLI-03, CLI-04, CLI-05, CLI-06, CLI-07, CLI-08, CLI-09, CLI-10, CW-01, CW-02,
CW-03, CW-04, CW-05, CW-06, CW-07, CW-08, CW-12.

Transports and protocol live below, in :mod:`shadowcode.mcp.client`; the turn loop sees a
task's servers only through :class:`~shadowcode.agent.toolbox.McpTools` and the tool schemas of
:mod:`shadowcode.agent.tool_specs`. This package decides who may use what:

- Definitions and grants: :mod:`~shadowcode.engine.mcp.definition_files` (reading definition
  files), :mod:`~shadowcode.engine.mcp.registry` (global registrations, per-project grants,
  cached catalogs), :mod:`~shadowcode.engine.mcp.bundles` (plugin bundles and their digests),
  :mod:`~shadowcode.engine.mcp.config_import` (other hosts' configs).
- A Build task's servers: :mod:`~shadowcode.engine.mcp.task_servers` (tools, approvals, lazy
  connections), :mod:`~shadowcode.engine.mcp.task_catalog` (what the task knows of each server,
  argument checks), :mod:`~shadowcode.engine.mcp.resource_tools` (resources, prompts, skills).
- Credentials: :mod:`~shadowcode.engine.mcp.credentials` (an HTTP connection's resolved
  headers), :mod:`~shadowcode.engine.mcp.sign_ins` (stored OAuth sign-ins),
  :mod:`~shadowcode.engine.mcp.login` (``mcp login`` / ``mcp logout``).
- Reports: :mod:`~shadowcode.engine.mcp.probe` (one live connection per server, as a task makes
  it), :mod:`~shadowcode.engine.mcp.live_reports` (``mcp validate``, ``mcp tools``),
  :mod:`~shadowcode.engine.mcp.doctor` (static checks).

Submodules are imported where they are needed: the MCP client stack is costly to import.
"""

from __future__ import annotations

__all__: list[str] = []
