"""Handlers: projects and their trust, the status overview, configured models (ENG-01, ENG-02, ENG-05, SRV-20)."""

from __future__ import annotations

from shadowcode.engine.api import (
    Caller,
    Empty,
    EngineApi,
    ModelAdd,
    ModelList,
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
    settings = state.settings()
    return Status(
        profile=state.profile.name,
        profile_root=str(state.profile.root),
        engine_mode=state.mode,
        project=project_info(state.project(caller)),
        models_configured=len(settings.models),
        default_model=settings.default_model,
    )


@handles(EngineApi.model_list)
async def model_list(state: EngineState, request: Empty, caller: Caller) -> ModelList:
    settings = state.settings()
    return ModelList(list(settings.models), settings.default_model)


@handles(EngineApi.model_add)
async def model_add(state: EngineState, request: ModelAdd, caller: Caller) -> ModelList:
    settings = state.profile.save_model(request.model, make_default=request.make_default)
    return ModelList(list(settings.models), settings.default_model)
