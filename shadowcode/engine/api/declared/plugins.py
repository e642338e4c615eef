"""The verbs of the engine API's plugins part, as :class:`PluginVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.plugins`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.plugins`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

if TYPE_CHECKING:
    from shadowcode.engine.api.plugins import (
        PluginChange,
        PluginList,
        PluginName,
        PluginPath,
        PluginReview,
        PluginTrust,
    )

__all__ = ["PluginVerbs"]


class PluginVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("plugin/review")
    async def plugin_review(self, request: PluginPath, caller: Caller = NOBODY) -> PluginReview:
        """Read a bundle and show what trusting it would allow; changes and starts nothing (CW-12).

        Raises:
            ConfigError: the bundle is unreadable or breaks a manifest rule (named).
        """
        ...

    @verb("plugin/trust")
    async def plugin_trust(self, request: PluginTrust, caller: Caller = NOBODY) -> PluginChange:
        """Stage a reviewed bundle snapshot at its digest; enables nothing (CW-12).

        Raises:
            ConfigError: invalid bundle. ConflictError: the digest is not its content now.
            PolicyError: the caller may not write.
        """
        ...

    @verb("plugin/enable")
    async def plugin_enable(self, request: PluginName, caller: Caller = NOBODY) -> PluginChange:
        """Attach a trusted plugin's snapshot to the caller's trusted project (CW-12).

        Raises:
            PolicyError: untrusted project. NotFound: not trusted. ConflictError: drift or the grant limit.
        """
        ...

    @verb("plugin/disable")
    async def plugin_disable(self, request: PluginName, caller: Caller = NOBODY) -> PluginChange:
        """Detach a plugin from the caller's project; a running task's use of it stops (CW-12).

        Raises:
            NotFound: not trusted, or not enabled for the project.
        """
        ...

    @verb("plugin/revoke")
    async def plugin_revoke(self, request: PluginName, caller: Caller = NOBODY) -> PluginChange:
        """Forget a plugin's snapshot and revoke its grants in every project (CW-12).

        Raises:
            NotFound: not trusted. PolicyError: the caller may not write.
        """
        ...

    @verb("plugin/list")
    async def plugin_list(self, request: Empty, caller: Caller = NOBODY) -> PluginList:
        """Every trusted plugin with its state for the caller's project (CW-12)."""
        ...
