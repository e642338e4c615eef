"""Errors of the MCP client (CLI-13, CLI-14, CLI-15).

``UpstreamServerError`` is the base for anything an external server did wrong or could not
do; OS and SDK errors are translated into it at this package's edge.
"""

from __future__ import annotations

from shadowcode.errors import ProtocolError

__all__ = ["LimitExceeded", "UpstreamServerError"]


class UpstreamServerError(ProtocolError):
    """An external MCP server failed: it could not start, broke the protocol, timed out or closed.

    ``fields`` carries ``server`` (the definition id) where known.
    """


class LimitExceeded(UpstreamServerError):
    """An external server crossed a CLI-13 limit (frame, lifetime, rate, catalog); the connection fails."""
