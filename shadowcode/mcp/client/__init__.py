"""ShadowCode as a client of external MCP servers: protocol and transports only.

Implements parts of CLI-01, CLI-03, CLI-04, CLI-08, CLI-11, CLI-12, CLI-13, CLI-14, CLI-15, CLI-16,
CLI-17, CLI-18, CLI-19, CW-05, CW-06.
The protocol modules import nothing of the agent, the engine, the store, secrets or the
profile: approvals, grants checks, secret resolution and the choice of values to redact live
above, in :mod:`shadowcode.engine.mcp.task_servers`, and reach a connection as plain values; the
grants registry is :mod:`shadowcode.engine.mcp.registry`, its rows :mod:`shadowcode.store.mcp_servers`.

- :mod:`~shadowcode.mcp.client.definitions`: the definition model (ids, content hashes) and
  the parser of a definition's bytes (files are read by :mod:`shadowcode.engine.mcp.definition_files`).
- :mod:`~shadowcode.mcp.client.stdio`: the bounded stdio transport and the server's process group.
- :mod:`~shadowcode.mcp.client.endpoint`: the URL rules, loopback and the network permission of HTTP servers.
- :mod:`~shadowcode.mcp.client.streamable_http`: the bounded Streamable HTTP transport.
- :mod:`~shadowcode.mcp.client.sse`: the bounded, incremental event-stream parser it uses.
- :mod:`~shadowcode.mcp.client.negotiation`: the revision choice (``server/discover`` first, bounded on stdio).
- :mod:`~shadowcode.mcp.client.connection`: one connection (negotiation, bounded discovery, calls).
- :mod:`~shadowcode.mcp.client.catalog`: bounded, paginated reading of a server's lists and the
  ``ttlMs`` clamp (CW-05).
- :mod:`~shadowcode.mcp.client.freshness`: in-place revalidation of a connection's lists on
  ``list_changed`` notices and ``ttlMs`` expiry (CW-05).
- :mod:`~shadowcode.mcp.client.reads`: bounded, redacted ``resources/read`` and ``prompts/get``,
  and the check of prompt arguments against their declaration (CW-06).
- :mod:`~shadowcode.mcp.client.redaction`: removal of configured values from what servers return.
"""

from __future__ import annotations

__all__: list[str] = []
