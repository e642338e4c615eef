"""Where an HTTP definition may point and who may reach it: URL rules, loopback, the network permission.

Covers CLI-04, CLI-11.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from shadowcode.errors import ConfigError, PolicyError
from shadowcode.mcp.client import endpoint as endpoint_module
from shadowcode.mcp.client.definitions import parse_definition
from shadowcode.mcp.client.endpoint import Endpoint, check_url, is_loopback_host, resolve_loopback

pytestmark = pytest.mark.req("CLI-11")


def _parse(doc: str) -> Any:
    return parse_definition(doc.encode("utf-8"), "remote.json", fmt="json")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://user:pw@127.0.0.1:9/mcp", "user info"),
        ("http://token@127.0.0.1:9/mcp", "user info"),
        ("http://127.0.0.1:9/mcp?key=1", "query"),
        ("http://127.0.0.1:9/mcp?", "query"),
        ("http://127.0.0.1:9/mcp#part", "fragment"),
        ("ftp://127.0.0.1/mcp", "http:// or https://"),
        ("http:///mcp", "name a host"),
        ("http://127.0.0.1:9/m cp", "spaces or control"),
        ("http://127.0.0.1:99999/mcp", "not a valid URL"),
    ],
)
def test_urls_the_rules_forbid_are_refused_when_parsed(url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=f"field 'url': .*{problem}"):
        _parse(f'{{"name": "remote", "url": "{url}"}}')


@pytest.mark.req("CLI-04")
def test_a_bearer_definition_for_plain_http_off_loopback_is_refused_before_connecting() -> None:
    with pytest.raises(ConfigError, match="plain http; use https"):
        _parse('{"name": "remote", "url": "http://mcp.example.com/mcp", "api_key_env": "TOKEN"}')
    for url in ("https://mcp.example.com/mcp", "http://127.0.0.1:9/mcp", "http://localhost:9/mcp", "http://[::1]:9/"):
        assert _parse(f'{{"name": "remote", "url": "{url}", "api_key_env": "TOKEN"}}').url == url
    with pytest.raises(ConfigError, match="plain http"):
        Endpoint("http://mcp.example.com/mcp", bearer="t", network_hosts=frozenset({"mcp.example.com"})).check()


def test_loopback_is_localhost_and_literal_loopback_addresses_only() -> None:
    for host in ("localhost", "LOCALHOST", "localhost.", "127.0.0.1", "127.8.9.1", "::1"):
        assert is_loopback_host(host), host
    for host in ("example.com", "10.0.0.1", "0.0.0.0", "::", "a.localhost", "127.0.0.1.nip.io", "169.254.0.1"):
        assert not is_loopback_host(host), host
    assert check_url("http://[::1]:9/mcp", bearer=False)


@pytest.mark.anyio
async def test_a_network_host_without_the_permission_is_refused_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up: list[Any] = []

    async def record(*args: Any, **kw: Any) -> Any:
        looked_up.append(args)
        raise OSError("no lookups in this test")

    monkeypatch.setattr(anyio, "getaddrinfo", record)
    with pytest.raises(PolicyError, match="network permission"):
        Endpoint("https://mcp.example.com/mcp").check()
    with pytest.raises(PolicyError, match="mcp.network_hosts"):
        Endpoint("http://127.0.0.1.nip.io/mcp", network_hosts=frozenset({"other.example"})).check()
    Endpoint("https://MCP.example.com./mcp", network_hosts=frozenset({"mcp.example.com"})).check()
    Endpoint("http://127.0.0.1:9/mcp").check()
    assert await resolve_loopback("127.0.0.1", 9) is None
    assert looked_up == []


@pytest.mark.anyio
async def test_localhost_must_resolve_to_loopback_addresses_only(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[tuple[Any, ...]] = [(2, 1, 6, "", ("127.0.0.1", 9)), (10, 1, 6, "", ("::1", 9, 0, 0))]

    async def fake(host: str, port: int, **kw: Any) -> list[tuple[Any, ...]]:
        assert host == "localhost"
        return answers

    monkeypatch.setattr(endpoint_module.anyio, "getaddrinfo", fake)
    assert await resolve_loopback("localhost", 9) == "127.0.0.1"
    answers.append((2, 1, 6, "", ("192.0.2.7", 9)))
    with pytest.raises(PolicyError, match="outside the loopback interface"):
        await resolve_loopback("localhost", 9)


@pytest.mark.anyio
async def test_localhost_is_contacted_by_its_loopback_address_under_its_own_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(host: str, port: int, **kw: Any) -> list[tuple[Any, ...]]:
        return [(10, 1, 6, "", ("::1", port, 0, 0))]

    monkeypatch.setattr(endpoint_module.anyio, "getaddrinfo", fake)
    assert await Endpoint("http://localhost:9/mcp").target() == ("http://[::1]:9/mcp", "localhost:9", {})
    url, host, extensions = await Endpoint("https://LocalHost/mcp", bearer="t").target()
    assert (url, host, extensions) == ("https://[::1]/mcp", "LocalHost", {"sni_hostname": "localhost"})
    assert await Endpoint("http://127.0.0.1:9/mcp").target() == ("http://127.0.0.1:9/mcp", None, {})
