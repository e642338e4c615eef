"""Plugin manifests (mcp/client/plugins.py): the strict rules, each refusal named, and the identity format.

Covers CW-12.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shadowcode.errors import ConfigError
from shadowcode.limits import MCP_DEFINITION_MAX_BYTES, PLUGIN_NAME_MAX_BYTES, PLUGIN_SERVERS_MAX
from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec
from shadowcode.mcp.client.plugins import parse_manifest, plugin_identity

pytestmark = pytest.mark.req("CW-12")

ROOT = Path("/bundles/notes")
STDIO: dict[str, Any] = {"command": ["python3", "${PLUGIN_ROOT}/server.py"], "env": {"TOKEN": "${NOTES_TOKEN}"}}
REMOTE: dict[str, Any] = {
    "url": "https://api.example.com/mcp",
    "network_hosts": ["api.example.com"],
    "bearer_token_env_var": "NOTES_KEY",
    "env_headers": {"X-Team": "NOTES_TEAM"},
}


def _parse(servers: dict[str, Any], **top: Any) -> Any:
    doc = {"name": "notes", "mcp_servers": servers} | top
    return parse_manifest(json.dumps(doc).encode(), ROOT)


def test_identity_is_the_byte_length_then_plugin_then_server() -> None:
    assert plugin_identity("notes", "search") == "plugin-5-notes-search"
    # The length prefix keeps plugin "a-b" with server "c" apart from plugin "a" with server "b-c".
    assert plugin_identity("a-b", "c") != plugin_identity("a", "b-c")
    assert plugin_identity("a-b", "c") == "plugin-3-a-b-c"


def test_a_valid_manifest_gives_definitions_under_identities() -> None:
    manifest = _parse({"search": STDIO, "remote": REMOTE}, version="1.2.0")
    stdio, remote = manifest.servers
    assert isinstance(stdio.spec, StdioSpec) and isinstance(remote.spec, HttpSpec)
    assert stdio.spec.name == "plugin-5-notes-search"
    assert stdio.spec.command == ("python3", "/bundles/notes/server.py")
    assert stdio.spec.env_refs == {"TOKEN": "NOTES_TOKEN"} and stdio.spec.env == {}
    assert stdio.env_sources == {"TOKEN": "NOTES_TOKEN"}
    assert remote.network_hosts == ("api.example.com",)
    definitions = manifest.definitions("d" * 64)
    assert [d.id for d in definitions] == ["plugin:plugin-5-notes-search", "plugin:plugin-5-notes-remote"]
    assert {d.scope for d in definitions} == {"plugin"} and {d.plugin for d in definitions} == {"notes"}
    assert definitions[0].describe()["plugin"] == "notes"


@pytest.mark.parametrize(
    ("servers", "top", "message"),
    [
        ({"s": STDIO | {"cwd": "/"}}, {}, "field 'cwd': unknown field"),
        ({"s": STDIO}, {"homepage": "x"}, "field 'homepage': unknown field"),
        ({"s": STDIO | {"lazy": True}}, {}, "field 'lazy': unknown field"),
        ({"s": REMOTE | {"allow_private_network": True}}, {}, "field 'allow_private_network': unknown field"),
        ({"s": STDIO | {"env_refs": {"A": "B"}}}, {}, "field 'env_refs': unknown field"),
        ({"s": STDIO | {"url": "https://api.example.com/mcp"}}, {}, "ambiguous transport"),
        ({"s": {"description": "neither"}}, {}, "ambiguous transport"),
        ({"s": STDIO | {"env": {"TOKEN": "literal"}}}, {}, "exact references like '${NAME}'"),
        ({"s": STDIO | {"env": {"TOKEN": "x${NAME}"}}}, {}, "exact references"),
        ({"s": STDIO | {"env": {"TOKEN": "$NAME"}}}, {}, "exact references"),
        ({"s": REMOTE | {"headers": {"X-Plain": "v"}}}, {}, "literal headers are refused"),
        ({"s": REMOTE | {"url": "https://u:p@api.example.com/mcp"}}, {}, "may not carry user info"),
        ({"s": REMOTE | {"url": "https://api.example.com/mcp?key=s3cret"}}, {}, "may not carry user info, a query"),
        ({"s": REMOTE | {"url": "https://api.example.com/mcp#k"}}, {}, "a fragment"),
        ({"s": REMOTE | {"network_hosts": ["example.com"]}}, {}, "must be exactly ['api.example.com']"),
        ({"s": REMOTE | {"network_hosts": ["api.example.com", "x.example.com"]}}, {}, "must be exactly"),
        ({"s": {k: v for k, v in REMOTE.items() if k != "network_hosts"}}, {}, "'network_hosts' is required"),
        ({"s": REMOTE | {"oauth": {}}}, {}, "cannot use MCP OAuth"),
        ({"s": REMOTE | {"oauth_resource": "https://api.example.com/"}}, {}, "cannot use MCP OAuth"),
        ({"s": REMOTE | {"scopes": ["read"]}}, {}, "cannot use MCP OAuth"),
        ({"s": REMOTE | {"https_proxy": "http://proxy:3128"}}, {}, "never goes through a proxy"),
        ({"s": STDIO | {"proxy": "http://proxy:3128"}}, {}, "never goes through a proxy"),
        ({"s": STDIO | {"env": {"HTTPS_PROXY": "${P}"}}}, {}, "field 'env.HTTPS_PROXY': a plugin's server never"),
        ({"s": STDIO | {"env": {"all_proxy": "${P}"}}}, {}, "never goes through a proxy"),
        ({"Bad_Name": STDIO}, {}, "the server name 'Bad_Name'"),
        ({}, {}, "at least one server"),
        ({"s": STDIO | {"command": "python3 server.py"}}, {}, "not a shell command string"),
        ({"s": STDIO | {"required": "yes"}}, {}, "field 'required'"),
    ],
)
def test_each_rule_refuses_with_the_field_named(servers: dict[str, Any], top: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(servers, **top)
    assert message in caught.value.message


def test_a_declared_host_matches_after_normalization() -> None:
    manifest = _parse({"s": REMOTE | {"url": "https://API.example.com./mcp", "network_hosts": ["api.example.com."]}})
    assert manifest.servers[0].network_hosts == ("api.example.com",)


def test_no_secret_value_is_kept_anywhere() -> None:
    manifest = _parse({"s": STDIO, "r": REMOTE})
    text = repr(manifest) + json.dumps([d.describe() for d in manifest.definitions("0" * 64)])
    # Only reference names exist in a manifest; nothing is resolved while parsing.
    assert "NOTES_TOKEN" in text and "s3cret" not in text


def test_the_plugin_name_limit_in_bytes() -> None:
    at = "p" * PLUGIN_NAME_MAX_BYTES
    doc = {"name": at, "mcp_servers": {"s" * PLUGIN_NAME_MAX_BYTES: STDIO}}
    manifest = parse_manifest(json.dumps(doc).encode(), ROOT)
    assert manifest.servers[0].identity == f"plugin-{PLUGIN_NAME_MAX_BYTES}-{at}-{'s' * PLUGIN_NAME_MAX_BYTES}"
    with pytest.raises(ConfigError, match=f"the limit is {PLUGIN_NAME_MAX_BYTES}"):
        parse_manifest(json.dumps(doc | {"name": at + "p"}).encode(), ROOT)
    with pytest.raises(ConfigError, match=f"the limit is {PLUGIN_NAME_MAX_BYTES}"):
        parse_manifest(json.dumps(doc | {"mcp_servers": {"s" * (PLUGIN_NAME_MAX_BYTES + 1): STDIO}}).encode(), ROOT)


def test_the_servers_limit() -> None:
    at = {f"s{i}": STDIO for i in range(PLUGIN_SERVERS_MAX)}
    assert len(_parse(at).servers) == PLUGIN_SERVERS_MAX
    with pytest.raises(ConfigError, match=f"names {PLUGIN_SERVERS_MAX + 1} servers; the limit is {PLUGIN_SERVERS_MAX}"):
        _parse(at | {"one-more": STDIO})


def test_the_manifest_size_limit() -> None:
    base = json.dumps({"name": "notes", "mcp_servers": {"s": STDIO | {"description": ""}}})
    pad = MCP_DEFINITION_MAX_BYTES - len(base.encode())
    at = base.replace('"description": ""', '"description": "' + "d" * pad + '"')
    assert len(at.encode()) == MCP_DEFINITION_MAX_BYTES
    assert parse_manifest(at.encode(), ROOT).servers[0].spec.description == "d" * pad
    with pytest.raises(ConfigError, match=f"the limit is {MCP_DEFINITION_MAX_BYTES}"):
        parse_manifest(at.encode() + b" ", ROOT)


def test_not_json_or_not_an_object() -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_manifest(b"{", ROOT)
    with pytest.raises(ConfigError, match="must be an object"):
        parse_manifest(b"[]", ROOT)
