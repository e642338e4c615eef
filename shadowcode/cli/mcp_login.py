"""``shadowcode mcp login SERVER [--scope S ...] [--no-browser]`` and ``shadowcode mcp logout SERVER`` (CW-08).

``login`` signs in to an HTTP server with OAuth: it prints the authorization URL on stderr on
a line of its own (``authorization URL: <url>``) followed by the loopback callback it waits on,
opens a browser only when one is available and ``--no-browser`` was not given, and waits at
most MCP_OAUTH_LOGIN_SECONDS for the redirect. A caller without a person (a test, an adapter)
reads that line, opens the URL itself and follows the redirect to the callback. On success the
sign-in is stored in the profile's protected secret store, bound to the discovered issuer and
resource; stdout carries one line (or one JSON document with ``--json``) and never a token.
``logout`` forgets the stored sign-in; the provider may keep its grant until it is revoked there.
Exit status: 0 signed in / out, 1 the sign-in failed (the reason on stderr, nothing stored),
2 bad usage (an unknown server, not an HTTP server, a login of it already running).
Thin: the engine finds the server, signs in and stores (``signin/start``, ``signin/wait``,
``signin/remove``); with the profile's headless engine running, it listens for the redirect and
opens the browser.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import EngineApi, McpSignedIn, McpSignInStarted

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``login`` and ``logout`` to the ``mcp`` typer app."""
    app.command("login")(login)
    app.command("logout")(logout)


def _announce(started: McpSignInStarted) -> None:
    sys.stderr.write(
        f"Sign in to {started.server} in your browser.\n"
        f"authorization URL: {started.authorization_url}\n"
        f"waiting up to {started.seconds:g} s for the sign-in to reach {started.callback_url} ...\n"
    )
    sys.stderr.flush()


def login(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(metavar="SERVER", help="An HTTP server's id (config:NAME) or name.")],
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="A scope to ask for (repeat it); default: the definition's.")
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Only print the authorization URL; open no browser.")
    ] = False,
) -> None:
    """Sign in to an HTTP server with OAuth and store the sign-in in the profile's secret store (CW-08)."""
    from shadowcode.engine.api import McpSignIn, McpSignInRef
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    request = McpSignIn(server=server, scopes=list(scope or ()), browser=not no_browser)

    async def work(api: EngineApi) -> McpSignedIn:
        started = await api.mcp_sign_in(request, g.caller())
        _announce(started)
        return await api.mcp_sign_in_wait(McpSignInRef(started.sign_in), g.caller())

    done = with_engine(g, work)
    emit(g, to_json(done), f"signed in to {done.server} (issuer {done.issuer}, resource {done.resource})")


def logout(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(metavar="SERVER", help="An HTTP server's id (config:NAME) or name.")],
) -> None:
    """Forget the stored sign-in of an HTTP server; the provider may keep its grant (CW-08)."""
    from shadowcode.engine.api import McpServerQuery
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    done = with_engine(g, lambda api: api.mcp_sign_out(McpServerQuery(server), g.caller()))
    text = f"signed out of {done.server}" if done.removed else f"{done.server} had no stored sign-in"
    emit(g, to_json(done), text + " (the provider may keep its grant until you revoke it there)")
