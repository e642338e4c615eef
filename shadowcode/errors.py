"""The ShadowCode error tree.

Every error the product raises on purpose derives from one base::

    ShadowcodeError                 exit 1
    ├── UsageError                  exit 2   bad flags or arguments (CLI)
    ├── ConfigError                 exit 2   profile, settings, workspace
    ├── StoreError                  exit 1   the SQLite store
    │   ├── MigrationError
    │   └── NotFound                exit 1   an id that does not exist (here)
    ├── PolicyError                 exit 3   trust, permission level, read-only server
    ├── ConflictError               exit 1   stale hash, changed file
    ├── ToolError                   exit 1   a tool refused its input
    ├── NotAvailable                exit 1   built later; says so honestly
    └── ProtocolError               exit 1   a peer broke the wire protocol
        └── UpstreamServerError              an external MCP server failed (CLI-13, CLI-14, CLI-15)
            └── LimitExceeded                it crossed a CLI-13 limit

A CLI maps ``exit_code`` straight to the process status; the MCP server turns a
``ShadowcodeError`` raised by a tool into a result with ``isError: true`` and the
message as text (STYLE: two error planes). ``code`` is the JSON-RPC code where one
applies.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ConfigError",
    "ConflictError",
    "LimitExceeded",
    "MigrationError",
    "NotAvailable",
    "NotFound",
    "PolicyError",
    "ProtocolError",
    "ShadowcodeError",
    "StoreError",
    "ToolError",
    "UpstreamServerError",
    "UsageError",
]


class ShadowcodeError(Exception):
    """Base of every deliberate ShadowCode error.

    Args:
        message: one sentence for a person; never holds secret values.
        **fields: ids involved (``task_id``, ``path``, ``goal_id`` ...), kept in ``fields``.
    """

    exit_code: ClassVar[int] = 1
    code: ClassVar[int] = -32603
    wire_code: ClassVar[str] = "error"
    """Names the class on the engine's control socket, where an error travels as this code plus
    :attr:`fields` and comes back as the same class (ENG-03)."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.fields.items())
        return f"{type(self).__name__}({self.message!r}{extra})"


class UsageError(ShadowcodeError):
    """Wrong flags or arguments on the command line (exit 2)."""

    exit_code = 2
    code = -32602
    wire_code = "usage"


class ConfigError(ShadowcodeError):
    """A profile, settings file or workspace that cannot be used (exit 2)."""

    exit_code = 2
    code = -32602
    wire_code = "config"


class StoreError(ShadowcodeError):
    """The SQLite store failed; ``sqlite3.Error`` is translated into this inside ``store/``."""

    wire_code = "store"


class MigrationError(StoreError):
    """A schema migration could not be applied."""

    wire_code = "migration"


class NotFound(StoreError):
    """An id (task, goal, checkpoint, approval) that does not exist in this project."""

    code = -32602
    wire_code = "not_found"


class PolicyError(ShadowcodeError):
    """Refused by policy: untrusted project, read-only server, level above the ceiling."""

    exit_code = 3
    wire_code = "policy"


class ConflictError(ShadowcodeError):
    """A stale content hash or a file changed since it was observed."""

    wire_code = "conflict"


class ToolError(ShadowcodeError):
    """A tool refused its input (bad path, forbidden SQL, bad scope)."""

    code = -32602
    wire_code = "tool"


class NotAvailable(ShadowcodeError):
    """A listed capability that this build does not implement yet."""

    wire_code = "not_available"


class ProtocolError(ShadowcodeError):
    """A peer broke the wire protocol (bad frame, limit exceeded)."""

    code = -32600
    wire_code = "protocol"


class UpstreamServerError(ProtocolError):
    """An external MCP server failed: it could not start, broke the protocol, timed out or closed.

    OS and SDK errors are translated into it at the ``shadowcode.mcp.client`` edge; ``fields``
    carries ``server`` (the definition id) where known.
    """

    wire_code = "upstream"


class LimitExceeded(UpstreamServerError):
    """An external server crossed a CLI-13 limit (frame, lifetime, rate, catalog); the connection fails."""

    wire_code = "limit_exceeded"
