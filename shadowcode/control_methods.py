"""Wire names of the control socket's connection methods, for every client of the socket (ENG-03).

The typed entries (request and result types, reply deadlines) are the doors of
:mod:`shadowcode.engine.api.doors`, which take their names from here; the relay of ``mcp serve``
(:mod:`shadowcode.mcp.server.relay`), which imports only the standard library and the bottom
modules on its start-up path, takes the two it sends from here too, so no side spells a method.

This module imports nothing.
"""

__all__ = ["MCP_ATTACH", "MCP_NOTICES", "OWNER_CLOSE", "OWNER_OPEN"]

OWNER_OPEN = "owner/open"
"""The connection becomes an owner's socket (SRV-22)."""
OWNER_CLOSE = "owner/close"
"""The owner closes normally: its jobs are cancelled and cleaned up first (SRV-21)."""
MCP_ATTACH = "mcp/attach"
"""The connection becomes a relayed MCP session served by the engine (SRV-03)."""
MCP_NOTICES = "mcp/notices"
"""A relayed session's closing lines, fetched after it ended (SRV-25)."""
