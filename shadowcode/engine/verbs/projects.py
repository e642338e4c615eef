"""Handlers: projects and their trust, the status overview (ENG-01, ENG-02, SRV-20)."""

from __future__ import annotations

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    ProjectInfo,
    ProjectRef,
    ProjectTrust,
    Status,
)
from shadowcode.engine.projects import Project
from shadowcode.engine.state import EngineState
from shadowcode.engine.verbs._registry import handles
from shadowcode.project.paths import canonical_project

__all__ = ["project_info"]


def project_info(project: Project) -> ProjectInfo:
    """A trust record as the API shows it: the level only while the project is trusted (ENG-02)."""
    return ProjectInfo(str(project.path), project.trusted, project.level if project.trusted else None)


@handles(EngineApi.project_get)
async def project_get(state: EngineState, request: Empty, caller: Caller) -> ProjectInfo:
    return project_info(state.project(caller))


@handles(EngineApi.project_trust)
async def project_trust(state: EngineState, request: ProjectTrust, caller: Caller) -> ProjectInfo:
    return project_info(state.projects.trust(canonical_project(request.path), request.level))


@handles(EngineApi.project_untrust)
async def project_untrust(state: EngineState, request: ProjectRef, caller: Caller) -> ProjectInfo:
    return project_info(state.projects.untrust(canonical_project(request.path)))


@handles(EngineApi.project_list)
async def project_list(state: EngineState, request: Empty, caller: Caller) -> list[ProjectInfo]:
    return [project_info(p) for p in state.projects.trusted()]


@handles(EngineApi.status)
async def status(state: EngineState, request: Empty, caller: Caller) -> Status:
    settings = state.profile.saved_settings()  # None without a file: no pydantic needed (issue 32)
    return Status(
        profile=state.profile.name,
        profile_root=str(state.profile.root),
        engine_mode=state.mode,
        project=project_info(state.project(caller)),
        models_configured=len(settings.models) if settings is not None else 0,
        default_model=settings.default_model if settings is not None else None,
    )
