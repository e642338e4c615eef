"""ShadowCode's MCP server: stdio (behind the stdio front or the relay) and the HTTP gateway.

This package's own module is imported on every start of ``mcp serve``, relay included; keep
it to standard-library constants.
"""

READY_FD_ENV = "SHADOWCODE_FRONT_READY_FD"
"""Set for the full server the stdio front starts: the descriptor it writes ``ready`` to once it serves.

Its presence also tells ``shadowcode.__main__`` that the process is the front's child, which
serves in-process instead of starting another front or relay.
"""
