"""``shadowcode mcp ...``: serve the native MCP server, and print registrations."""

from __future__ import annotations

from typing import Annotated

import typer

from shadowcode.cli import mcp_login, mcp_servers
from shadowcode.cli.context import globals_of

__all__ = ["app"]

app = typer.Typer(
    help="The native MCP server, its registration, and the external servers tasks may call.",
    invoke_without_command=True,
)


@app.callback()
def _catalog(ctx: typer.Context) -> None:
    """The native MCP server and external MCP servers; with no command, print the server catalog (CLI-01)."""
    if ctx.invoked_subcommand is None:
        from shadowcode.cli.mcp_servers import print_catalog

        print_catalog(ctx)


@app.command("serve")
def serve(
    ctx: typer.Context,
    allow_write: Annotated[bool, typer.Option("--allow-write", help="Permit changes in a trusted project.")] = False,
    allow_approvals: Annotated[
        bool, typer.Option("--allow-approvals", help="Let the client resolve its own approvals (with --allow-write).")
    ] = False,
    http: Annotated[
        str | None,
        typer.Option("--http", help="Serve the authenticated HTTP gateway on a loopback IP:PORT instead of stdio."),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env", help="With --http: the environment variable (or stored secret) holding the bearer token."
        ),
    ] = None,
    token: Annotated[str | None, typer.Option("--token", hidden=True, show_default=False)] = None,
) -> None:
    """Serve one MCP client over stdio, or every token holder over loopback HTTP, for the --workspace project.

    Over stdio (SRV-01) stdout carries only newline-delimited JSON-RPC; logs go to stderr.
    With ``--http IP:PORT --token-env NAME`` (GW-01) the gateway announces its address on
    stderr once ready and keeps stdout empty. ``--json`` is refused (SRV-02); so is a token
    on the command line, where every process listing would show it.
    """
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    if g.json:
        raise UsageError("--json cannot be combined with `mcp serve`: stdout carries JSON-RPC only")
    if token is not None:
        raise UsageError(
            "--token is refused: a token on the command line is visible to every local user; "
            "put it in an environment variable (or `shadowcode secret set NAME`) and pass --token-env NAME"
        )
    if http is None:
        if token_env is not None:
            raise UsageError("--token-env goes with --http IP:PORT")
        from shadowcode.mcp.server.launch import serve_stdio

        serve_stdio(
            workspace=g.workspace_path(), profile=g.profile, allow_write=allow_write, allow_approvals=allow_approvals
        )
        return
    if token_env is None:
        raise UsageError("--http needs --token-env NAME: the variable or stored secret holding the bearer token")
    from shadowcode.mcp.server.gateway import serve_http

    serve_http(
        workspace=g.workspace_path(),
        profile=g.profile,
        bind=http,
        token_env=token_env,
        allow_write=allow_write,
        allow_approvals=allow_approvals,
    )


@app.command("register")
def register(
    ctx: typer.Context,
    client: Annotated[
        str, typer.Option("--client", help="Host format: generic (default), codex, claude or cursor.")
    ] = "generic",
    allow_write: Annotated[
        bool, typer.Option("--allow-write", help="Add --allow-write to the stdio launch command.")
    ] = False,
    allow_approvals: Annotated[
        bool, typer.Option("--allow-approvals", help="Add --allow-approvals to the stdio launch command.")
    ] = False,
    url: Annotated[
        str | None, typer.Option("--url", help="A running loopback gateway, http://127.0.0.1:PORT/mcp.")
    ] = None,
    token_env: Annotated[
        str | None, typer.Option("--token-env", help="Name of the variable holding the gateway's token.")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the server entry.")] = "shadowcode",
) -> None:
    """Print a host configuration snippet to review; edits, starts and contacts nothing.

    Covers REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.

    The stdio form launches this executable with the canonical --workspace project (and
    --profile when given, and SHADOWCODE_HOME in its env when set, so the host opens the same
    profile); the HTTP form (--url with --token-env) names the token variable only.
    """
    import os
    import sys

    from shadowcode.errors import UsageError
    from shadowcode.mcp.register import Client, build_snippet

    g = globals_of(ctx)
    try:
        chosen = Client(client)
    except ValueError:
        raise UsageError(f"--client {client!r}: choose generic, codex, claude or cursor") from None
    snippet = build_snippet(
        chosen,
        workspace=g.workspace_path(),
        profile=g.profile,
        allow_write=allow_write,
        allow_approvals=allow_approvals,
        url=url,
        token_env=token_env,
        name=name,
        json_output=g.json,
        home=os.environ.get("SHADOWCODE_HOME") or None,
    )
    sys.stdout.write(snippet.text)


mcp_servers.register(app)
mcp_login.register(app)
