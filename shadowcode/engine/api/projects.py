"""The engine API: projects and their trust, the status overview.

Covers ENG-01, ENG-02, SRV-20.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.projects` and handled in process in :mod:`shadowcode.engine.verbs.projects`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.enums import EngineMode, PermissionLevel

__all__ = ["ProjectInfo", "ProjectRef", "ProjectTrust", "Status"]


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
