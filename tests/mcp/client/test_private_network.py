"""Private-network authority: names resolving to addresses that are not public need the opt-in.

Covers CW-11.

Every name lookup goes to a resolver the test controls (``anyio.getaddrinfo`` replaced in
:mod:`shadowcode.mcp.client.endpoint`); the only address ever contacted is a loopback one
(127.0.0.2, where a peer listens).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import pytest

import shadowcode.mcp.client.endpoint as endpoint_module
from shadowcode.errors import ConfigError, PolicyError, UpstreamServerError
from shadowcode.mcp.client.connection import Connection, ConnectionState
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition, parse_definition
from shadowcode.mcp.client.endpoint import Endpoint, is_public_address, resolve_pinned
from shadowcode.mcp.client.oauth_http import SignInError, bounded_client
from tests.support.http_peer import peer
from tests.support.loopback_guard import loopback_only

pytestmark = [pytest.mark.req("CW-11")]

PRIVATE = ["10.0.0.1", "127.0.0.2", "169.254.169.254"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nothing but loopback is ever contacted, even when the rule under test is broken."""
    refused = loopback_only(monkeypatch)
    yield
    assert refused == [], f"a connection to {refused} was attempted"


class Resolver:
    """Answers every look-up of a name from ``answers`` (one list per call, the last one repeated)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        monkeypatch.setattr(endpoint_module.anyio, "getaddrinfo", self.getaddrinfo)

    async def getaddrinfo(self, host: Any, port: Any, **kw: Any) -> list[Any]:
        self.asked.append(str(host))
        addresses = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        out = []
        for a in addresses:
            family = socket.AF_INET6 if ":" in a else socket.AF_INET
            sockaddr = (a, port, 0, 0) if family == socket.AF_INET6 else (a, port)
            out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return out


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("10.0.0.1", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("127.0.0.2", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00::1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_only_globally_routable_unicast_addresses_are_public(address: str, public: bool) -> None:
    assert is_public_address(address) is public


@pytest.mark.anyio
@pytest.mark.parametrize("address", PRIVATE)
async def test_a_name_resolving_to_a_private_address_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    Resolver(monkeypatch, [address])
    with pytest.raises(PolicyError, match=f"resolves to {address}, which is not a public address"):
        await resolve_pinned("intranet.example", 443, allow_private=False)
    assert await resolve_pinned("intranet.example", 443, allow_private=True) == address


@pytest.mark.anyio
async def test_every_answer_is_checked_and_the_connection_is_pinned_to_a_checked_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Resolver(monkeypatch, ["8.8.8.8", "10.0.0.1"])
    with pytest.raises(PolicyError, match="10.0.0.1"):
        await resolve_pinned("mixed.example", 443, allow_private=False)
    Resolver(monkeypatch, ["2606:4700::1111", "8.8.4.4"])
    assert await resolve_pinned("public.example", 443, allow_private=False) == "8.8.4.4"
    endpoint = Endpoint("https://public.example:8443/mcp", network_hosts=frozenset({"public.example"}))
    assert await endpoint.target() == (
        "https://8.8.4.4:8443/mcp",
        "public.example:8443",
        {"sni_hostname": "public.example"},
    )


@pytest.mark.anyio
async def test_an_address_literal_is_contacted_as_written_without_a_look_up(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = Resolver(monkeypatch, ["8.8.8.8"])
    assert await resolve_pinned("10.0.0.1", 80, allow_private=False) is None
    literal = Endpoint("http://10.0.0.1:8080/mcp", network_hosts=frozenset({"10.0.0.1"}))
    assert await literal.target() == ("http://10.0.0.1:8080/mcp", None, {})
    assert resolver.asked == []


def test_allow_private_network_is_a_definition_field_and_is_shown() -> None:
    doc = b'{"name": "internal", "url": "https://mcp.internal.example/mcp", "allow_private_network": true}'
    spec = parse_definition(doc, "internal.json", fmt="json")
    assert isinstance(spec, HttpSpec) and spec.allow_private_network is True
    described = ServerDefinition(id="config:internal", scope="config", path=None, sha256="0" * 64, spec=spec).describe()
    assert described["allow_private_network"] is True
    with pytest.raises(ConfigError, match="allow_private_network"):
        parse_definition(
            b'{"name": "x", "url": "https://a.example/mcp", "allow_private_network": "yes"}', "x.json", fmt="json"
        )


@asynccontextmanager
async def _connected(url: str, *, allow: bool, host: str) -> AsyncIterator[Connection]:
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            endpoint = Endpoint(url, network_hosts=frozenset({host}), allow_private_network=allow)
            conn = Connection(server_id="test:private", endpoint=endpoint, timeout_seconds=5)
            with suppress(UpstreamServerError):
                await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()


@pytest.mark.anyio
async def test_a_connection_to_a_private_name_reaches_nothing_without_the_opt_in_and_is_pinned_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with peer(host="127.0.0.2") as p:
        url = f"http://intranet.example:{p.port}/mcp"
        # The second look-up would move the name elsewhere (DNS rebinding); the connection never asks again.
        resolver = Resolver(monkeypatch, ["10.0.0.1"])
        async with _connected(url, allow=False, host="intranet.example") as conn:
            assert conn.state is ConnectionState.FAILED
            assert conn.error is not None and "resolves to 10.0.0.1, which is not a public address" in conn.error
        assert p.received == []
        resolver = Resolver(monkeypatch, ["127.0.0.2"], ["10.0.0.1"])
        async with _connected(url, allow=True, host="intranet.example") as conn:
            assert conn.state is ConnectionState.READY, conn.error
        assert resolver.asked == ["intranet.example"], "looked up once per connection"
        assert p.received and all(r.headers["host"] == f"intranet.example:{p.port}" for r in p.received)


@pytest.mark.anyio
@pytest.mark.parametrize("address", PRIVATE)
async def test_a_sign_in_request_to_a_name_resolving_to_a_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    Resolver(monkeypatch, [address])
    async with bounded_client(frozenset({"auth.example"})) as client:
        with pytest.raises(SignInError, match=f"resolves to {address}"):
            await client.get("https://auth.example/.well-known/oauth-authorization-server")
