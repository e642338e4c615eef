"""Stored sign-ins in the profile's secret store, and their use when a connection starts.

Covers CW-08.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest

from shadowcode.engine.mcp.credentials import http_endpoint
from shadowcode.engine.mcp.sign_ins import ProfileSignIns, login_lock, sign_in_problem, stored_access_token
from shadowcode.errors import ConfigError, UsageError
from shadowcode.limits import MCP_OAUTH_RECORD_MAX_BYTES
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition
from shadowcode.mcp.client.oauth import OAuthSettings, SignIn, login
from shadowcode.profile import Profile
from shadowcode.secrets import SecretStore
from tests.support.oauth import OAuthFixture, oauth_fixture, play_browser

pytestmark = [pytest.mark.anyio, pytest.mark.req("CW-08")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_fixture() as running:
        yield running


def _definition(url: str, **fields: object) -> ServerDefinition:
    spec = HttpSpec.model_validate({"name": "secure", "url": url, "oauth": {}} | fields)
    return ServerDefinition("config:secure", "config", None, "h", spec)


async def _signed_in(profile: Profile, fixture: OAuthFixture) -> SignIn:
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(60):
            record = await login(
                fixture.url,
                "config:secure",
                OAuthSettings(),
                frozenset(),
                announce=lambda url, callback: tg.start_soon(play_browser, url),
            )
    ProfileSignIns(profile, "config:secure", fixture.url).save(record)
    return record


async def test_a_stored_sign_in_is_sent_as_the_bearer_when_no_authorization_is_configured(
    profile: Profile, fixture: OAuthFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture.control(bad=None, issuer_path="/as1", expires_in=3600)
    definition = _definition(fixture.url)
    assert sign_in_problem(profile, definition) == "authorization_required: run `shadowcode mcp login config:secure`"
    record = await _signed_in(profile, fixture)
    assert sign_in_problem(profile, definition) is None
    endpoint, redactor = await http_endpoint(profile, definition, frozenset())
    access = str(record.token["access_token"])
    assert endpoint.credential_headers() == {"authorization": f"Bearer {access}"}
    assert redactor.text(access) == "[redacted]"
    monkeypatch.setenv("SECURE_TOKEN", "own-token")
    own = _definition(fixture.url, bearer_token_env_var="SECURE_TOKEN")
    endpoint, _ = await http_endpoint(profile, own, frozenset())
    assert endpoint.credential_headers() == {"authorization": "Bearer own-token"}
    other = ServerDefinition("config:secure", "config", None, "h", _definition(fixture.url + "/other").spec)
    assert await stored_access_token(profile, other, frozenset()) is None


async def test_a_failed_refresh_keeps_the_record_and_asks_for_a_new_login(
    profile: Profile, fixture: OAuthFixture
) -> None:
    fixture.control(bad=None, issuer_path="/as1", expires_in=1)
    record = await _signed_in(profile, fixture)
    fixture.control(bad="refresh-fails", expires_in=3600)
    try:
        with pytest.raises(ConfigError, match=r"could not be refreshed \(HTTP 400\).*run `shadowcode mcp login"):
            await stored_access_token(profile, _definition(fixture.url), frozenset())
    finally:
        fixture.control(bad=None)
    assert ProfileSignIns(profile, "config:secure", fixture.url).load() == record


def test_two_logins_of_one_server_cannot_run_at_once(profile: Profile) -> None:
    with login_lock(profile, "config:secure"):
        with pytest.raises(UsageError, match="another `shadowcode mcp login` for config:secure is in progress"):
            with login_lock(profile, "config:secure"):
                pass
        with login_lock(profile, "config:other"):
            pass
    with login_lock(profile, "config:secure"):
        pass


def test_a_record_of_the_size_limit_is_stored_and_one_byte_more_is_refused(profile: Profile) -> None:
    store = SecretStore(profile)
    store.set_record("k", "x" * MCP_OAUTH_RECORD_MAX_BYTES)
    with pytest.raises(UsageError, match=f"the limit is {MCP_OAUTH_RECORD_MAX_BYTES} bytes"):
        store.set_record("k", "x" * (MCP_OAUTH_RECORD_MAX_BYTES + 1))
    assert store.names() == []
    assert json.loads(profile.secrets_path.read_text(encoding="utf-8")).keys() == {"mcp-oauth:k"}
