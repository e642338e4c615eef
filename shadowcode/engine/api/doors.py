"""The control socket's connection methods, typed like the verbs: the doors beside the verb table (ENG-03).

Four methods manage a connection rather than ask the engine a question, so they are not verbs
of :class:`~shadowcode.engine.api.EngineApi`: ``owner/open`` makes the connection an owner's
socket and ``owner/close`` closes it normally (SRV-21, SRV-22); ``mcp/attach`` makes it a
relayed MCP session and ``mcp/notices`` fetches a finished session's closing lines (SRV-03,
SRV-25). Each is one :class:`Door`: its wire name (from :mod:`shadowcode.control_methods`),
its request and result types and its reply deadline. The daemon validates a request as the
door's request type and the remote client validates a reply as its result type, both with
:mod:`shadowcode.engine.wire`, so a malformed message is a ProtocolError at either end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from shadowcode import control_methods
from shadowcode.engine.api._base import OwnerClosed
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, OWNER_REPLY_DEADLINE_SECONDS, RELAY_ATTACH_DEADLINE_SECONDS

__all__ = [
    "DOORS",
    "MCP_ATTACH",
    "MCP_NOTICES",
    "OWNER_CLOSE",
    "OWNER_OPEN",
    "Door",
    "McpAttach",
    "McpAttached",
    "Notices",
    "NoticesQuery",
    "OwnerClose",
    "OwnerOpen",
    "OwnerOpened",
    "WireCaller",
]

Req = TypeVar("Req")
Res = TypeVar("Res")


@dataclass(frozen=True, slots=True)
class Door(Generic[Req, Res]):
    """One connection method of the control socket.

    Attributes:
        wire: the method name on the socket.
        request: the type its params validate as.
        result: the type its reply's result validates as.
        deadline_seconds: how long a client waits for the reply.
    """

    wire: str
    request: type[Req]
    result: type[Res]
    deadline_seconds: float = OWNER_REPLY_DEADLINE_SECONDS


@dataclass(frozen=True, slots=True)
class WireCaller:
    """A :class:`~shadowcode.engine.api.Caller` as it travels: ``owned`` stands for the connection's owner.

    The owner itself never travels: ``owned`` tells the engine to use the connection's owner.
    """

    project: str | None = None
    allow_write: bool = False
    allow_approvals: bool = False
    approve_in_host: bool = False
    owned: bool = False
    confined: bool = False


@dataclass(frozen=True, slots=True)
class OwnerOpen:
    """Make this connection the socket of a new owner for ``caller``'s project (SRV-22).

    ``kind`` names the frontend (``stdio``, ``gateway`` or ``relay``), for the owner's record.
    """

    kind: str = "relay"
    caller: WireCaller = field(default_factory=WireCaller)


@dataclass(frozen=True, slots=True)
class OwnerOpened:
    """The new owner's id."""

    owner: str


@dataclass(frozen=True, slots=True)
class OwnerClose:
    """Close this connection's owner; an empty reason records the default one (SRV-21)."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class McpAttach:
    """Serve a relayed MCP session for ``project`` with the relay's flags (SRV-03, SRV-09, SRV-29)."""

    project: str
    allow_write: bool = False
    allow_approvals: bool = False
    approve_in_host: bool = False
    approval_page: bool = False


@dataclass(frozen=True, slots=True)
class McpAttached:
    """The attach reply: the session's id (for ``mcp/notices``), and whether the engine takes a handover."""

    attached: bool
    session: str
    handover: bool


@dataclass(frozen=True, slots=True)
class NoticesQuery:
    """A relayed session's closing lines, by its id from :class:`McpAttached` (SRV-25)."""

    session: str = ""


@dataclass(frozen=True, slots=True)
class Notices:
    """The session's closing lines, oldest first; none when it ended normally or was forgotten."""

    notices: list[str]


OWNER_OPEN: Door[OwnerOpen, OwnerOpened] = Door(control_methods.OWNER_OPEN, OwnerOpen, OwnerOpened)
OWNER_CLOSE: Door[OwnerClose, OwnerClosed] = Door(
    control_methods.OWNER_CLOSE, OwnerClose, OwnerClosed, CLEANUP_DEADLINE_SECONDS
)
MCP_ATTACH: Door[McpAttach, McpAttached] = Door(
    control_methods.MCP_ATTACH, McpAttach, McpAttached, RELAY_ATTACH_DEADLINE_SECONDS
)
MCP_NOTICES: Door[NoticesQuery, Notices] = Door(
    control_methods.MCP_NOTICES, NoticesQuery, Notices, RELAY_ATTACH_DEADLINE_SECONDS
)

DOORS: dict[str, Door[Any, Any]] = {door.wire: door for door in (OWNER_OPEN, OWNER_CLOSE, MCP_ATTACH, MCP_NOTICES)}
"""The doors by wire name."""
