"""The definition model and the parser of a definition's bytes: validation, fields, limits.

Covers CLI-03, CLI-13.
"""

from __future__ import annotations

import json

import pytest

from shadowcode.errors import ConfigError
from shadowcode.limits import MCP_DEFINITION_MAX_BYTES, MCP_TIMEOUT_MAX_SECONDS, MCP_TIMEOUT_MIN_SECONDS
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
