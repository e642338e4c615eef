"""Signing in with OAuth against a loopback authorization server, and using the sign-in later.

Covers CW-08.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from pydantic import SecretStr

from shadowcode.mcp.client.oauth import OAuthSettings, SignIn, SignInError, access_token, check_browser_url, login
from tests.support.oauth import OAuthFixture, oauth_fixture, play_browser

pytestmark = [pytest.mark.anyio, pytest.mark.req("CW-08")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_fixture() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(fixture: OAuthFixture) -> None:
    fixture.control(bad=None, issuer_path="/as1", expires_in=3600, confidential=None)


class Memory:
    """A SignInStore in memory."""

    def __init__(self) -> None:
        self.record: SignIn | None = None

    def load(self) -> SignIn | None:
        return self.record

    def save(self, record: SignIn) -> None:
        self.record = record


async def _login(fixture: OAuthFixture, settings: OAuthSettings | None = None, *, seconds: float = 30) -> SignIn:
    """Log in, the test playing the browser when the URL is announced."""
    shown: list[str] = []
    failed: list[SignInError] = []
    async with anyio.create_task_group() as tg:

        def announce(url: str, callback: str) -> None:
            shown.append(url)
            tg.start_soon(play_browser, url)

        with anyio.fail_after(60):
            try:
                record = await login(
                    fixture.url,
                    "config:secure",
                    settings or OAuthSettings(),
                    frozenset(),
                    announce=announce,
                    seconds=seconds,
                )
            except SignInError as exc:
                failed.append(exc)
    if failed:
        raise failed[0]
    assert shown and shown[0].startswith(fixture.origin + "/as1/authorize?")
    return record


async def test_login_discovers_registers_and_binds_the_record_to_issuer_and_resource(fixture: OAuthFixture) -> None:
    record = await _login(fixture)
    assert record.issuer == fixture.origin + "/as1"
    assert record.resource == fixture.url
    assert str(record.token["access_token"]).startswith("at-")
    assert record.client["client_id"]
    store = Memory()
    with anyio.fail_after(30):
        token = await access_token(record, store, OAuthSettings(), frozenset())
    assert token == record.token["access_token"] and store.record is None


async def test_an_expired_token_is_refreshed_once_and_stored(fixture: OAuthFixture) -> None:
    fixture.control(expires_in=1)
    record = await _login(fixture)
    before = fixture.control()["refreshes"]
    store = Memory()
    with anyio.fail_after(30):
        token = await access_token(record, store, OAuthSettings(), frozenset())
    assert token != record.token["access_token"]
    assert store.record is not None and store.record.token["access_token"] == token
    assert fixture.control()["refreshes"] == before + 1


async def test_a_failed_refresh_keeps_the_record_says_to_log_in_and_is_not_retried(fixture: OAuthFixture) -> None:
    fixture.control(expires_in=1)
    record = await _login(fixture)
    fixture.control(bad="refresh-fails")
    before = fixture.control()["refreshes"]
    store = Memory()
    with anyio.fail_after(30), pytest.raises(SignInError, match=r"could not be refreshed \(HTTP 400\).*mcp login"):
        await access_token(record, store, OAuthSettings(), frozenset())
    assert store.record is None
    assert fixture.control()["refreshes"] == before + 1


async def test_a_sign_in_whose_issuer_changed_is_not_used(fixture: OAuthFixture) -> None:
    record = await _login(fixture)
    fixture.control(issuer_path="/as2")
    with (
        anyio.fail_after(30),
        pytest.raises(SignInError, match=r"now names .*/as2.*not used: run `shadowcode mcp login"),
    ):
        await access_token(record, Memory(), OAuthSettings(), frozenset())


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("wrong-state", "state did not match this sign-in"),
        ("deny", "the sign-in was denied"),
        ("no-access-token", "no usable access_token"),
        ("evil-redirect", "registered a callback outside the loopback interface"),
        ("wrong-issuer", "different issuer"),
        ("big-metadata", "larger than 1048576 bytes"),
    ],
)
async def test_bad_authorization_servers_end_the_login_with_a_clear_message(
    fixture: OAuthFixture, bad: str, message: str
) -> None:
    fixture.control(bad=bad)
    with pytest.raises(SignInError, match=message) as err:
        await _login(fixture)
    assert "forged-state" not in str(err.value)


async def test_a_slow_metadata_server_is_bounded(fixture: OAuthFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from shadowcode.mcp.client import oauth_http

    defaults = oauth_http.BoundedTransport.__init__.__kwdefaults__
    assert defaults is not None
    monkeypatch.setitem(defaults, "seconds", 1.0)
    fixture.control(bad="slow-metadata")
    with anyio.fail_after(20), pytest.raises(SignInError, match="did not answer within 1.0 s"):
        await _login(fixture)


async def test_no_redirect_before_the_deadline_stores_nothing(fixture: OAuthFixture) -> None:
    with anyio.fail_after(30), pytest.raises(SignInError, match="time ran out"):
        await login(fixture.url, "config:secure", OAuthSettings(), frozenset(), announce=lambda u, c: None, seconds=0.5)


async def test_a_pre_registered_client_requires_the_discovered_issuer(fixture: OAuthFixture) -> None:
    settings = OAuthSettings(client_id="pre-1", issuer="https://auth.example.com")
    with anyio.fail_after(30), pytest.raises(SignInError, match="not the configured issuer"):
        await _login(fixture, settings)
    before = fixture.control()["registrations"]
    record = await _login(fixture, OAuthSettings(client_id="pre-1", issuer=fixture.origin + "/as1"))
    assert record.client["client_id"] == "pre-1" and fixture.control()["registrations"] == before


async def test_an_oauth_resource_pin_must_match_discovery(fixture: OAuthFixture) -> None:
    with anyio.fail_after(30), pytest.raises(SignInError, match="pinned oauth_resource"):
        await _login(fixture, OAuthSettings(resource="https://other.example.com/mcp"))
    assert (await _login(fixture, OAuthSettings(resource=fixture.url))).resource == fixture.url


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "http://auth.example.com/authorize", "ftp://x/y"]
)
def test_authorization_urls_other_than_https_or_loopback_http_are_refused(url: str) -> None:
    with pytest.raises(SignInError, match="refused the authorization URL"):
        check_browser_url(url)
    assert check_browser_url("https://auth.example.com/a?b=1") and check_browser_url("http://127.0.0.1:5/a")


async def test_the_scopes_asked_for_are_sent_and_recorded(fixture: OAuthFixture) -> None:
    shown: list[str] = []
    async with anyio.create_task_group() as tg:

        def announce(url: str, callback: str) -> None:
            shown.append(url)
            tg.start_soon(play_browser, url)

        with anyio.fail_after(60):
            settings = OAuthSettings(scopes=("read", "write"))
            record = await login(fixture.url, "config:secure", settings, frozenset(), announce=announce)
    assert "scope=read+write" in shown[0]
    assert record.token["scope"] == "read write"


async def test_a_server_that_guards_everything_but_initialize_still_gets_a_sign_in(fixture: OAuthFixture) -> None:
    fixture.control(bad="open-initialize")
    record = await _login(fixture)
    assert str(record.token["access_token"]).startswith("at-")
    assert record.resource == fixture.url


_CONFIDENTIAL = {"client_id": "pre-registered-client", "client_secret": "s3cret:with/odd chars"}


def _confidential(fixture: OAuthFixture, secret: str) -> OAuthSettings:
    fixture.control(confidential=_CONFIDENTIAL)
    return OAuthSettings(
        client_id=_CONFIDENTIAL["client_id"], issuer=fixture.origin + "/as1", client_secret=SecretStr(secret)
    )


async def test_a_confidential_pre_registered_client_signs_in_with_basic_and_its_secret_is_not_stored(
    fixture: OAuthFixture,
) -> None:
    fixture.control(expires_in=1)
    settings = _confidential(fixture, _CONFIDENTIAL["client_secret"])
    assert _CONFIDENTIAL["client_secret"] not in repr(settings) + settings.model_dump_json()
    before = fixture.control()["registrations"]
    record = await _login(fixture, settings)
    assert fixture.control()["registrations"] == before
    assert record.client["client_id"] == _CONFIDENTIAL["client_id"]
    assert record.client["token_endpoint_auth_method"] == "client_secret_basic"
    assert _CONFIDENTIAL["client_secret"] not in json.dumps(record.model_dump(mode="json"))
    # The refresh resolves the secret again (the settings), and fails without it.
    with anyio.fail_after(30), pytest.raises(SignInError, match="client_secret_env.*mcp login"):
        await access_token(record, Memory(), settings.model_copy(update={"client_secret": None}), frozenset())
    store = Memory()
    with anyio.fail_after(30):
        token = await access_token(record, store, settings, frozenset())
    assert token != record.token["access_token"] and store.record is not None
    assert _CONFIDENTIAL["client_secret"] not in store.record.model_dump_json()


async def test_a_wrong_client_secret_fails_the_login_with_a_clear_message(fixture: OAuthFixture) -> None:
    with pytest.raises(SignInError, match=r"HTTP 401.*refused the client's credentials.*client_secret_env") as failed:
        await _login(fixture, _confidential(fixture, "wrong"))
    assert "wrong" not in failed.value.message


# -- hostile authorization servers (issue 33) -----------------------------------------------------


@pytest.mark.parametrize("bad", ["bomb-metadata", "bomb-registration", "bomb-token"])
async def test_a_compressed_sign_in_reply_is_refused_before_it_is_inflated(fixture: OAuthFixture, bad: str) -> None:
    fixture.control(bad=bad, bomb_mib=1024)
    with anyio.fail_after(60), pytest.raises(SignInError, match="sent a compressed reply during sign-in"):
        await _login(fixture)


async def test_a_compressed_refresh_reply_is_refused_and_the_record_kept(fixture: OAuthFixture) -> None:
    fixture.control(expires_in=1)
    record = await _login(fixture)
    fixture.control(bad="bomb-refresh", bomb_mib=1024)
    store = Memory()
    with anyio.fail_after(60), pytest.raises(SignInError, match="compressed reply during sign-in"):
        await access_token(record, store, OAuthSettings(), frozenset())
    assert store.record is None


async def test_without_metadata_nothing_is_sent_to_a_guessed_endpoint(fixture: OAuthFixture) -> None:
    fixture.control(bad="no-metadata", requests=[])
    before = fixture.control()["registrations"]
    with anyio.fail_after(60), pytest.raises(SignInError, match="guessed endpoints .* are not used"):
        await _login(fixture)
    seen = fixture.control()
    assert seen["registrations"] == before
    posts = [r for r in seen["requests"] if not r.startswith("GET ")]
    assert posts == ["POST /mcp"], posts
