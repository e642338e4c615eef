"""Every host's entry: shape, language, literal values, the HTTP form or its refusal, the stderr line.

Covers REG-03, REG-04, REG-05, REG-06, REG-07.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from shadowcode.errors import UsageError
from shadowcode.mcp.host_entries import HOSTS, Client, Stdio, render_text
from shadowcode.mcp.register import build_snippet

URL = "http://127.0.0.1:8765/mcp"
TOKEN = "SHADOW_MCP_HTTP_TOKEN"
ODD = 'odd "quoted" dir\\ with: # yes 0o17'


def _parse(client: Client, text: str) -> dict[str, Any]:
    syntax = HOSTS[client].syntax
    if syntax == "toml":
        return tomllib.loads(text)
    if syntax == "yaml":
        return yaml.safe_load(text)  # type: ignore[no-any-return]
    return json.loads(text)  # type: ignore[no-any-return]


def _launch_of(client: Client, document: dict[str, Any], name: str = "shadowcode") -> tuple[list[str], dict[str, str]]:
    """The argv and environment a host reads from ``document``, per its documented shape."""
    if client in (Client.OPENCODE, Client.KILO):
        entry = document["mcp"][name]
        assert entry["type"] == "local"
        return entry["command"], entry.get("environment", {})
    if client is Client.CONTINUE:
        (entry,) = document["mcpServers"]
        assert entry["name"] == name and entry["type"] == "stdio"
    elif client is Client.CODEX:
        entry = document["mcp_servers"][name]
    elif client is Client.VSCODE:
        entry = document["servers"][name]
        assert entry["type"] == "stdio"
    elif client is Client.ZED:
        entry = document["context_servers"][name]
        assert entry["source"] == "custom"
    else:
        entry = document["mcpServers"][name]
    return [entry["command"], *entry["args"]], entry.get("env", {})


@pytest.mark.req("REG-03", "REG-04")
def test_every_client_has_a_row_and_the_cli_help_names_it() -> None:
    from typer.testing import CliRunner

    from shadowcode.cli.mcp import app

    assert set(HOSTS) == set(Client)
    shown = CliRunner().invoke(app, ["register", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert shown.exit_code == 0, shown.output
    for client in Client:
        assert client.value in shown.output, client


@pytest.mark.req("REG-04", "REG-05")
@pytest.mark.parametrize("client", list(Client))
def test_stdio_entry_parses_in_the_host_language_and_carries_the_literal_launch(client: Client, tmp_path: Path) -> None:
    project = tmp_path / ODD
    project.mkdir()
    home = tmp_path / "root with space"
    snippet = build_snippet(client, workspace=project, profile="work", allow_write=True, home=str(home))

    document = _parse(client, snippet.text)
    argv, env = _launch_of(client, document)

    assert argv == [
        os.path.abspath(sys.executable), "-m", "shadowcode", "--profile", "work",
        "--workspace", str(project.resolve()), "mcp", "serve", "--allow-write",
    ]  # fmt: skip
    assert env == {"SHADOWCODE_HOME": str(home)}
    assert snippet.document == (document if HOSTS[client].syntax == "json" else None)
    assert snippet.note.startswith(f"{HOSTS[client].label}: ") and "\n" not in snippet.note


@pytest.mark.req("REG-04")
@pytest.mark.parametrize("client", list(Client))
def test_without_a_root_the_entry_names_no_environment(client: Client, tmp_path: Path) -> None:
    _, env = _launch_of(client, _parse(client, build_snippet(client, workspace=tmp_path).text))
    assert env == {}


@pytest.mark.req("REG-04")
def test_each_host_file_and_request_is_named_on_its_line(tmp_path: Path) -> None:
    notes = {c: build_snippet(c, workspace=tmp_path).note for c in Client}
    assert ".gemini/settings.json" in notes[Client.GEMINI]
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in notes[Client.GEMINI] and "--approval-mode yolo" in notes[Client.GEMINI]
    assert "~/.qwen/settings.json" in notes[Client.QWEN] and '"trust": true' in notes[Client.QWEN]
    assert "cline_mcp_settings.json" in notes[Client.CLINE]
    assert "opencode.json" in notes[Client.OPENCODE] and "kilo.json" in notes[Client.KILO]
    assert "~/.continue/config.yaml" in notes[Client.CONTINUE]
    assert ".vscode/mcp.json" in notes[Client.VSCODE]
    assert "zed/settings.json" in notes[Client.ZED]
    assert "~/.codeium/windsurf/mcp_config.json" in notes[Client.WINDSURF]


@pytest.mark.req("REG-04")
def test_qwen_offers_every_tool_on_the_first_request_and_nothing_is_trusted_for_the_user(tmp_path: Path) -> None:
    for client in Client:
        text = build_snippet(client, workspace=tmp_path).text
        assert '"trust"' not in text and "autoApprove" not in text and "alwaysAllow" not in text, client
    entry = json.loads(build_snippet(Client.QWEN, workspace=tmp_path).text)["mcpServers"]["shadowcode"]
    assert entry["alwaysLoadTools"] is True


_SAMPLES = ["${HOME}", "$HOME", "{env:HOME}", "{file:x}", "${{ secrets.X }}", "$1", "${workspaceFolder}"]
_DOLLAR_BRACE = ["${HOME}", "${{ secrets.X }}", "${workspaceFolder}"]
_SUBSTITUTED = {
    Client.CLAUDE: _DOLLAR_BRACE,
    Client.CURSOR: _DOLLAR_BRACE,
    Client.VSCODE: _DOLLAR_BRACE,
    Client.WINDSURF: _DOLLAR_BRACE,
    Client.GEMINI: ["${HOME}", "$HOME", "${{ secrets.X }}", "$1", "${workspaceFolder}"],
    Client.QWEN: ["${HOME}", "$HOME", "${{ secrets.X }}", "$1", "${workspaceFolder}"],
    Client.OPENCODE: ["{env:HOME}", "{file:x}"],
    Client.KILO: ["{env:HOME}", "{file:x}"],
    Client.CONTINUE: ["${{ secrets.X }}"],
}
"""What each host replaces in its values (documented references); the rest keep them literally."""


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", list(Client))
def test_a_value_the_host_would_substitute_is_refused_and_others_kept(client: Client, tmp_path: Path) -> None:
    refused = []
    for sample in _SAMPLES:
        project = tmp_path / f"p {sample}"
        project.mkdir()
        try:
            argv, _ = _launch_of(client, _parse(client, build_snippet(client, workspace=project).text))
        except UsageError as exc:
            assert exc.exit_code == 2 and HOSTS[client].label in exc.message
            with pytest.raises(UsageError):
                build_snippet(client, workspace=tmp_path, home=str(project))
            refused.append(sample)
        else:
            assert str(project.resolve()) in argv
    assert refused == _SUBSTITUTED.get(client, [])


@pytest.mark.req("REG-05")
def test_a_lone_dollar_or_brace_stays_literal_where_the_host_expands_only_references(tmp_path: Path) -> None:
    project = tmp_path / "cost $ {x} $"
    project.mkdir()
    for client in Client:
        argv, _ = _launch_of(client, _parse(client, build_snippet(client, workspace=project).text))
        assert str(project.resolve()) in argv, client


@pytest.mark.req("REG-05")
@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=40))
def test_yaml_values_read_back_exactly_whatever_they_hold(value: str) -> None:
    host = HOSTS[Client.CONTINUE]
    document = host.stdio("shadowcode", Stdio("/usr/bin/python3", (value, "x"), {"V": value}))
    parsed = yaml.safe_load(render_text(host, document))
    assert parsed == document
    assert parsed["mcpServers"][0]["args"][0] == value


@pytest.mark.req("REG-03")
def test_json_output_is_refused_for_the_yaml_host(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="YAML"):
        build_snippet(Client.CONTINUE, workspace=tmp_path, json_output=True)
    for client in Client:
        if HOSTS[client].syntax == "json":
            assert build_snippet(client, workspace=tmp_path, json_output=True).document is not None


# --- HTTP --------------------------------------------------------------------------------


def _authorization(client: Client, document: dict[str, Any]) -> tuple[str, str]:
    """The URL and the Authorization header a host reads from an HTTP entry."""
    if client in (Client.OPENCODE, Client.KILO):
        entry = document["mcp"]["shadowcode"]
        assert entry["type"] == "remote"
        return entry["url"], entry["headers"]["Authorization"]
    if client is Client.CONTINUE:
        (entry,) = document["mcpServers"]
        assert entry["type"] == "streamable-http"
        return entry["url"], entry["requestOptions"]["headers"]["Authorization"]
    if client is Client.VSCODE:
        entry = document["servers"]["shadowcode"]
        assert entry["type"] == "http"
        return entry["url"], entry["headers"]["Authorization"]
    entry = document["mcpServers"]["shadowcode"]
    url = entry.get("httpUrl") or entry.get("serverUrl") or entry["url"]
    return url, entry["headers"]["Authorization"]


_REFERENCES = {
    Client.CLAUDE: "Bearer ${SHADOW_MCP_HTTP_TOKEN}",
    Client.GEMINI: "Bearer ${SHADOW_MCP_HTTP_TOKEN}",
    Client.QWEN: "Bearer ${SHADOW_MCP_HTTP_TOKEN}",
    Client.CURSOR: "Bearer ${env:SHADOW_MCP_HTTP_TOKEN}",
    Client.VSCODE: "Bearer ${env:SHADOW_MCP_HTTP_TOKEN}",
    Client.WINDSURF: "Bearer ${env:SHADOW_MCP_HTTP_TOKEN}",
    Client.OPENCODE: "Bearer {env:SHADOW_MCP_HTTP_TOKEN}",
    Client.KILO: "Bearer {env:SHADOW_MCP_HTTP_TOKEN}",
    Client.CONTINUE: "Bearer ${{ secrets.SHADOW_MCP_HTTP_TOKEN }}",
}


@pytest.mark.req("REG-06")
@pytest.mark.parametrize("client", sorted(_REFERENCES))
def test_http_entry_references_the_variable_in_the_host_syntax(client: Client) -> None:
    snippet = build_snippet(client, workspace=Path("."), url="http://localhost:8765/mcp", token_env=TOKEN)
    url, header = _authorization(client, _parse(client, snippet.text))
    assert (url, header) == ("http://localhost:8765/mcp", _REFERENCES[client])
    assert f"set {TOKEN} in the environment {HOSTS[client].label} runs in" in snippet.note


@pytest.mark.req("REG-06")
def test_gemini_and_qwen_use_the_streamable_http_field_not_the_sse_one() -> None:
    for client in (Client.GEMINI, Client.QWEN):
        entry = json.loads(build_snippet(client, workspace=Path("."), url=URL, token_env=TOKEN).text)
        assert "httpUrl" in entry["mcpServers"]["shadowcode"] and "url" not in entry["mcpServers"]["shadowcode"]


@pytest.mark.req("REG-07")
@pytest.mark.parametrize("client", [Client.GENERIC, Client.CLINE, Client.ZED])
def test_http_is_refused_where_the_host_cannot_read_a_header_from_the_environment(client: Client) -> None:
    with pytest.raises(UsageError) as info:
        build_snippet(client, workspace=Path("."), url=URL, token_env=TOKEN)
    assert info.value.exit_code == 2
    assert f"--client {client.value}" in info.value.message and "windsurf" in info.value.message
    assert HOSTS[client].http is None and HOSTS[client].no_http
