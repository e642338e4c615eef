"""Resolving an HTTP server's header credentials when its connection starts.

Covers CLI-04, CW-08.
"""

from __future__ import annotations

import pytest

from shadowcode.engine.mcp.credentials import http_endpoint
from shadowcode.errors import ConfigError
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition
from shadowcode.profile import Profile
from shadowcode.secrets import SecretStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _definition(**fields: object) -> ServerDefinition:
    spec = HttpSpec.model_validate({"name": "r", "url": "http://127.0.0.1:9/mcp"} | fields)
    return ServerDefinition("config:r", "config", None, "h", spec)


@pytest.mark.req("CLI-04")
async def test_an_unset_env_headers_name_stops_the_connection_naming_the_name_only(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HDR_UNSET_NAME", raising=False)
    monkeypatch.setenv("HDR_SET_NAME", "value-3f9e1a")
    definition = _definition(env_headers={"X-Set": "HDR_SET_NAME", "X-Key": "HDR_UNSET_NAME"})
    with pytest.raises(ConfigError, match="env_headers: X-Key refers to HDR_UNSET_NAME, which is neither set") as err:
        await http_endpoint(profile, definition, frozenset())
    assert "value-3f9e1a" not in str(err.value)


@pytest.mark.req("CLI-04", "CW-08")
async def test_references_resolve_from_the_secret_store_and_the_environment_into_one_redactor(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HDR_STORED", raising=False)
    SecretStore(profile).set("HDR_STORED", "stored-5c1d77")
    monkeypatch.setenv("HDR_BEARER", "bearer-0a9b12")
    definition = _definition(
        env_headers={"X-Key": "HDR_STORED"}, bearer_token_env_var="HDR_BEARER", headers={"X-Team": "blue"}
    )
    endpoint, redactor = await http_endpoint(profile, definition, frozenset())
    assert endpoint.credential_headers() == {
        "x-team": "blue",
        "x-key": "stored-5c1d77",
        "authorization": "Bearer bearer-0a9b12",
    }
    assert redactor.text("stored-5c1d77 bearer-0a9b12 blue") == "[redacted] [redacted] blue"
    assert "stored-5c1d77" not in repr(endpoint)


@pytest.mark.req("CW-08")
async def test_an_authorization_env_header_wins_over_the_bearer_reference(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HDR_AUTH", "Token abc-91")
    monkeypatch.setenv("HDR_BEARER", "bearer-0a9b12")
    definition = _definition(env_headers={"Authorization": "HDR_AUTH"}, bearer_token_env_var="HDR_BEARER")
    endpoint, _ = await http_endpoint(profile, definition, frozenset())
    assert endpoint.credential_headers() == {"authorization": "Token abc-91"}
