"""The root typer app: global options and the verb groups.

Verb groups live in sibling modules and are registered here; each command reads the
resolved global options from :func:`shadowcode.cli.context.globals_of`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shadowcode.cli import engine as engine_cli
from shadowcode.cli import history as history_cli
from shadowcode.cli import inspection as inspection_cli
from shadowcode.cli import mcp as mcp_cli
from shadowcode.cli import notes as notes_cli
from shadowcode.cli import plugins as plugins_cli
from shadowcode.cli import projects as projects_cli
from shadowcode.cli import secrets as secrets_cli
from shadowcode.cli import tasks as tasks_cli
from shadowcode.cli import testjob as testjob_cli
from shadowcode.cli.context import Globals

__all__ = ["app"]

app = typer.Typer(
    name="shadowcode",
    help="ShadowCode: a coding-agent engine with native MCP surfaces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _globals(
    ctx: typer.Context,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="Project directory (default: the current directory).")
    ] = None,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Profile name (default: 'default'); see SHADOWCODE_HOME.")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")] = False,
) -> None:
    """ShadowCode: inspect a project and delegate approved work over MCP."""
    ctx.obj = Globals(workspace=workspace, profile=profile, json=json_output)


projects_cli.register(app)
tasks_cli.register(app)
history_cli.register(app)
inspection_cli.register(app)
testjob_cli.register(app)
app.add_typer(notes_cli.goal_app, name="goal")
app.add_typer(notes_cli.memory_app, name="memory")
app.add_typer(mcp_cli.app, name="mcp")
app.add_typer(plugins_cli.plugin_app, name="plugin")
app.add_typer(engine_cli.engine_app, name="engine")
app.add_typer(engine_cli.bg_app, name="bg")
app.add_typer(engine_cli.models_app, name="models")
app.add_typer(secrets_cli.secret_app, name="secret")
