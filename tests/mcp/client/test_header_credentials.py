"""Header credentials by reference on HTTP definitions: the model, precedence, and what is sent.

Covers CLI-04, CLI-11, CW-08.
"""

from __future__ import annotations

import json

import anyio
import pytest

from shadowcode.errors import ConfigError
from shadowcode.mcp.client.connection import Connection, ConnectionState
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition, parse_definition
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.redaction import Redactor
from tests.support.http_peer import peer

URL = "https://mcp.example.com/mcp"


def _parse(doc: object) -> HttpSpec:
    spec = parse_definition(json.dumps(doc).encode(), "def.json", fmt="json")
    assert isinstance(spec, HttpSpec)
    return spec


@pytest.mark.req("CLI-04", "CW-08")
def test_a_literal_authorization_header_is_refused_pointing_at_the_references() -> None:
    for name in ("Authorization", "authorization", "AUTHORIZATION"):
        with pytest.raises(ConfigError, match="field 'headers': a literal 'Authorization' header") as err:
            _parse({"name": "r", "url": URL, "headers": {name: "Bearer abc"}})
        assert "bearer_token_env_var" in str(err.value) and "env_headers" in str(err.value)
        assert "abc" not in str(err.value)


@pytest.mark.req("CLI-04")
def test_header_references_and_literal_headers_are_read_and_shown_by_name_only() -> None:
    doc = {
        "name": "r",
        "url": URL,
        "bearer_token_env_var": "R_TOKEN",
        "env_headers": {"X-Api-Key": "R_KEY"},
        "headers": {"X-Team": "blue-team-literal"},
    }
    spec = _parse(doc)
    assert spec.bearer_ref == "R_TOKEN" and spec.sends_credentials
    shown = ServerDefinition("config:r", "config", None, "h", spec).describe()
    assert shown["env_headers"] == {"X-Api-Key": "R_KEY"} and shown["header_names"] == ["X-Team"]
    assert "blue-team-literal" not in json.dumps(shown)


@pytest.mark.req("CLI-04", "CLI-11")
@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"api_key_env": "A", "bearer_token_env_var": "B"}, "either 'api_key_env' or 'bearer_token_env_var'"),
        ({"env_headers": {"X-Key": "not a name"}}, "not a valid secret or variable name"),
        ({"env_headers": {"Bad Header": "K"}}, "not a valid HTTP header name"),
        ({"headers": {"Mcp-Session-Id": "x"}}, "set by the client itself"),
        ({"headers": {"Host": "x"}}, "set by the client itself"),
        ({"headers": {"X-A": "1"}, "env_headers": {"x-a": "K"}}, "in both 'headers' and 'env_headers'"),
        ({"headers": {"X-A": "line\r\nX-B: 2"}}, "control characters"),
    ],
)
def test_bad_header_settings_are_refused_naming_the_field(extra: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        _parse({"name": "r", "url": URL} | extra)


@pytest.mark.req("CLI-11", "CW-08")
@pytest.mark.parametrize(
    "extra",
    [
        {"env_headers": {"X-Key": "K"}},
        {"bearer_token_env_var": "K"},
        {"oauth": {}},
        {"oauth": {"scopes": ["read"]}},
    ],
)
def test_credentials_or_oauth_on_plain_http_off_loopback_are_refused(extra: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="over plain http; use https"):
        _parse({"name": "r", "url": "http://mcp.example.com/mcp"} | extra)
    assert _parse({"name": "r", "url": "http://127.0.0.1:9/mcp"} | extra).sends_credentials


@pytest.mark.req("CW-08")
def test_a_pre_registered_client_id_requires_its_issuer() -> None:
    with pytest.raises(ConfigError, match="'client_id' requires its exact 'issuer'"):
        _parse({"name": "r", "url": URL, "oauth": {"client_id": "abc"}})
    spec = _parse({"name": "r", "url": URL, "oauth": {"client_id": "abc", "issuer": "https://auth.example.com"}})
    assert spec.oauth is not None and spec.oauth.issuer == "https://auth.example.com"
    with pytest.raises(ConfigError, match="oauth.issuer"):
        _parse({"name": "r", "url": URL, "oauth": {"client_id": "abc", "issuer": "http://auth.example.com"}})


@pytest.mark.req("CLI-04", "CW-08")
def test_precedence_headers_first_then_the_bearer_only_without_an_authorization_header() -> None:
    plain = Endpoint(URL, bearer="tok", headers={"X-Key": "k"})
    assert plain.credential_headers() == {"x-key": "k", "authorization": "Bearer tok"}
    own = Endpoint(URL, bearer="tok", headers={"Authorization": "Token from-env"})
    assert own.credential_headers() == {"authorization": "Token from-env"}


@pytest.mark.anyio
@pytest.mark.req("CLI-04", "CW-08")
async def test_configured_headers_reach_the_reviewed_server_and_their_values_are_redacted() -> None:
    async with peer() as p:
        endpoint = Endpoint(p.url, bearer="bear-91c2", headers={"X-Api-Key": "key-77ad", "X-Team": "blue"})
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                conn = Connection(
                    server_id="test:h",
                    endpoint=endpoint,
                    timeout_seconds=5,
                    redactor=Redactor(["key-77ad", "bear-91c2"]),
                )
                await conn.start(tg)
                assert conn.state is ConnectionState.READY, conn.error
                reply = await conn.call("echo", {"text": "leak key-77ad and bear-91c2"})
                conn.close()
                await conn.wait_closed()
        assert "key-77ad" not in json.dumps(reply) and "bear-91c2" not in json.dumps(reply)
        sent = [r for r in p.received if r.rpc == "tools/call"][-1]
        assert sent.headers["x-api-key"] == "key-77ad" and sent.headers["x-team"] == "blue"
        assert sent.headers["authorization"] == "Bearer bear-91c2"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
