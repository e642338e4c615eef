"""Stored OAuth sign-ins of HTTP servers: where they live and how a connection start uses them (CW-08).

A sign-in made by ``shadowcode mcp login`` is kept in the profile's protected secret store
(``secrets.json``, mode 0600) under a reserved name derived from the server id and its URL, as
one JSON record bound to the issuer and resource discovered at login
(:class:`~shadowcode.mcp.client.oauth.SignIn`). Nothing of it reaches the database, events,
logs or process arguments. ``mcp logout`` removes the record; the provider may keep its grant.

At connection start :func:`stored_access_token` (never interactive) returns the access token
to send, after :func:`~shadowcode.mcp.client.oauth.access_token` checked the binding and
refreshed an expired token; a sign-in that cannot be used raises ConfigError telling the user
to log in again. :func:`sign_in_problem` is the static view ``mcp doctor`` reports.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Generator
from typing import TYPE_CHECKING

from pydantic import SecretStr, ValidationError

from shadowcode.errors import ConfigError, UsageError
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition
from shadowcode.mcp.client.oauth import OAuthSettings, SignIn, SignInError, access_token
from shadowcode.secrets import SecretStore, resolve

if TYPE_CHECKING:
    from shadowcode.profile import Profile

__all__ = [
    "ProfileSignIns",
    "login_lock",
    "oauth_settings",
    "sign_in_problem",
    "stored_access_token",
]


def oauth_settings(spec: HttpSpec, client_secret: str | None = None) -> OAuthSettings:
    """The sign-in settings of an HTTP definition, with the client secret resolved by the caller."""
    o = spec.oauth
    if o is None:
        return OAuthSettings(resource=spec.oauth_resource)
    return OAuthSettings(
        client_id=o.client_id,
        issuer=o.issuer,
        client_secret=SecretStr(client_secret) if client_secret and o.client_secret_env else None,
        client_metadata_url=o.client_metadata_url,
        scopes=o.scopes,
        callback_port=o.callback_port,
        resource=spec.oauth_resource,
    )


class ProfileSignIns:
    """The stored sign-in of one server (id and URL) in the profile's secret store (CW-08)."""

    def __init__(self, profile: Profile, server_id: str, url: str) -> None:
        self.store = SecretStore(profile)
        self.server_id = server_id
        self.url = url
        self.key = hashlib.sha256(f"{server_id}\n{url}".encode()).hexdigest()[:32]

    def load(self) -> SignIn | None:
        """The stored sign-in for this id and URL, or None (also for an unreadable record)."""
        raw = self.store.get_record(self.key)
        if raw is None:
            return None
        try:
            record = SignIn.model_validate_json(raw)
        except ValidationError:
            return None
        return record if (record.server_id, record.url) == (self.server_id, self.url) else None

    def exists(self) -> bool:
        """True when a record is stored under this server's key, usable or not."""
        return self.store.get_record(self.key) is not None

    def save(self, record: SignIn) -> None:
        """Replace the stored sign-in."""
        self.store.set_record(self.key, json.dumps(record.model_dump(mode="json"), sort_keys=True))

    def remove(self) -> bool:
        """Forget the stored sign-in; returns whether there was one."""
        return self.store.remove_record(self.key)


@contextlib.contextmanager
def login_lock(profile: Profile, server_id: str) -> Generator[None, None, None]:
    """Hold the one-login-at-a-time lock of ``server_id`` (CW-08).

    Raises:
        UsageError: another ``mcp login`` of the same server is in progress.
    """
    profile.ensure()
    name = hashlib.sha256(server_id.encode()).hexdigest()[:16]
    fd = os.open(profile.root / f"mcp-login-{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"another `shadowcode mcp login` for {server_id} is in progress; finish it first"
            ) from None
        yield
    finally:
        os.close(fd)


async def stored_access_token(
    profile: Profile, definition: ServerDefinition, network_hosts: frozenset[str]
) -> str | None:
    """The access token of the server's stored sign-in, checked and refreshed now; None without one (CW-08).

    Raises:
        ConfigError: the sign-in is bound to another issuer or resource, expired without a way
            to refresh, or its refresh failed (the record kept); the message says to log in again.
        PolicyError: the authorization server needs the network permission.
    """
    spec = definition.spec
    assert isinstance(spec, HttpSpec)
    signins = ProfileSignIns(profile, definition.id, spec.url)
    record = signins.load()
    if record is None:
        return None
    try:
        secret = None
        if spec.oauth is not None and spec.oauth.client_secret_env is not None:
            # Resolved now but sent only if the token must be refreshed; never stored.
            secret = resolve(profile, spec.oauth.client_secret_env)
        return await access_token(record, signins, oauth_settings(spec, secret), network_hosts)
    except SignInError as exc:
        raise ConfigError(exc.message) from None


def sign_in_problem(profile: Profile, definition: ServerDefinition) -> str | None:
    """``authorization_required: ...`` when a server asking for OAuth has no usable stored sign-in (CW-08).

    Judged from the stored record alone (nothing is contacted): none stored, or one that cannot
    be read. An issuer or resource change is only seen when a connection starts.
    """
    spec = definition.spec
    if not isinstance(spec, HttpSpec) or (spec.oauth is None and spec.oauth_resource is None):
        return None
    signins = ProfileSignIns(profile, definition.id, spec.url)
    record = signins.load()
    if record is not None:
        if spec.oauth_resource is not None and record.resource != spec.oauth_resource:
            return (
                f"authorization_required: the stored sign-in is for {record.resource}, not the pinned "
                f"oauth_resource; run `shadowcode mcp login {definition.id}`"
            )
        return None
    return f"authorization_required: run `shadowcode mcp login {definition.id}`"
