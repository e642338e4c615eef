"""``shadowcode trust``, ``untrust`` and ``status`` (ENG-01, ENG-02)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shadowcode.cli.context import emit, globals_of, with_engine
from shadowcode.enums import PermissionLevel

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the project verbs to the root app."""
    app.command("trust")(trust)
    app.command("untrust")(untrust)
    app.command("status")(status)


def _level(level: str) -> PermissionLevel:
    from shadowcode.errors import UsageError

    try:
        return PermissionLevel(level)
    except ValueError:
        raise UsageError(f"--level must be read_only, workspace or elevated, not {level!r}") from None


def trust(
    ctx: typer.Context,
    directory: Annotated[
        Path | None, typer.Argument(help="Project to trust (default: --workspace or the cwd).")
    ] = None,
    level: Annotated[
        str, typer.Option("--level", help="Permission level: read_only, workspace or elevated.")
    ] = "workspace",
) -> None:
    """Trust a project at a permission level (ENG-02)."""
    from shadowcode.engine.api import ProjectTrust
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    request = ProjectTrust(str(directory or g.workspace_path()), _level(level))
    project = with_engine(g, lambda api: api.project_trust(request, g.caller(project=False)))
    emit(g, to_json(project), f"trusted {project.path} at level {project.level}")


def untrust(
    ctx: typer.Context,
    directory: Annotated[
        Path | None, typer.Argument(help="Project to untrust (default: --workspace or the cwd).")
    ] = None,
) -> None:
    """Remove trust from a project; its records stay (ENG-02)."""
    from shadowcode.engine.api import ProjectRef
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    request = ProjectRef(str(directory or g.workspace_path()))
    project = with_engine(g, lambda api: api.project_untrust(request, g.caller(project=False)))
    emit(g, to_json(project), f"untrusted {project.path}")


def status(ctx: typer.Context) -> None:
    """Show the profile, the workspace's trust, and the engine (ENG-01, ENG-02, ENG-03)."""
    from shadowcode import __version__
    from shadowcode.engine.api import Empty, EngineApi, ProjectInfo, Status
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)

    async def ask(api: EngineApi) -> tuple[Status, list[ProjectInfo], str]:
        return await api.status(Empty(), g.caller()), await api.project_list(Empty(), g.caller()), str(api.mode)

    found, trusted, mode = with_engine(g, ask)
    project = found.project
    doc = {
        "version": __version__,
        "profile": {"name": found.profile, "root": found.profile_root},
        "engine": {"mode": mode},
        "project": to_json(project),
        "trusted_projects": to_json(trusted),
    }
    lines = [
        f"shadowcode {__version__}",
        f"profile  {found.profile} ({found.profile_root})",
        f"engine   {mode}",
        f"project  {project.path} ({'trusted, ' + str(project.level) if project.trusted else 'untrusted'})",
    ]
    emit(g, doc, "\n".join(lines))
