"""The verbs of the engine API's servers part, as :class:`ServerVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.servers`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.servers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, PROBE_DEADLINE_SECONDS, ApiBase, Caller, Empty, verb
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, MCP_OAUTH_LOGIN_SECONDS

if TYPE_CHECKING:
    from shadowcode.engine.api.servers import (
        McpAdd,
        McpCatalog,
        McpDoctorReport,
        McpEnable,
        McpGrantChange,
        McpImport,
        McpImportReport,
        McpRef,
        McpRemoval,
        McpRemove,
        McpServerInfo,
        McpServerQuery,
        McpServerTools,
        McpSignedIn,
        McpSignedOut,
        McpSignIn,
        McpSignInRef,
        McpSignInStarted,
        McpValidate,
        McpValidation,
    )

__all__ = ["ServerVerbs"]


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

    @verb("mcp/import")
    async def mcp_import(self, request: McpImport, caller: Caller = NOBODY) -> McpImportReport:
        """Import other hosts' MCP configs as global definitions that still need review (CW-01).

        Enables nothing, starts nothing, contacts nothing; importing the same file twice changes nothing.

        Raises:
            ConfigError: a file that cannot be read or parsed (nothing is imported), or more
                than MCP_IMPORT_SERVERS_MAX entries. PolicyError: the caller may not write.
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

    @verb("mcp/tools", deadline_seconds=PROBE_DEADLINE_SECONDS)
    async def mcp_server_tools(self, request: McpServerQuery, caller: Caller = NOBODY) -> McpServerTools:
        """Connect one enabled server once, as a Build task would, and list its tools (CW-04).

        A server that is not enabled at its current hash, or a project that is not trusted, is
        reported with ``connected`` False and nothing is started.

        Raises:
            NotFound: no definition of the caller's project has that id or name, or the name is ambiguous.
            PolicyError: the caller may not write (starting a server is an external action).
        """
        ...

    @verb("mcp/validate", deadline_seconds=PROBE_DEADLINE_SECONDS)
    async def mcp_validate(self, request: McpValidate, caller: Caller = NOBODY) -> McpValidation:
        """Connect the enabled servers (or the one named) concurrently and report each (CW-03).

        Raises:
            NotFound: ``server`` names no definition of the caller's project, or is ambiguous.
            PolicyError: the caller may not write (starting a server is an external action).
        """
        ...

    @verb("mcp/doctor")
    async def mcp_doctor(self, request: Empty, caller: Caller = NOBODY) -> McpDoctorReport:
        """Static checks of the caller's project's definitions and grants; starts and contacts nothing (CW-03)."""
        ...

    @verb("signin/start", deadline_seconds=MCP_OAUTH_LOGIN_SECONDS)
    async def mcp_sign_in(self, request: McpSignIn, caller: Caller = NOBODY) -> McpSignInStarted:
        """Start an OAuth sign-in to an HTTP server; returns once its authorization URL is known (CW-08).

        The engine listens on the loopback callback for at most MCP_OAUTH_LOGIN_SECONDS and opens
        a browser only when ``browser`` is set and one is available.

        Raises:
            UsageError: no such server, an ambiguous name, not a usable HTTP definition, an
                unset client secret reference, or a sign-in of it already in progress.
            PolicyError: the caller is not the person's own command line (write access, unconfined).
            SignInError: the sign-in failed before the URL was known (nothing stored).
        """
        ...

    @verb("signin/wait", deadline_seconds=MCP_OAUTH_LOGIN_SECONDS + CLEANUP_DEADLINE_SECONDS)
    async def mcp_sign_in_wait(self, request: McpSignInRef, caller: Caller = NOBODY) -> McpSignedIn:
        """Wait for a started sign-in to finish and be stored in the profile's secret store (CW-08).

        Raises:
            NotFound: no sign-in of that name is waiting in this engine.
            SignInError: the sign-in failed (nothing stored). NotAvailable: the engine stopped first.
        """
        ...

    @verb("signin/remove")
    async def mcp_sign_out(self, request: McpServerQuery, caller: Caller = NOBODY) -> McpSignedOut:
        """Forget the stored sign-in of an HTTP server (an id or a unique name); the provider may keep its grant.

        Implements CW-08.

        Raises:
            UsageError: no such server, an ambiguous name, or not a usable HTTP definition.
            PolicyError: the caller is not the person's own command line.
        """
        ...
