"""The engine API: plugin bundles that contribute MCP servers (CW-12).

The request and result types of this part, and its verbs as :class:`PluginVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.plugins`, the policy in
:mod:`shadowcode.engine.plugins`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from typing_extensions import TypedDict

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

__all__ = [
    "PluginChange",
    "PluginInfo",
    "PluginList",
    "PluginName",
    "PluginPath",
    "PluginReview",
    "PluginTrust",
    "PluginVerbs",
]


@dataclass(frozen=True, slots=True)
class PluginPath:
    """A plugin bundle's folder (absolute) to review (CW-12)."""

    path: str


@dataclass(frozen=True, slots=True)
class PluginTrust:
    """Trust the bundle at ``path`` at the content digest its review showed (CW-12)."""

    path: str
    digest: str


@dataclass(frozen=True, slots=True)
class PluginName:
    """One trusted plugin by name (CW-12)."""

    name: str


class PluginReview(TypedDict):
    """What trusting a bundle would allow: digest, authority, and each server's argv or endpoint,
    environment provenance, credential source names and tool filters; never a secret (CW-12)."""

    name: str
    version: str | None
    description: str | None
    root: str
    digest: str
    files: int
    authority: str
    trusted_digest: str | None
    servers: list[dict[str, Any]]


class PluginChange(TypedDict):
    """A trust, enable, disable or revoke: the plugin, its new state, its digest and server ids (CW-12)."""

    name: str
    state: str
    digest: str
    servers: list[str]
    project: NotRequired[str]
    grants_revoked: NotRequired[int]
    shadowed: NotRequired[dict[str, str]]


class PluginInfo(TypedDict):
    """A trusted plugin: folder, digest, state for the caller's project, server ids, when trusted (epoch seconds)."""

    name: str
    root: str
    digest: str
    state: str
    servers: list[str]
    trusted_at: int


class PluginList(TypedDict):
    """Every trusted plugin, with states for ``project`` (None: no project) (CW-12)."""

    project: str | None
    plugins: list[PluginInfo]


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
