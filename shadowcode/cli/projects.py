"""``shadowcode trust``, ``untrust`` and ``status`` (ENG-01, ENG-02)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shadowcode.cli.context import emit, globals_of

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the project verbs to the root app."""
    app.command("trust")(trust)
    app.command("untrust")(untrust)
    app.command("status")(status)


def _engine(ctx: typer.Context):  # noqa: ANN202 - returns Engine, imported lazily
    from shadowcode.engine import Engine
    from shadowcode.profile import Profile

    return Engine.open(Profile.select(globals_of(ctx).profile))


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
    from shadowcode.engine import canonical_project
    from shadowcode.enums import PermissionLevel
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    if level not in tuple(PermissionLevel):
        raise UsageError(f"--level must be read_only, workspace or elevated, not {level!r}")
    path = canonical_project(directory or g.workspace_path())
    with _engine(ctx) as engine:
        project = engine.projects.trust(path, level)
    emit(g, project.as_dict(), f"trusted {project.path} at level {project.level}")


def untrust(
    ctx: typer.Context,
    directory: Annotated[
        Path | None, typer.Argument(help="Project to untrust (default: --workspace or the cwd).")
    ] = None,
) -> None:
    """Remove trust from a project; its records stay (ENG-02)."""
    from shadowcode.engine import canonical_project

    g = globals_of(ctx)
    path = canonical_project(directory or g.workspace_path())
    with _engine(ctx) as engine:
        project = engine.projects.untrust(path)
    emit(g, project.as_dict(), f"untrusted {project.path}")


def status(ctx: typer.Context) -> None:
    """Show the profile, the workspace's trust, and the engine (ENG-01..03)."""
    from shadowcode import __version__

    g = globals_of(ctx)
    with _engine(ctx) as engine:
        project = engine.project(g.workspace_path())
        doc = {
            "version": __version__,
            "profile": {"name": engine.profile.name, "root": str(engine.profile.root)},
            "engine": {"mode": engine.mode},
            "project": project.as_dict(),
            "trusted_projects": [p.as_dict() for p in engine.projects.trusted()],
        }
    lines = [
        f"shadowcode {__version__}",
        f"profile  {engine.profile.name} ({engine.profile.root})",
        f"engine   {engine.mode}",
        f"project  {project.path} ({'trusted, ' + project.level if project.trusted else 'untrusted'})",
    ]
    emit(g, doc, "\n".join(lines))
