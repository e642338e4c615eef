"""Credentials of an HTTP server's connection, resolved when it starts (CLI-04, CLI-11, CW-08).

:func:`http_endpoint` turns a reviewed HTTP definition into the :class:`Endpoint` a connection
uses, with every referenced value looked up now (a stored secret or an environment variable,
the same look-up as ``env_refs``; see :func:`shadowcode.secrets.resolve`) and a
:class:`Redactor` holding each of those values, so tool metadata, results and errors are cleaned
in the same single pass as stdio values.

Precedence (as the peer documents it): ``headers`` and ``env_headers`` first; then the bearer
reference (``bearer_token_env_var`` / ``api_key_env``) when no ``Authorization`` header is set;
then the server's stored OAuth sign-in when there is still none (:mod:`shadowcode.engine.mcp.sign_ins`).
A name that resolves to nothing stops the connection before anything is contacted, and the
error names the name, never a value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.errors import ConfigError
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.redaction import Redactor

if TYPE_CHECKING:
    from shadowcode.profile import Profile

__all__ = ["configured_headers", "http_endpoint", "missing_references"]


def _missing(field: str, ref: str) -> str:
    return (
        f"{field} refers to {ref}, which is neither set in the environment nor stored "
        f"(store it with `shadowcode secret set {ref}`)"
    )


def missing_references(profile: Profile, spec: HttpSpec) -> list[str]:
    """One message per reference of ``spec`` that resolves to nothing; names only (CLI-04)."""
    from shadowcode.secrets import resolve

    refs = [(f"env_headers: {h}", ref) for h, ref in sorted(spec.env_headers.items())]
    if spec.bearer_ref is not None:
        refs.append(("bearer_token_env_var" if spec.bearer_token_env_var else "api_key_env", spec.bearer_ref))
    return [_missing(field, ref) for field, ref in refs if not resolve(profile, ref)]


def configured_headers(profile: Profile, spec: HttpSpec) -> tuple[dict[str, str], str | None]:
    """The literal and referenced headers and the bearer token, resolved now (CLI-04).

    Returns:
        ``(headers, bearer)``: header name → value (literal ``headers`` then ``env_headers``),
        and the bearer reference's value or None.

    Raises:
        ConfigError: a reference resolves to nothing (the first one named, never a value).
    """
    from shadowcode.secrets import resolve

    missing = missing_references(profile, spec)
    if missing:
        raise ConfigError(missing[0])
    headers = dict(spec.headers)
    for header, ref in spec.env_headers.items():
        headers[header] = resolve(profile, ref) or ""
    bearer = resolve(profile, spec.bearer_ref) if spec.bearer_ref is not None else None
    return headers, bearer


async def http_endpoint(
    profile: Profile, definition: ServerDefinition, network_hosts: frozenset[str]
) -> tuple[Endpoint, Redactor]:
    """The endpoint of an HTTP definition with its credentials resolved now (CLI-04, CLI-11, CW-08).

    Args:
        profile: where secrets and stored sign-ins are looked up.
        definition: an HTTP definition.
        network_hosts: the hosts the network permission covers.

    Returns:
        The endpoint (rules checked) and a redactor holding every resolved secret value.

    Raises:
        ConfigError: a reference resolves to nothing, or the stored sign-in cannot be used.
        PolicyError: the URL (or the sign-in's authorization server) needs the network permission.
    """
    spec = definition.spec
    assert isinstance(spec, HttpSpec)
    headers, bearer = configured_headers(profile, spec)
    secrets = [headers[h] for h in spec.env_headers] + ([bearer] if bearer else [])
    has_authorization = any(h.lower() == "authorization" for h in headers)
    if bearer is None and not has_authorization:
        from shadowcode.engine.mcp.sign_ins import stored_access_token

        bearer = await stored_access_token(profile, definition, network_hosts)
        if bearer:
            secrets.append(bearer)
    endpoint = Endpoint(
        spec.url,
        bearer=bearer,
        network_hosts=network_hosts,
        headers=headers,
        sends_credentials=spec.sends_credentials,
        allow_private_network=spec.allow_private_network,
    )
    endpoint.check()
    return endpoint, Redactor(secrets)
