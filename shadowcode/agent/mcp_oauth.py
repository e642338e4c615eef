"""Stored OAuth sign-ins of HTTP servers, used at connection start (CW-08).

Placeholder until sign-in lands: no sign-in is ever stored, so none is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowcode.mcp.client.definitions import ServerDefinition
    from shadowcode.profile import Profile

__all__ = ["sign_in_problem", "stored_access_token"]


async def stored_access_token(
    profile: Profile, definition: ServerDefinition, network_hosts: frozenset[str]
) -> str | None:
    """The access token of the server's stored sign-in, or None when there is none (CW-08)."""
    del profile, definition, network_hosts
    return None


def sign_in_problem(profile: Profile, definition: ServerDefinition) -> str | None:
    """``authorization_required: ...`` when a server with ``oauth`` settings has no stored sign-in (CW-08)."""
    del profile
    spec = definition.spec
    if getattr(spec, "oauth", None) is None:
        return None
    return f"authorization_required: run `shadowcode mcp login {definition.id}`"
