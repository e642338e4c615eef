"""The engine API: projects and their trust, the status overview, configured models.

Covers ENG-01, ENG-02, ENG-05, SRV-20.

The request and result types of this part, and its verbs as :class:`ProjectVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.projects`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.enums import EngineMode, PermissionLevel
from shadowcode.profile import ModelSettings

__all__ = ["ModelAdd", "ModelList", "ProjectInfo", "ProjectRef", "ProjectTrust", "ProjectVerbs", "Status"]


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    """A canonical project and its trust; ``level`` is None while the project is untrusted (ENG-02)."""

    path: str
    trusted: bool
    level: PermissionLevel | None


@dataclass(frozen=True, slots=True)
class ProjectRef:
    """A project folder as given; the engine canonicalizes it (ENG-02)."""

    path: str


@dataclass(frozen=True, slots=True)
class ProjectTrust:
    """Trust a project folder at a permission level (ENG-02)."""

    path: str
    level: PermissionLevel


@dataclass(frozen=True, slots=True)
class Status:
    """The caller's project, the profile, the engine and its models in one answer (SRV-20).

    Attributes:
        profile: the profile's name.
        profile_root: the profile's folder.
        engine_mode: the engine's own mode, ``temporary`` or ``headless`` (a frontend attached to a
            headless engine says ``attached``: :attr:`EngineApi.mode`).
        project: the caller's project.
        models_configured: configured models.
        default_model: the default model's name, or None.
    """

    profile: str
    profile_root: str
    engine_mode: EngineMode
    project: ProjectInfo
    models_configured: int
    default_model: str | None


@dataclass(frozen=True, slots=True)
class ModelList:
    """The profile's configured models and its default (ENG-05)."""

    models: list[ModelSettings]
    default: str | None


@dataclass(frozen=True, slots=True)
class ModelAdd:
    """Add or replace a model in the profile's settings; ``make_default`` also makes it the default (ENG-05)."""

    model: ModelSettings
    make_default: bool = False


class ProjectVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("project/get")
    async def project_get(self, request: Empty, caller: Caller = NOBODY) -> ProjectInfo:
        """The caller's project, canonicalized and recorded (untrusted if new) (ENG-02).

        Raises:
            ConfigError: the folder does not exist or is not a folder.
        """
        ...

    @verb("project/trust")
    async def project_trust(self, request: ProjectTrust, caller: Caller = NOBODY) -> ProjectInfo:
        """Trust a project folder at a permission level (ENG-02).

        Raises:
            ConfigError: the folder is not usable.
        """
        ...

    @verb("project/untrust")
    async def project_untrust(self, request: ProjectRef, caller: Caller = NOBODY) -> ProjectInfo:
        """Remove a project's trust; its records stay (ENG-02)."""
        ...

    @verb("project/list")
    async def project_list(self, request: Empty, caller: Caller = NOBODY) -> list[ProjectInfo]:
        """Every trusted project, by path (ENG-02)."""
        ...

    @verb("status/get")
    async def status(self, request: Empty, caller: Caller = NOBODY) -> Status:
        """The caller's project, the profile, the engine and its models (SRV-20)."""
        ...

    @verb("model/list")
    async def model_list(self, request: Empty, caller: Caller = NOBODY) -> ModelList:
        """The configured models and the default one (ENG-05)."""
        ...

    @verb("model/add")
    async def model_add(self, request: ModelAdd, caller: Caller = NOBODY) -> ModelList:
        """Add or replace a model in the profile's settings (ENG-05).

        Raises:
            ConfigError: the model's settings are incomplete for its provider.
        """
        ...
