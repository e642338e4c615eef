"""One server entry → definition bytes (shadowcode/mcp/client/imports/convert.py, values.py, fields.py).

Covers CW-01: references stay references, literal credentials are never copied, what cannot be
carried is skipped or noted with the field named.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec
from shadowcode.mcp.client.imports import FIELDS, SSE_REASON, PlannedServer, plan_server
from shadowcode.mcp.client.imports.values import Literal, Mixed, Reference, classify, looks_like_credential

pytestmark = pytest.mark.req("CW-01")


def _plan(entry: Any, name: str = "srv") -> PlannedServer:
    return plan_server(name, entry)


def _doc(server: PlannedServer) -> dict[str, Any]:
    assert server.definition is not None, server.reason
    return json.loads(server.definition)


def _notes(server: PlannedServer) -> dict[str, str]:
    return {n.field: n.message for n in server.notes}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${TOKEN}", Reference("TOKEN")),
        ("${env:TOKEN}", Reference("TOKEN")),
        ("${TOKEN:-dflt}", Reference("TOKEN", has_default=True)),
        ("${input:api-key}", Reference("API_KEY", input_id="api-key")),
        ("plain", Literal("plain")),
        ("a-${TOKEN}", Mixed("a-${TOKEN}")),
        ("${workspaceFolder}/x", Mixed("${workspaceFolder}/x")),
    ],
)
def test_values_are_classified(value: str, expected: object) -> None:
    assert classify(value) == expected


@pytest.mark.parametrize(
    ("key", "value", "secret"),
    [
        ("GITHUB_TOKEN", "abc", True),
        ("API_KEY", "x1", True),
        ("Authorization", "Bearer abc", True),
        ("X_ANYTHING", "ghp_0123456789abcdef0123", True),
        ("OTHER", "sk-proj-abcdefgh12345678", True),
        ("LOG_LEVEL", "debug", False),
        ("HOME_URL", "https://example.com/a/very/long/path/that/is/not/a/secret", False),
        ("API_KEY", "", False),
    ],
)
def test_credential_looking_literals(key: str, value: str, secret: bool) -> None:
    assert looks_like_credential(key, value) is secret


def test_a_literal_credential_in_env_is_not_copied_and_becomes_a_reference() -> None:
    server = _plan({"command": "srv", "env": {"GITHUB_TOKEN": "ghp_realvalue1234567890", "MODE": "fast"}})
    doc = _doc(server)
    assert "ghp_realvalue1234567890" not in server.definition.decode()  # type: ignore[union-attr]
    assert doc["env"] == {"MODE": "fast"} and doc["env_refs"] == {"GITHUB_TOKEN": "GITHUB_TOKEN"}
    assert "secret set GITHUB_TOKEN" in _notes(server)["env.GITHUB_TOKEN"]


def test_a_literal_bearer_header_is_not_copied() -> None:
    server = _plan(
        {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer s3cr3t"}}
    )
    assert b"s3cr3t" not in (server.definition or b"")
    assert _doc(server)["api_key_env"] == "SRV_TOKEN"
    note = _notes(server)["headers.Authorization"]
    assert "literal credential: not copied" in note and "secret set SRV_TOKEN" in note


def test_other_literal_credential_headers_are_dropped_with_a_note() -> None:
    server = _plan({"url": "https://mcp.example.com/mcp", "headers": {"X-Api-Key": "k-123"}})
    assert b"k-123" not in (server.definition or b"")
    assert "literal credential: not copied" in _notes(server)["headers.X-Api-Key"]


def test_sse_only_servers_are_not_importable() -> None:
    server = _plan({"type": "sse", "url": "https://mcp.example.com/sse"})
    assert server.definition is None and server.reason == SSE_REASON


def test_an_entry_with_neither_command_nor_url_is_skipped() -> None:
    server = _plan({"args": ["x"], "env": {}})
    assert server.definition is None and "neither 'command'" in (server.reason or "")
    both = _plan({"command": "x", "url": "https://e.example/mcp"})
    assert both.definition is None and "both 'command' and 'url'" in (both.reason or "")


@pytest.mark.parametrize("command", ["${HOME}/bin/server", "${env:TOOLS}/server", "${workspaceFolder}/srv"])
def test_a_variable_in_the_command_path_is_skipped(command: str) -> None:
    server = _plan({"command": command, "args": []})
    assert server.definition is None and "command path" in (server.reason or "")


def test_a_variable_in_the_arguments_or_url_is_skipped() -> None:
    assert "args[1]" in (_plan({"command": "srv", "args": ["-x", "${ROOT}"]}).reason or "")
    assert "in the URL" in (_plan({"url": "https://${HOST}/mcp"}).reason or "")


def test_a_mismatched_or_unknown_transport_is_skipped() -> None:
    assert "does not match" in (_plan({"type": "stdio", "url": "https://e.example/mcp"}).reason or "")
    assert "'ws'" in (_plan({"type": "ws", "url": "wss://e.example/mcp"}).reason or "")


def test_the_definition_parser_has_the_last_word() -> None:
    server = _plan({"url": "http://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}})
    assert server.definition is None and "https" in (server.reason or "")


def test_names_are_made_valid_and_the_rename_noted() -> None:
    server = _plan({"command": "x"}, name="github.com/acme server")
    assert server.name == "github-com-acme-server" and "renamed" in _notes(server)["name"]
    assert _plan({"command": "x"}, name="...").reason is not None


def test_unknown_and_uncarried_fields_are_noted() -> None:
    server = _plan({"command": "x", "cwd": "/srv", "shiny": 1, "disabled": True, "enabled": True})
    notes = _notes(server)
    assert "working directory" in notes["cwd"] and notes["shiny"] == "not imported: unknown field"
    assert "enables nothing" in notes["disabled"] and "enabled" not in notes


def test_every_field_marked_unsupported_is_missing_from_the_definitions() -> None:
    """When a branch adds one of these fields, this fails: turn its row of FIELDS to True."""
    known = set(StdioSpec.model_fields) | set(HttpSpec.model_fields)
    for source, rule in FIELDS.items():
        assert (rule.target in known) is rule.supported, source


@pytest.mark.parametrize(
    "args",
    [
        ["--api-key=sk-live-abcdefgh12345678"],
        ["--token", "plainvalue"],
        ["serve", "ghp_0123456789abcdef0123"],
    ],
)
def test_a_credential_in_the_arguments_is_not_copied(args: list[str]) -> None:
    server = _plan({"command": "srv", "args": args})
    assert server.definition is None and "looks like a literal credential" in (server.reason or "")
    assert args[-1] not in (server.reason or "")


def test_ordinary_flags_are_kept() -> None:
    args = ["-y", "@modelcontextprotocol/server-everything", "--token-file", "/etc/tok", "--port=8080"]
    assert _doc(_plan({"command": "npx", "args": args}))["command"] == ["npx", *args]


def test_flags_naming_where_a_credential_is_found_are_kept() -> None:
    args = ["--api-key-env", "MY_KEY", "--password-file=/run/pw"]
    assert _doc(_plan({"command": "srv", "args": args}))["command"] == ["srv", *args]
