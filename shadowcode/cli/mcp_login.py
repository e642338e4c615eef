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
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import McpServerInfo

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``login`` and ``logout`` to the ``mcp`` typer app."""
    app.command("login")(login)
    app.command("logout")(logout)


def _server(g: Globals, name: str) -> McpServerInfo:
    """The catalog entry named ``name`` (an id, or a unique name); UsageError otherwise."""
    from shadowcode.engine.api import Empty
    from shadowcode.errors import UsageError

    doc = with_engine(g, lambda api: api.mcp_catalog(Empty(), g.caller()))
    found = [s for s in doc["servers"] if s["id"] == name] or [s for s in doc["servers"] if s.get("name") == name]
    if not found:
        raise UsageError(f"no MCP server {name!r} is registered for this project; see `shadowcode mcp`")
    if len(found) > 1:
        raise UsageError(f"several servers are named {name!r}; give the id: {', '.join(s['id'] for s in found)}")
    if error := found[0].get("error"):
        raise UsageError(f"{found[0]['id']} is not a usable definition: {error}")
    return found[0]


def _announce(server_id: str, seconds: float) -> Any:
    def announce(url: str, callback: str) -> None:
        sys.stderr.write(
            f"Sign in to {server_id} in your browser.\n"
            f"authorization URL: {url}\n"
            f"waiting up to {seconds:g} s for the sign-in to reach {callback} ...\n"
        )
        sys.stderr.flush()

    return announce


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
    import anyio

    from shadowcode.engine import mcp_sign_in
    from shadowcode.limits import MCP_OAUTH_LOGIN_SECONDS
    from shadowcode.profile import Profile

    g = globals_of(ctx)
    info = _server(g, server)
    profile = Profile.select(g.profile)
    announce = _announce(info["id"], MCP_OAUTH_LOGIN_SECONDS)

    async def main() -> dict[str, Any]:
        return await mcp_sign_in(profile, info, scopes=tuple(scope or ()), announce=announce, browser=not no_browser)

    doc = anyio.run(main)
    emit(g, doc, f"signed in to {doc['server']} (issuer {doc['issuer']}, resource {doc['resource']})")


def logout(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(metavar="SERVER", help="An HTTP server's id (config:NAME) or name.")],
) -> None:
    """Forget the stored sign-in of an HTTP server; the provider may keep its grant (CW-08)."""
    from shadowcode.engine import mcp_sign_out
    from shadowcode.profile import Profile

    g = globals_of(ctx)
    info = _server(g, server)
    doc = mcp_sign_out(Profile.select(g.profile), info)
    text = f"signed out of {doc['server']}" if doc["removed"] else f"{doc['server']} had no stored sign-in"
    emit(g, doc, text + " (the provider may keep its grant until you revoke it there)")
