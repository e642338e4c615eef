"""Signing in to an HTTP server with OAuth, and using the stored sign-in later (CW-08).

The protocol is the official SDK's (``mcp.client.auth``): protected-resource and
authorization-server metadata discovery, PKCE S256, dynamic client registration, client ID
metadata documents, the token exchange and its checks (state, ``iss``, metadata issuer,
resource). This module supplies the rest:

- :func:`login` drives the SDK's flow with one MCP request, every request bounded by
  :class:`~shadowcode.mcp.client.oauth_http.BoundedTransport`; a registration or token request
  goes only to an endpoint the authorization server's metadata names (without metadata nothing
  is sent to a guessed ``/register``, ``/authorize`` or ``/token``); the authorization URL (``https``,
  or ``http`` to loopback only) goes to ``announce`` and, when given, ``open_browser``; the
  redirect comes back to a :class:`~shadowcode.mcp.client.oauth_callback.CallbackListener` on
  127.0.0.1 within a deadline. A pre-registered ``client_id`` is used only with its exact
  ``issuer``; an ``oauth_resource`` pin must equal the discovered resource; a registration
  naming a callback off loopback is refused. The result is a :class:`SignIn` bound to the
  discovered issuer and resource, handed to the caller's :class:`SignInStore`.
- :func:`access_token` runs at connection start, never interactively: it discovers the issuer
  and resource again, refuses a sign-in bound to other ones, and refreshes an expired access
  token once (no retry); a failed refresh keeps the record and says to log in again.

Errors are :class:`SignInError` with messages that name the cause and never carry a token, a
state value or a peer's body. The SDK's own flow logging is silenced for that reason.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import calculate_token_expiry, check_resource_allowed, resource_url_from_server_url
from pydantic import AnyUrl, BaseModel, ConfigDict, SecretStr, ValidationError

from shadowcode.limits import MCP_OAUTH_LOGIN_SECONDS, MCP_OAUTH_REFRESH_EARLY_SECONDS
from shadowcode.mcp.client.endpoint import is_loopback_host, url_host
from shadowcode.mcp.client.oauth_callback import CallbackListener
from shadowcode.mcp.client.oauth_http import SignInError, bounded_client

__all__ = ["OAuthSettings", "SignIn", "SignInError", "SignInStore", "access_token", "check_browser_url", "login"]

for _name in ("mcp.client.auth", "mcp.client.auth.oauth2"):  # its messages can carry state values and peer bodies
    logging.getLogger(_name).setLevel(logging.CRITICAL + 1)
    logging.getLogger(_name).propagate = False

_PROTOCOL = "2025-11-25"
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")
_STATUS = re.compile(r"\((\d{3})\)|: (\d{3})\b")


class OAuthSettings(BaseModel):
    """A definition's sign-in settings (the ``oauth`` object and ``oauth_resource``)."""

    model_config = ConfigDict(frozen=True)

    client_id: str | None = None
    issuer: str | None = None
    client_secret: SecretStr | None = None
    """A pre-registered confidential client's secret, resolved by the caller for this one use."""
    client_metadata_url: str | None = None
    scopes: tuple[str, ...] = ()
    callback_port: int | None = None
    resource: str | None = None


class SignIn(BaseModel):
    """One stored sign-in, bound to the issuer and resource discovered when it was made (CW-08)."""

    model_config = ConfigDict(frozen=True)

    server_id: str
    url: str
    issuer: str
    resource: str
    token_endpoint: str
    client: dict[str, object]
    token: dict[str, object]
    expires_at: float | None = None


class SignInStore(Protocol):
    """Where a server's sign-in is kept (the profile's protected secret store)."""

    def load(self) -> SignIn | None:
        """The stored sign-in, or None (also when it cannot be read)."""
        ...

    def save(self, record: SignIn) -> None:
        """Replace the stored sign-in."""
        ...


def check_browser_url(url: str) -> str:
    """``url`` when it may be shown and opened: ``https``, or ``http`` to a loopback host (CW-08).

    Raises:
        SignInError: any other scheme (``javascript:``, ``file:``, ...), or plain http off loopback.
    """
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise SignInError("refused the authorization URL: it contains spaces or control characters; nothing opened")
    if scheme == "https" or (scheme == "http" and is_loopback_host(url_host(url))):
        return url
    shown = scheme or "no scheme"
    raise SignInError(
        f"refused the authorization URL ({shown}): only https, or http to a loopback address, is opened; "
        "nothing was opened or stored"
    )


def _loopback_callback(uri: str) -> bool:
    return uri.startswith("http://") and is_loopback_host(url_host(uri))


class _Memory:
    """The SDK's token storage during one login: nothing is written until the flow finished."""

    def __init__(self, settings: OAuthSettings, redirect_uri: str) -> None:
        self.settings = settings
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        if settings.client_id is not None:
            secret = settings.client_secret.get_secret_value() if settings.client_secret is not None else None
            self.client = OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=secret,
                redirect_uris=[AnyUrl(redirect_uri)],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
                issuer=settings.issuer,
            )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.settings.client_id is not None and client_info.client_id != self.settings.client_id:
            raise SignInError(
                f"the server's authorization server is not the configured issuer {self.settings.issuer}; "
                "a pre-registered client is not registered anew; nothing was stored"
            )
        for uri in client_info.redirect_uris or []:
            if not _loopback_callback(str(uri)):
                raise SignInError(
                    "the authorization server registered a callback outside the loopback interface; "
                    "refusing to sign in (nothing was stored)"
                )
        self.client = client_info


_GUESSED = (
    "the server publishes no authorization server metadata; guessed endpoints (/register, /authorize, "
    "/token) are not used and nothing was sent to them; nothing was stored"
)


class _Provider(OAuthClientProvider):
    """The SDK's provider with the configured issuer of a pre-registered client enforced, the
    configured scopes asked for instead of the ones the SDK would pick from the challenge, and
    every request of the flow checked against the discovered metadata before it is sent."""

    pinned_issuer: str | None = None
    configured_scope: str | None = None

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, refusing any request to an endpoint the metadata did not name (CW-08).

        Besides the MCP request itself, only metadata look-ups (``GET``) go anywhere; a
        registration or token request goes out only to the ``registration_endpoint`` or
        ``token_endpoint`` the authorization server's metadata names. The SDK would otherwise
        fall back to ``/register`` and ``/token`` on the server's origin when no metadata was
        found. The flow is driven directly, without the SDK's following of same-origin
        redirects: a redirect is handed to the flow as the answer it is (CLI-11).

        Raises:
            SignInError: the flow was about to send a request to an endpoint no metadata named.
        """
        flow = self._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                self._check_named(outgoing, request)
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _check_named(self, outgoing: httpx2.Request, original: httpx2.Request) -> None:
        if outgoing is original or outgoing.method == "GET":
            return
        asm = self.context.oauth_metadata
        if asm is None:
            raise SignInError(_GUESSED)
        named = {_endpoint(str(url)) for url in (asm.registration_endpoint, asm.token_endpoint) if url is not None}
        if _endpoint(str(outgoing.url)) not in named:
            raise SignInError(
                f"the sign-in would send a request to {url_host(str(outgoing.url))}{outgoing.url.path[:200]!r}, "
                "an endpoint the authorization server's metadata does not name; nothing was sent or stored"
            )

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if self.context.oauth_metadata is None:
            raise SignInError(_GUESSED)
        if self.configured_scope:
            self.context.client_metadata.scope = self.configured_scope
        _secret_method(self.context.client_info, self.context.oauth_metadata)
        return await super()._perform_authorization_code_grant()

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self.pinned_issuer is None:
            return advertised[0]
        for issuer in advertised:
            if issuers_match(issuer, self.pinned_issuer):
                return issuer
        raise SignInError(
            f"the server names the authorization server {advertised[0]}, not the configured issuer "
            f"{self.pinned_issuer}; nothing was stored"
        )


def _endpoint(url: str) -> str:
    """``url`` without query or fragment, for comparing a request's target with a named endpoint."""
    return str(httpx2.URL(url).copy_with(query=None, fragment=None))


def _secret_method(info: OAuthClientInformationFull | None, asm: OAuthMetadata | None) -> None:
    """A confidential client sends its secret with HTTP Basic, or in the form when the server's
    metadata names only ``client_secret_post`` (RFC 8414 ``token_endpoint_auth_methods_supported``)."""
    if info is None or info.client_secret is None or asm is None:
        return
    named = asm.token_endpoint_auth_methods_supported or []
    if "client_secret_post" in named and "client_secret_basic" not in named:
        info.token_endpoint_auth_method = "client_secret_post"


def _status(message: str) -> str:
    found = _STATUS.search(message)
    return f" (HTTP {found.group(1) or found.group(2)})" if found else ""


def _explain(exc: Exception) -> SignInError:
    """The SDK's error as a message that names the cause, never a token, state or peer body."""
    message = str(exc)
    if isinstance(exc, SignInError):
        return exc
    if message.startswith("State parameter mismatch"):
        return SignInError(
            "the callback's state did not match this sign-in (a stale or forged redirect); nothing was stored"
        )
    if "metadata issuer mismatch" in message:
        return SignInError(
            "the authorization server's metadata names a different issuer than the one discovered; nothing was stored"
        )
    if message.startswith("Protected resource") or "resource" in message.lower() and "match" in message:
        return SignInError("the server's protected resource metadata names another resource; nothing was stored")
    if isinstance(exc, OAuthTokenError):
        if message.startswith("Invalid token response"):
            return SignInError("the token response carries no usable access_token; nothing was stored")
        if _status(message) == " (HTTP 401)":
            return SignInError(
                "the token exchange failed (HTTP 401): the authorization server refused the client's "
                "credentials (check oauth.client_id and the secret oauth.client_secret_env names); nothing was stored"
            )
        return SignInError(f"the token exchange failed{_status(message)}; nothing was stored")
    if isinstance(exc, OAuthRegistrationError):
        return SignInError(f"dynamic client registration failed{_status(message)}; nothing was stored")
    if isinstance(exc, OAuthFlowError):
        first = message.split(":", 1)[0][:200]
        return SignInError(f"the sign-in failed: {first}; nothing was stored")
    if isinstance(exc, ValidationError):
        return SignInError("the authorization server sent a document that is not valid OAuth metadata")
    return SignInError(f"the sign-in failed ({type(exc).__name__}); nothing was stored")


def _resource(url: str, prm: ProtectedResourceMetadata | None) -> str:
    """The resource a token is for, as the SDK computes it (RFC 8707)."""
    resource = resource_url_from_server_url(url)
    if prm is not None and prm.resource and check_resource_allowed(resource, str(prm.resource)):
        return str(prm.resource)
    return resource


async def login(
    url: str,
    server_id: str,
    settings: OAuthSettings,
    network_hosts: frozenset[str],
    *,
    announce: Callable[[str, str], None],
    open_browser: Callable[[str], Awaitable[None]] | None = None,
    seconds: float = MCP_OAUTH_LOGIN_SECONDS,
) -> SignIn:
    """Sign in to the server at ``url`` and return the sign-in to store (CW-08).

    Args:
        url: the definition's endpoint.
        server_id: the definition id (recorded, and named in messages).
        settings: the definition's sign-in settings.
        network_hosts: hosts the network permission covers (the server and authorization server).
        announce: called with ``(authorization URL, callback URL)`` before waiting.
        open_browser: opens the authorization URL; None to open nothing.
        seconds: how long to wait for the redirect.

    Returns:
        The sign-in, not yet stored.

    Raises:
        SignInError: why it failed; nothing was stored.
    """
    async with CallbackListener(settings.callback_port or 0) as listener:
        memory = _Memory(settings, listener.redirect_uri)
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(listener.redirect_uri)],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            client_name="ShadowCode",
            scope=" ".join(settings.scopes) or None,
        )
        holder: list[_Provider] = []

        async def redirect(authorization_url: str) -> None:
            check_browser_url(authorization_url)
            if holder[0].context.oauth_metadata is None:
                raise SignInError(_GUESSED)
            announce(authorization_url, listener.redirect_uri)
            if open_browser is not None:
                await open_browser(authorization_url)

        async def validate_resource(server_url: str, prm_resource: str | None) -> None:
            expected = resource_url_from_server_url(server_url)
            if settings.resource is not None and prm_resource != settings.resource:
                raise SignInError(
                    f"the server names the resource {prm_resource}, not the pinned oauth_resource "
                    f"{settings.resource}; nothing was stored"
                )
            if prm_resource and not check_resource_allowed(expected, prm_resource):
                raise SignInError(f"the server's metadata names the resource {prm_resource}, not {expected}")

        provider = _Provider(
            url,
            metadata,
            memory,
            redirect_handler=redirect,
            callback_handler=lambda: listener.wait(seconds),
            client_metadata_url=settings.client_metadata_url,
            validate_resource_url=validate_resource,
        )
        provider.pinned_issuer = settings.issuer if settings.client_id is not None else None
        provider.configured_scope = " ".join(settings.scopes) or None
        holder.append(provider)
        body = (
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"' + _PROTOCOL + '",'
            '"capabilities":{},"clientInfo":{"name":"shadowcode-login","version":"1"}}}'
        )
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": _PROTOCOL,
        }
        try:
            async with bounded_client(network_hosts, auth=provider) as client:
                response = await client.post(url, content=body.encode("utf-8"), headers=headers)
                if response.is_success and memory.tokens is None:
                    # A server may let initialize through and guard every other request: ask
                    # for the tool list too, in the session it opened, before concluding it
                    # needs no sign-in.
                    response = await _probe_guarded(client, url, headers, response)
        except Exception as exc:  # noqa: BLE001 - the SDK's flow raises many kinds; each is explained
            raise _explain(exc) from None
        context = provider.context
        if memory.tokens is None:
            if response.is_success:
                status = response.status_code
                raise SignInError(f"{server_id} did not ask for a sign-in (HTTP {status}); nothing was stored")
            raise SignInError(f"the sign-in did not finish (HTTP {response.status_code}); nothing was stored")
        if response.status_code in (401, 403):
            raise SignInError(f"the server refused the new access token (HTTP {response.status_code}); nothing stored")
        assert context.oauth_metadata is not None and memory.client is not None
        resource = context.get_resource_url()
        if settings.resource is not None and resource != settings.resource:
            raise SignInError(
                f"the discovered resource {resource} is not the pinned oauth_resource {settings.resource}; "
                "nothing was stored"
            )
        return SignIn(
            server_id=server_id,
            url=url,
            issuer=str(context.oauth_metadata.issuer),
            resource=resource,
            token_endpoint=str(context.oauth_metadata.token_endpoint),
            # A confidential client's secret is not kept: it is resolved again at refresh.
            client=memory.client.model_dump(mode="json", exclude_none=True, exclude={"client_secret"}),
            token=memory.tokens.model_dump(mode="json", exclude_none=True),
            expires_at=context.token_expiry_time,
        )


async def _probe_guarded(
    client: httpx2.AsyncClient, url: str, headers: dict[str, str], initialized: httpx2.Response
) -> httpx2.Response:
    """After an unguarded initialize: send ``notifications/initialized`` and ``tools/list`` (CW-08).

    Returns the ``tools/list`` response (a 401 there has already run the sign-in through the
    client's auth flow).
    """
    more = dict(headers)
    session = initialized.headers.get("mcp-session-id")
    if session:
        more["mcp-session-id"] = session
    await client.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=more)
    listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'
    return await client.post(url, content=listing, headers=more)


async def _discover(
    client: httpx2.AsyncClient, url: str, fallback_issuer: str
) -> tuple[ProtectedResourceMetadata | None, OAuthMetadata]:
    prm: ProtectedResourceMetadata | None = None
    for candidate in build_protected_resource_metadata_discovery_urls(None, url):
        prm = await handle_protected_resource_response(await client.send(create_oauth_metadata_request(candidate)))
        if prm is not None:
            break
    issuer = str(prm.authorization_servers[0]) if prm is not None and prm.authorization_servers else fallback_issuer
    for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, url):
        ok, asm = await handle_auth_metadata_response(await client.send(create_oauth_metadata_request(candidate)))
        if not ok:
            break
        if asm is not None:
            if not issuers_match(str(asm.issuer), issuer):
                raise SignInError(
                    "the authorization server's metadata names a different issuer than the one discovered"
                )
            return prm, asm
    raise SignInError(f"no authorization server metadata was found for {issuer}")


def _relogin(server_id: str, why: str) -> SignInError:
    return SignInError(f"{why}: run `shadowcode mcp login {server_id}`")


async def access_token(
    record: SignIn, store: SignInStore, settings: OAuthSettings, network_hosts: frozenset[str]
) -> str:
    """The access token to send, after checking the sign-in's binding and refreshing it if expired (CW-08).

    Never interactive and never retried: a 401 later is the connection's failure.

    Raises:
        SignInError: the issuer or resource changed, the token expired and cannot be refreshed,
            or the refresh failed (the record is kept); each message says to log in again.
    """
    sid = record.server_id
    try:
        async with bounded_client(network_hosts) as client:
            prm, asm = await _discover(client, record.url, record.issuer)
            issuer, resource = str(asm.issuer), _resource(record.url, prm)
            pinned = settings.resource is not None and resource != settings.resource
            wrong_client = settings.client_id is not None and not issuers_match(issuer, settings.issuer or "")
            if not issuers_match(issuer, record.issuer) or resource != record.resource or pinned or wrong_client:
                raise _relogin(
                    sid,
                    f"the stored sign-in for {sid} was made with {record.issuer} for {record.resource}, but the "
                    f"server now names {issuer} for {resource}; it is not used",
                )
            token = OAuthToken.model_validate(record.token)
            if record.expires_at is None or time.time() < record.expires_at - MCP_OAUTH_REFRESH_EARLY_SECONDS:
                return token.access_token
            if not token.refresh_token:
                raise _relogin(sid, f"the stored sign-in for {sid} has expired and holds no refresh token")
            return await _refresh(client, record, store, asm, prm, token, settings)
    except SignInError:
        raise
    except (httpx2.HTTPError, ValidationError, OAuthFlowError) as exc:
        raise _relogin(sid, f"the stored sign-in for {sid} could not be checked ({type(exc).__name__})") from None


class _NoTokenStorage:
    """The token storage of a context that only prepares one refresh request's client authentication.

    That request reads and writes no storage; the refreshed token is stored by :func:`_refresh`.
    """

    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise RuntimeError("a refresh context stores no tokens")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        raise RuntimeError("a refresh context stores no client information")


async def _refresh(
    client: httpx2.AsyncClient,
    record: SignIn,
    store: SignInStore,
    asm: OAuthMetadata,
    prm: ProtectedResourceMetadata | None,
    token: OAuthToken,
    settings: OAuthSettings,
) -> str:
    sid = record.server_id
    info = OAuthClientInformationFull.model_validate(record.client)
    if info.token_endpoint_auth_method in _SECRET_METHODS:
        if settings.client_secret is None or settings.client_id != info.client_id:
            raise _relogin(
                sid,
                f"the stored sign-in for {sid} has expired and its refresh needs the client secret "
                "oauth.client_secret_env names, which is neither set in the environment nor stored now",
            )
        info.client_secret = settings.client_secret.get_secret_value()
    context = OAuthContext(
        server_url=record.url,
        client_metadata=OAuthClientMetadata(redirect_uris=info.redirect_uris or None),
        storage=_NoTokenStorage(),  # only prepare_token_auth is used
        redirect_handler=None,
        callback_handler=None,
        client_info=info,
        oauth_metadata=asm,
        protected_resource_metadata=prm,
    )
    data = {"grant_type": "refresh_token", "refresh_token": token.refresh_token or "", "client_id": info.client_id}
    data["resource"] = record.resource
    data, headers = context.prepare_token_auth(data, {"Content-Type": "application/x-www-form-urlencoded"})
    response = await client.post(str(asm.token_endpoint), data=data, headers=headers)
    if response.status_code != 200:
        raise _relogin(
            sid,
            f"the stored sign-in for {sid} could not be refreshed (HTTP {response.status_code}); it is kept but "
            "not used, nothing is retried",
        )
    try:
        fresh = OAuthToken.model_validate_json(response.content)
    except ValidationError:
        raise _relogin(sid, f"the refresh of {sid}'s sign-in returned no usable access_token") from None
    if fresh.refresh_token is None:
        fresh.refresh_token = token.refresh_token
    if fresh.scope is None:
        fresh.scope = token.scope
    store.save(
        record.model_copy(
            update={
                "token": fresh.model_dump(mode="json", exclude_none=True),
                "expires_at": calculate_token_expiry(fresh.expires_in),
                "token_endpoint": str(asm.token_endpoint),
            }
        )
    )
    return fresh.access_token
