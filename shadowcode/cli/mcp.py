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
    approve_in_host: Annotated[
        bool,
        typer.Option(
            "--approve-in-host",
            help="Ask the host (MCP elicitation) about this connection's pending approvals; its answer counts as "
            "the person's, and a host may answer without one.",
        ),
    ] = False,
    approval_page: Annotated[
        bool,
        typer.Option(
            "--approval-page",
            help="With --approve-in-host: ask through a one-time loopback approval page whenever the client "
            "supports URL-mode elicitation.",
        ),
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
    on the command line, where every process listing would show it. ``--approve-in-host``
    (SRV-29) asks the host about the connection's own pending approvals and takes its answer
    as the person's; ``--approval-page`` (SRV-30) asks through the loopback approval page.
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
    if approval_page and not approve_in_host:
        raise UsageError("--approval-page goes with --approve-in-host")
    if http is None:
        if token_env is not None:
            raise UsageError("--token-env goes with --http IP:PORT")
        from shadowcode.mcp.server.launch import serve_stdio

        serve_stdio(
            workspace=g.workspace_path(),
            profile=g.profile,
            allow_write=allow_write,
            allow_approvals=allow_approvals,
            approve_in_host=approve_in_host,
            approval_page=approval_page,
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
        approve_in_host=approve_in_host,
        approval_page=approval_page,
    )


@app.command("register")
def register(
    ctx: typer.Context,
    client: Annotated[
        str,
        typer.Option(
            "--client",
            help="Host format: generic (default), codex, claude, cursor, gemini, qwen, cline, opencode, kilo, "
            "continue, vscode, zed or windsurf.",
        ),
    ] = "generic",
    allow_write: Annotated[
        bool, typer.Option("--allow-write", help="Add --allow-write to the stdio launch command.")
    ] = False,
    allow_approvals: Annotated[
        bool, typer.Option("--allow-approvals", help="Add --allow-approvals to the stdio launch command.")
    ] = False,
    approve_in_host: Annotated[
        bool,
        typer.Option(
            "--approve-in-host",
            help="Add --approve-in-host: the host is asked about the server's approvals and its answer counts.",
        ),
    ] = False,
    approval_page: Annotated[
        bool, typer.Option("--approval-page", help="Add --approval-page (with --approve-in-host).")
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
    profile); the HTTP form (--url with --token-env) names the token variable only. The
    snippet goes to stdout in the host's own shape; one line on stderr says which file the
    host reads it from and what else the host asks (trust, an approval mode).
    """
    import os
    import sys

    from shadowcode.errors import UsageError
    from shadowcode.mcp.register import Client, build_snippet

    g = globals_of(ctx)
    try:
        chosen = Client(client)
    except ValueError:
        raise UsageError(f"--client {client!r}: use one of {', '.join(c.value for c in Client)}") from None
    snippet = build_snippet(
        chosen,
        workspace=g.workspace_path(),
        profile=g.profile,
        allow_write=allow_write,
        allow_approvals=allow_approvals,
        approve_in_host=approve_in_host,
        approval_page=approval_page,
        url=url,
        token_env=token_env,
        name=name,
        json_output=g.json,
        home=os.environ.get("SHADOWCODE_HOME") or None,
    )
    sys.stdout.write(snippet.text)
    sys.stdout.flush()
    if snippet.note:
        sys.stderr.write(snippet.note + "\n")


mcp_servers.register(app)
mcp_login.register(app)
