"""The engine API: external MCP server definitions and their grants.

Covers CLI-01, CLI-02, CLI-05.

The request and result types of this part, and its verbs as :class:`ServerVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.servers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired

from typing_extensions import TypedDict

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

__all__ = [
    "McpAdd",
    "McpCatalog",
    "McpEnable",
    "McpGrantChange",
    "McpGrantState",
    "McpRef",
    "McpRemoval",
    "McpRemove",
    "McpServerInfo",
    "ServerVerbs",
]


class McpGrantState(TypedDict):
    """A definition's grant in the caller's project."""

    state: str
    hash: str | None


class McpServerInfo(TypedDict):
    """A definition as the catalog shows it: everything but environment values (CLI-01, CLI-04).

    Transport-specific keys appear where they apply; ``grant`` only in a catalog; ``error``
    for a project file that is not a usable definition.
    """

    id: str
    name: NotRequired[str]
    scope: NotRequired[str]
    path: NotRequired[str | None]
    hash: str | None
    transport: NotRequired[str]
    description: NotRequired[str | None]
    timeout_sec: NotRequired[float | None]
    command: NotRequired[list[str]]
    env_names: NotRequired[list[str]]
    env_refs: NotRequired[dict[str, str]]
    url: NotRequired[str]
    api_key_env: NotRequired[str | None]
    error: NotRequired[str]
    grant: NotRequired[McpGrantState]


class McpCatalog(TypedDict):
    """The ``--json mcp`` document: definitions with hashes and grant states; nothing is started (CLI-01)."""

    project: str
    trusted: bool
    enabled_max: int
    servers: list[McpServerInfo]


@dataclass(frozen=True, slots=True)
class McpAdd:
    """Register the definition file at ``path`` globally; replacing one needs its current hash (CLI-05)."""

    path: str
    replace_hash: str | None = None


@dataclass(frozen=True, slots=True)
class McpRef:
    """One definition by id: ``config:NAME`` or ``project:PATH`` (CLI-05)."""

    server_id: str


@dataclass(frozen=True, slots=True)
class McpEnable:
    """Enable a definition for the caller's project at its reviewed hash (CLI-02)."""

    server_id: str
    hash: str


@dataclass(frozen=True, slots=True)
class McpRemove:
    """Remove a global definition at its current hash, revoking its grants (CLI-05)."""

    server_id: str
    hash: str


class McpGrantChange(TypedDict):
    """An enable or disable: the definition, the project, the new state, and the granted hash when enabled."""

    id: str
    project: str
    state: Literal["enabled", "disabled"]
    hash: NotRequired[str]


@dataclass(frozen=True, slots=True)
class McpRemoval:
    """A removed global definition and how many project grants its removal revoked (CLI-05)."""

    id: str
    removed: bool
    grants_revoked: int


class ServerVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("mcp/catalog")
    async def mcp_catalog(self, request: Empty, caller: Caller = NOBODY) -> McpCatalog:
        """Definitions with hashes and grant states for the caller's project; starts nothing (CLI-01)."""
        ...

    @verb("mcp/add")
    async def mcp_add(self, request: McpAdd, caller: Caller = NOBODY) -> McpServerInfo:
        """Register a definition file globally as ``config:NAME``; starts nothing (CLI-01, CLI-05).

        Raises:
            ConfigError: an unreadable or invalid file. ConflictError: replacing without the current hash.
        """
        ...

    @verb("mcp/enable")
    async def mcp_enable(self, request: McpEnable, caller: Caller = NOBODY) -> McpGrantChange:
        """Enable a definition for the caller's trusted project at its reviewed hash (CLI-02, CLI-05)."""
        ...

    @verb("mcp/disable")
    async def mcp_disable(self, request: McpRef, caller: Caller = NOBODY) -> McpGrantChange:
        """Revoke the caller's project's grant; running tasks keep theirs (CLI-05, CLI-06)."""
        ...

    @verb("mcp/remove")
    async def mcp_remove(self, request: McpRemove, caller: Caller = NOBODY) -> McpRemoval:
        """Remove a global definition at its current hash and revoke its grants (CLI-05)."""
        ...
