"""``shadowcode mcp login`` / ``mcp logout``: signing in to an HTTP server and forgetting the sign-in (CW-08).

Never part of a task: the sign-in is interactive (the user's browser, or a caller that plays
it) and touches only the profile's secret store. The engine API's ``signin/start`` starts it and
``signin/wait`` waits for it (:mod:`shadowcode.engine.mcp.pending_logins`), in the engine
that serves the command: its own temporary one, or the profile's headless one. The server is
found in the caller's catalog by id or name (:func:`find_server`); :func:`sign_in` runs
:func:`shadowcode.mcp.client.oauth.login` under the one-login-at-a-time lock of the server,
announcing the authorization URL through ``announce`` and opening a browser only when asked
to and one is available where the engine runs (``open`` on macOS, ``xdg-open`` with a display elsewhere;
never through a shell, and only an URL :func:`~shadowcode.mcp.client.oauth.check_browser_url`
accepts). The result is stored by :class:`~shadowcode.engine.mcp.sign_ins.ProfileSignIns`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import SecretStr

from shadowcode.engine.api import McpCatalog, McpServerInfo, McpSignedIn, McpSignedOut
from shadowcode.engine.mcp.sign_ins import ProfileSignIns, login_lock
from shadowcode.engine.mcp.task_servers import network_hosts_setting
from shadowcode.errors import UsageError
from shadowcode.limits import MCP_OAUTH_LOGIN_SECONDS
from shadowcode.mcp.client.oauth import OAuthSettings, check_browser_url, login
from shadowcode.profile import Profile
from shadowcode.secrets import resolve

__all__ = ["browser_command", "find_server", "sign_in", "sign_out"]


def find_server(catalog: McpCatalog, name: str) -> McpServerInfo:
    """The catalog entry named ``name``: an id, else a unique name (CW-08).

    Raises:
        UsageError: no such server, several of that name, or not a usable definition.
    """
    servers = catalog["servers"]
    found = [s for s in servers if s["id"] == name] or [s for s in servers if s.get("name") == name]
    if not found:
        raise UsageError(f"no MCP server {name!r} is registered for this project; see `shadowcode mcp`")
    if len(found) > 1:
        raise UsageError(f"several servers are named {name!r}; give the id: {', '.join(s['id'] for s in found)}")
    if error := found[0].get("error"):
        raise UsageError(f"{found[0]['id']} is not a usable definition: {error}")
    return found[0]


def browser_command(url: str) -> list[str] | None:
    """The argv that opens ``url`` in the user's browser, or None when no graphical browser is available."""
    check_browser_url(url)
    if sys.platform == "darwin" and shutil.which("open"):
        return ["open", url]
    if (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and shutil.which("xdg-open"):
        return ["xdg-open", url]
    return None


async def _open_browser(url: str) -> None:
    argv = browser_command(url)
    if argv is not None:
        subprocess.Popen(  # noqa: S603 - a fixed program and one checked URL, no shell
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )


def _http(server: Mapping[str, Any]) -> str:
    if server.get("transport") != "http" or not server.get("url"):
        raise UsageError(f"{server['id']} is not an HTTP server; only HTTP servers sign in")
    return str(server["url"])


async def sign_in(
    profile: Profile,
    server: Mapping[str, Any],
    *,
    scopes: tuple[str, ...] = (),
    announce: Callable[[str, str], None],
    browser: bool = True,
    seconds: float = MCP_OAUTH_LOGIN_SECONDS,
) -> McpSignedIn:
    """Sign in to ``server`` and store the sign-in (CW-08).

    Args:
        profile: whose secret store keeps it.
        server: the server's catalog document (``id``, ``transport``, ``url``, ``oauth``, ``oauth_resource``).
        scopes: scopes to ask for instead of the definition's.
        announce: called with ``(authorization URL, callback URL)`` before waiting.
        browser: open the user's browser when one is available.
        seconds: how long to wait for the redirect.

    Returns:
        The stored sign-in's issuer, resource and scopes (never a token).

    Raises:
        UsageError: not an HTTP server, or another login of it is in progress.
        SignInError: the sign-in failed (nothing stored).
    """
    url = _http(server)
    oauth: dict[str, Any] = server.get("oauth") or {}
    secret_ref = oauth.get("client_secret_env")
    secret = resolve(profile, secret_ref) if secret_ref else None
    if secret_ref and not secret:
        raise UsageError(
            f"oauth.client_secret_env of {server['id']} refers to {secret_ref}, which is neither set in the "
            f"environment nor stored (store it with `shadowcode secret set {secret_ref}`); nothing was sent"
        )
    settings = OAuthSettings(
        client_id=oauth.get("client_id"),
        issuer=oauth.get("issuer"),
        client_secret=SecretStr(secret) if secret else None,
        client_metadata_url=oauth.get("client_metadata_url"),
        scopes=tuple(scopes) or tuple(oauth.get("scopes") or ()),
        callback_port=oauth.get("callback_port"),
        resource=server.get("oauth_resource"),
    )
    network_hosts = network_hosts_setting(profile.settings())
    with login_lock(profile, server["id"]):
        record = await login(
            url,
            server["id"],
            settings,
            network_hosts,
            announce=announce,
            open_browser=_open_browser if browser else None,
            seconds=seconds,
        )
        ProfileSignIns(profile, server["id"], url).save(record)
    scope = record.token.get("scope")
    return McpSignedIn(
        server=server["id"],
        signed_in=True,
        issuer=record.issuer,
        resource=record.resource,
        scopes=str(scope) if scope is not None else None,
    )


def sign_out(profile: Profile, server: Mapping[str, Any]) -> McpSignedOut:
    """Forget the stored sign-in of ``server``; the provider may keep its grant (CW-08).

    Raises:
        UsageError: not an HTTP server.
    """
    removed = ProfileSignIns(profile, server["id"], _http(server)).remove()
    return McpSignedOut(server=server["id"], removed=removed)
