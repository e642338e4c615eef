"""The engine API: plugin bundles that contribute MCP servers (CW-12).

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.plugins` and handled in process in
:mod:`shadowcode.engine.verbs.plugins`, the policy in :mod:`shadowcode.engine.plugins`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from typing_extensions import TypedDict

__all__ = [
    "PluginChange",
    "PluginInfo",
    "PluginList",
    "PluginName",
    "PluginPath",
    "PluginReview",
    "PluginTrust",
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
