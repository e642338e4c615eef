"""``shadowcode mcp login`` / ``mcp logout``: signing in to an HTTP server and forgetting the sign-in (CW-08).

Runs in the command's own process, never in a task: the sign-in is interactive (the user's
browser, or a caller that plays it) and touches only the profile's secret store. The server is
named by the catalog document the engine API gives (:class:`~shadowcode.engine.api.McpServerInfo`);
:func:`sign_in` runs :func:`shadowcode.mcp.client.oauth.login` under the one-login-at-a-time lock
of the server, announcing the authorization URL through ``announce`` and opening a browser only
when asked to and one is available (``open`` on macOS, ``xdg-open`` with a display elsewhere;
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

from shadowcode.engine.mcp.sign_ins import ProfileSignIns, login_lock
from shadowcode.engine.mcp.task_servers import network_hosts_setting
from shadowcode.errors import UsageError
from shadowcode.limits import MCP_OAUTH_LOGIN_SECONDS
from shadowcode.mcp.client.oauth import OAuthSettings, check_browser_url, login
from shadowcode.profile import Profile
from shadowcode.secrets import resolve

__all__ = ["browser_command", "sign_in", "sign_out"]


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
) -> dict[str, Any]:
    """Sign in to ``server`` and store the sign-in (CW-08).

    Args:
        profile: whose secret store keeps it.
        server: the server's catalog document (``id``, ``transport``, ``url``, ``oauth``, ``oauth_resource``).
        scopes: scopes to ask for instead of the definition's.
        announce: called with ``(authorization URL, callback URL)`` before waiting.
        browser: open the user's browser when one is available.
        seconds: how long to wait for the redirect.

    Returns:
        ``{"server", "signed_in": True, "issuer", "resource", "scopes"}`` (never a token).

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
    return {
        "server": server["id"],
        "signed_in": True,
        "issuer": record.issuer,
        "resource": record.resource,
        "scopes": record.token.get("scope"),
    }


def sign_out(profile: Profile, server: Mapping[str, Any]) -> dict[str, Any]:
    """Forget the stored sign-in of ``server``; the provider may keep its grant (CW-08).

    Returns:
        ``{"server", "removed": bool}``.
    """
    removed = ProfileSignIns(profile, server["id"], _http(server)).remove()
    return {"server": server["id"], "removed": removed}
