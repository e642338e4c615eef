"""Where an HTTP server definition may point, and who may reach it (CLI-04, CLI-11).

Rules for a definition's ``url`` (checked when the definition is parsed, nothing contacted):

- the scheme is ``http`` or ``https`` and the URL names a host;
- no user info (``user:pass@``), no query and no fragment: a credential belongs in
  ``api_key_env``, and the reviewed URL is exactly what is contacted;
- a definition with ``api_key_env`` uses ``https`` unless its host is loopback: a bearer
  credential never crosses a network in clear text.

Loopback hosts are ``localhost`` and literal addresses in ``127.0.0.0/8`` and ``::1``; any other
name counts as a network host, even one that would resolve to a loopback address. Reaching a
network host needs the network permission: the host listed in the profile setting
``mcp.network_hosts`` (empty by default). Checks run before any name lookup or connection.
``localhost`` is looked up when a connection starts and must resolve to loopback addresses only.

Private-network authority (CW-11): any other host name is looked up when a connection (or a
sign-in request) starts, and every address it resolves to is checked. When one of them is not a
public address (private, loopback, link-local, shared, reserved, multicast or unspecified, IPv4
inside IPv6 included), the connection is refused unless the definition says
``allow_private_network: true``, which covers exactly its own URL's host (sign-in requests to
other hosts never get it). The connection is then pinned to the first checked address: the
address is contacted, the name stays in the ``Host`` header and the TLS server name, so a second
lookup (DNS rebinding) cannot move it. A host written as an IP address literal is no name and is
contacted as written (the network permission still decides whether it may be).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from shadowcode.errors import ConfigError, PolicyError

__all__ = [
    "Endpoint",
    "check_url",
    "is_loopback_host",
    "is_public_address",
    "resolve_loopback",
    "resolve_pinned",
    "url_host",
]


def url_host(url: str) -> str:
    """The lower-case host of ``url`` (brackets of an IPv6 literal removed), or ``""``."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and literal loopback addresses (``127.0.0.0/8``, ``::1``)."""
    host = host.lower()
    if host.rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, bearer: bool) -> str:
    """Validate a definition's endpoint (CLI-11).

    Args:
        url: the ``url`` field.
        bearer: True when the definition sends a credential (a bearer or header reference, or OAuth).

    Returns:
        ``url`` unchanged.

    Raises:
        ValueError: the rule it breaks (the definition parser names the field).
    """
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise ValueError("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("must name a host")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError("must not carry user info; name the credential in 'api_key_env'")
    if parts.query or url.endswith("?"):
        raise ValueError("must not carry a query; a credential belongs in 'api_key_env'")
    if parts.fragment or "#" in url:
        raise ValueError("must not carry a fragment")
    if port == 0:
        raise ValueError("must not use port 0")
    if bearer and parts.scheme != "https" and not is_loopback_host(parts.hostname):
        raise ValueError(
            "sends a credential ('api_key_env', 'bearer_token_env_var', 'env_headers' or OAuth) to a network "
            "host over plain http; use https (a bearer credential goes in clear text only to a loopback address)"
        )
    return url


@dataclass(frozen=True)
class Endpoint:
    """One reviewed HTTP endpoint and what a connection to it may use (CLI-04, CLI-11).

    Header precedence (CW-08, as the peer documents it): the configured ``headers`` (literal
    ``headers`` and resolved ``env_headers``) first; then ``bearer`` as ``Authorization: Bearer``
    only when no configured header is ``Authorization``. The caller passes a stored OAuth access
    token as ``bearer`` only when the definition names neither an ``Authorization`` header nor a
    bearer reference. All of them go only to the reviewed URL.

    Attributes:
        url: the definition's ``url``.
        bearer: the resolved bearer token (``api_key_env``/``bearer_token_env_var`` or a stored
            OAuth access token), or None.
        network_hosts: hosts the user allowed (the ``mcp.network_hosts`` setting), lower case.
        headers: configured headers with their resolved values (never logged or shown).
        sends_credentials: True when the definition carries a credential reference or OAuth
            settings, so the https rule applies even before a value is known.
        allow_private_network: the definition's opt-in: its host name may resolve to addresses
            that are not public (CW-11).
    """

    url: str
    bearer: str | None = field(default=None, repr=False)
    network_hosts: frozenset[str] = frozenset()
    headers: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    sends_credentials: bool = False
    allow_private_network: bool = False

    def credential_headers(self) -> dict[str, str]:
        """The configured headers then the bearer, lower-case names, in precedence order (CW-08)."""
        out = {name.lower(): value for name, value in self.headers.items()}
        if self.bearer is not None and "authorization" not in out:
            out["authorization"] = f"Bearer {self.bearer}"
        return out

    @property
    def host(self) -> str:
        """The URL's host, lower case."""
        return url_host(self.url)

    def check(self) -> None:
        """Apply every rule again before anything is looked up or contacted (CLI-11).

        Raises:
            ConfigError: the URL breaks a definition rule.
            PolicyError: a network host without the network permission.
        """
        try:
            check_url(self.url, bearer=self.bearer is not None or self.sends_credentials)
        except ValueError as exc:
            raise ConfigError(f"the server URL {exc}") from None
        host = self.host
        if not is_loopback_host(host) and host.rstrip(".") not in self.network_hosts:
            raise PolicyError(
                f"the server's host {host!r} is not on the loopback interface and the network permission "
                f"does not cover it; add it to the profile setting mcp.network_hosts to allow it"
            )

    async def target(self) -> tuple[str, str | None, dict[str, Any]]:
        """Check the rules, then say what to contact: ``(url, host header or None, request extensions)``.

        ``localhost`` is replaced by the loopback address it resolves to, any other host name by
        the checked address it resolves to (CW-11); the original host stays in the ``Host``
        header and, for https, in the TLS server name. An IP address literal is contacted as is.

        Raises:
            ConfigError, PolicyError: as :meth:`check`, or from :func:`resolve_loopback` and
                :func:`resolve_pinned`.
        """
        self.check()
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = await resolve_loopback(host, port)
        if address is None:
            address = await resolve_pinned(host, port, allow_private=self.allow_private_network)
        if address is None:
            return self.url, None, {}
        literal = f"[{address}]" if ":" in address else address
        netloc = f"{literal}:{parts.port}" if parts.port else literal
        extensions: dict[str, Any] = {"sni_hostname": host} if parts.scheme == "https" else {}
        return urlunsplit(parts._replace(netloc=netloc)), parts.netloc, extensions


async def resolve_loopback(host: str, port: int) -> str | None:
    """For ``localhost``, the loopback address to connect to; None for any other host (CLI-11).

    Raises:
        PolicyError: ``localhost`` resolves to a non-loopback address, or does not resolve.
    """
    if host.rstrip(".") != "localhost":
        return None
    try:
        infos = await anyio.getaddrinfo("localhost", port, type=0)
    except OSError as exc:
        raise PolicyError(f"localhost does not resolve ({type(exc).__name__})") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise PolicyError("localhost resolves to an address outside the loopback interface; refusing to connect")
    return next((a for a in addresses if ":" not in a), addresses[0])


def is_public_address(address: str) -> bool:
    """True for a globally routable unicast address; False for private, loopback, link-local,
    shared (100.64.0.0/10), reserved, multicast and unspecified ones, an IPv4 address inside IPv6
    judged as IPv4 (CW-11)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is not None:
            ip = inner
    return ip.is_global and not ip.is_multicast and not ip.is_unspecified


async def resolve_pinned(host: str, port: int, *, allow_private: bool) -> str | None:
    """For a host name, the address to contact, after checking every address it resolves to;
    None for an IP address literal (contacted as written) (CW-11).

    Args:
        host: the URL's host (not ``localhost``, which :func:`resolve_loopback` handles).
        port: the port, for the look-up.
        allow_private: the definition's ``allow_private_network``.

    Returns:
        The first address the name resolved to (IPv4 first), once all of them passed.

    Raises:
        PolicyError: the name does not resolve, or resolves to an address that is not public
            while ``allow_private`` is False.
    """
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    else:
        return None
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise PolicyError(f"the server's host {host!r} does not resolve ({type(exc).__name__})") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise PolicyError(f"the server's host {host!r} does not resolve")
    private = [a for a in addresses if not is_public_address(a)]
    if private and not allow_private:
        raise PolicyError(
            f"the server's host {host!r} resolves to {', '.join(private)}, which is not a public address; "
            "set allow_private_network: true on its definition to allow a private network name"
        )
    return next((a for a in addresses if ":" not in a), addresses[0])
