"""ShadowCode as a client of external MCP servers (CLI-01..CLI-10, CLI-12..CLI-15, CLI-19).

- :mod:`~shadowcode.mcp.client.definitions`: server definitions (global registrations and
  project files), their ids and content hashes.
- :mod:`~shadowcode.mcp.client.stdio`: the bounded stdio transport and the server's process group.
- :mod:`~shadowcode.mcp.client.connection`: one connection (negotiation, bounded discovery, calls).
- :mod:`~shadowcode.mcp.client.pool`: the servers of one Build task, their tools and approvals.
- :mod:`~shadowcode.mcp.client.redaction`: removal of configured values from what servers return.
"""

from __future__ import annotations

__all__: list[str] = []
