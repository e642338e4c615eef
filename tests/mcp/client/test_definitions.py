"""The definition model and the parser of a definition's bytes: validation, fields, limits.

Covers CLI-03, CLI-13, CW-02, CW-07.
"""

from __future__ import annotations

import json

import pytest

from shadowcode.errors import ConfigError
from shadowcode.limits import (
    MCP_CALL_TIMEOUT_MAX_SECONDS,
    MCP_CONNECT_TIMEOUT_MAX_SECONDS,
    MCP_DEFINITION_MAX_BYTES,
    MCP_READ_TIMEOUT_MAX_SECONDS,
    MCP_TIMEOUT_MAX_SECONDS,
    MCP_TIMEOUT_MIN_SECONDS,
    MCP_TOOL_FILTER_NAMES_MAX,
    MCP_TOOL_NAME_MAX_CHARS,
)
from shadowcode.mcp.client.definitions import parse_definition

pytestmark = pytest.mark.req("CLI-03", "CLI-13")

STDIO = {"name": "tools", "command": ["server", "--stdio"]}


def _parse(doc: object) -> object:
    return parse_definition(json.dumps(doc).encode(), "def.json", fmt="json")


@pytest.mark.req("CLI-03")
def test_a_shell_string_instead_of_an_argv_array_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"def.json: field 'command': must be an array of literal arguments"):
        _parse({"name": "tools", "command": "server --stdio | tee log"})


@pytest.mark.req("CLI-03")
def test_env_or_env_refs_on_an_http_definition_are_refused() -> None:
    for field in ("env", "env_refs"):
        with pytest.raises(ConfigError, match=f"field '{field}' applies to stdio servers only"):
            _parse({"name": "remote", "url": "https://example.com/mcp", field: {"A": "B"}})


@pytest.mark.req("CLI-03")
def test_unknown_fields_and_ambiguous_or_missing_transports_are_refused() -> None:
    with pytest.raises(ConfigError, match="field 'enabled': unknown field"):
        _parse(STDIO | {"enabled": True})
    with pytest.raises(ConfigError, match="'command' and 'url' both present"):
        _parse(STDIO | {"url": "https://example.com/mcp"})
    with pytest.raises(ConfigError, match="'command' \\(stdio\\) or 'url'"):
        _parse({"name": "tools"})
    with pytest.raises(ConfigError, match="field 'name'"):
        _parse(STDIO | {"name": "two__underscores"})


@pytest.mark.req("CLI-13")
def test_timeouts_are_accepted_from_0_1_to_120_seconds_and_refused_outside() -> None:
    for ok in (MCP_TIMEOUT_MIN_SECONDS, MCP_TIMEOUT_MAX_SECONDS):
        assert _parse(STDIO | {"timeout_sec": ok}).timeout_sec == ok  # type: ignore[attr-defined]
    for bad in (0.09, 120.1):
        with pytest.raises(ConfigError, match="timeout_sec"):
            _parse(STDIO | {"timeout_sec": bad})


@pytest.mark.req("CLI-03")
def test_a_definition_of_the_size_limit_is_read_and_one_byte_more_is_refused() -> None:
    base = json.dumps(STDIO | {"description": ""}).encode()
    at = json.dumps(STDIO | {"description": "x" * (MCP_DEFINITION_MAX_BYTES - len(base))}).encode()
    assert len(at) == MCP_DEFINITION_MAX_BYTES
    parse_definition(at, "def.json", fmt="json")
    with pytest.raises(ConfigError, match="the limit is"):
        parse_definition(at + b" ", "def.json", fmt="json")


# --- tool filters, timeouts, required (CW-02, CW-07) ---------------------------------------------


@pytest.mark.req("CW-02", "CW-07")
def test_filters_timeouts_and_required_are_read_on_both_transports() -> None:
    extra = {
        "enabled_tools": ["echo", "add"],
        "disabled_tools": ["add"],
        "connect_timeout": 45,
        "call_timeout": 900,
        "read_timeout": 5.5,
        "required": True,
    }
    for base in (STDIO, {"name": "remote", "url": "https://example.com/mcp"}):
        spec = _parse(base | extra)
        assert spec.enabled_tools == ("echo", "add")  # type: ignore[attr-defined]
        assert spec.disabled_tools == ("add",)  # type: ignore[attr-defined]
        assert (spec.connect_timeout, spec.call_timeout, spec.read_timeout) == (45.0, 900.0, 5.5)  # type: ignore[attr-defined]
        assert spec.required is True  # type: ignore[attr-defined]
        assert spec.allows("echo") and not spec.allows("add") and not spec.allows("other")  # type: ignore[attr-defined]
    plain = _parse(STDIO)
    assert plain.enabled_tools is None and plain.disabled_tools == () and plain.required is False  # type: ignore[attr-defined]
    assert plain.allows("anything")  # type: ignore[attr-defined]


@pytest.mark.req("CW-07")
def test_call_timeout_1801_and_read_timeout_0_are_refused_with_the_allowed_range() -> None:
    assert _parse(STDIO | {"call_timeout": MCP_CALL_TIMEOUT_MAX_SECONDS}).call_timeout == 1800.0  # type: ignore[attr-defined]
    with pytest.raises(
        ConfigError, match=r"field 'call_timeout': must be a number of seconds from 0.1 to 1800 \(got 1801\)"
    ):
        _parse(STDIO | {"call_timeout": 1801})
    assert _parse(STDIO | {"read_timeout": MCP_TIMEOUT_MIN_SECONDS}).read_timeout == 0.1  # type: ignore[attr-defined]
    assert _parse(STDIO | {"read_timeout": MCP_READ_TIMEOUT_MAX_SECONDS}).read_timeout == 120.0  # type: ignore[attr-defined]
    with pytest.raises(
        ConfigError, match=r"field 'read_timeout': must be a number of seconds from 0.1 to 120 \(got 0\)"
    ):
        _parse(STDIO | {"read_timeout": 0})
    with pytest.raises(ConfigError, match=r"field 'read_timeout': .* from 0.1 to 120"):
        _parse(STDIO | {"read_timeout": 120.01})
    assert _parse(STDIO | {"connect_timeout": MCP_CONNECT_TIMEOUT_MAX_SECONDS}).connect_timeout == 600.0  # type: ignore[attr-defined]
    for bad in (600.5, 0.05, "30", True):
        with pytest.raises(ConfigError, match=r"field 'connect_timeout': must be a number of seconds from 0.1 to 600"):
            _parse(STDIO | {"connect_timeout": bad})


@pytest.mark.req("CW-02")
def test_bad_tool_filters_and_required_values_are_refused_naming_the_field() -> None:
    cases = {
        "enabled_tools": ["echo", "echo"],
        "disabled_tools": "echo",
    }
    for field, value in cases.items():
        with pytest.raises(ConfigError, match=f"field '{field}'"):
            _parse(STDIO | {field: value})
    with pytest.raises(ConfigError, match="field 'enabled_tools': every tool name"):
        _parse(STDIO | {"enabled_tools": [""]})
    with pytest.raises(ConfigError, match="field 'disabled_tools': every tool name"):
        _parse(STDIO | {"disabled_tools": ["x" * (MCP_TOOL_NAME_MAX_CHARS + 1)]})
    _parse(STDIO | {"enabled_tools": [f"t{i}" for i in range(MCP_TOOL_FILTER_NAMES_MAX)]})
    with pytest.raises(ConfigError, match=f"the limit is {MCP_TOOL_FILTER_NAMES_MAX}"):
        _parse(STDIO | {"enabled_tools": [f"t{i}" for i in range(MCP_TOOL_FILTER_NAMES_MAX + 1)]})
    with pytest.raises(ConfigError, match="field 'required'"):
        _parse(STDIO | {"required": "yes"})


@pytest.mark.req("CW-02", "CW-07")
def test_the_new_fields_are_in_the_hash_and_the_catalog_view() -> None:
    from shadowcode.mcp.client.definitions import ServerDefinition, sha256_hex

    plain = json.dumps(STDIO).encode()
    filtered = json.dumps(STDIO | {"disabled_tools": ["rm"]}).encode()
    assert sha256_hex(plain) != sha256_hex(filtered)
    spec = parse_definition(filtered, "def.json", fmt="json")
    doc = ServerDefinition("config:tools", "config", None, sha256_hex(filtered), spec).describe()
    assert doc["disabled_tools"] == ["rm"] and doc["enabled_tools"] is None
    assert doc["required"] is False and doc["call_timeout"] is None


@pytest.mark.req("CW-08")
def test_client_secret_env_needs_a_client_id_and_only_its_name_is_in_the_catalog_view() -> None:
    url = "https://example.com/mcp"
    with pytest.raises(ConfigError, match="'client_secret_env' requires the pre-registered 'client_id'"):
        _parse({"name": "s", "url": url, "oauth": {"client_secret_env": "S"}})
    with pytest.raises(ConfigError, match="not a valid secret or variable name"):
        _parse(
            {
                "name": "s",
                "url": url,
                "oauth": {"client_id": "c", "issuer": "https://as.example", "client_secret_env": "a b"},
            }
        )
    oauth = {"client_id": "c", "issuer": "https://as.example", "client_secret_env": "MY_SECRET"}
    spec = _parse({"name": "s", "url": url, "oauth": oauth})
    assert spec.oauth.client_secret_env == "MY_SECRET"  # type: ignore[attr-defined]
