"""Reading other hosts' MCP configs (shadowcode/mcp/client/imports/formats.py), on the hosts' own files.

Covers CW-01. The Claude Code and Codex fixtures were written by their pinned CLIs
(shadowcode_conformance/fixtures/configs/generate.sh); the Cursor and VS Code ones by hand, as their docs show them.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath

import pytest

from shadowcode.errors import ConfigError
from shadowcode.mcp.client.imports import SSE_REASON, PlannedServer, guess_host, parse_config
from shadowcode.mcp.client.imports.convert import DESCRIPTION

pytestmark = pytest.mark.req("CW-01")

CONFIGS = Path(__file__).resolve().parents[4] / "conformance/shadowcode_conformance/fixtures" / "configs"


def _parse(name: str, host: str) -> dict[str, PlannedServer]:
    path = CONFIGS / name
    return {s.source_name: s for s in parse_config(path.read_bytes(), name, host=host).servers}


def _doc(server: PlannedServer) -> dict[str, object]:
    assert server.definition is not None, server.reason
    return json.loads(server.definition)


def test_claude_code_project_file_written_by_its_cli() -> None:
    servers = _parse("claude.mcp.json", "claude")
    assert list(servers) == ["everything", "fetch", "remote", "legacy"]
    assert _doc(servers["everything"]) == {
        "name": "everything",
        "command": ["npx", "-y", "@modelcontextprotocol/server-everything"],
        "env_refs": {"API_KEY": "EVERYTHING_KEY"},
        "description": DESCRIPTION,
    }
    fetch = servers["fetch"]
    assert _doc(fetch)["env_refs"] == {"LOG_LEVEL": "LOG_LEVEL"}
    assert [n.field for n in fetch.notes] == ["env.LOG_LEVEL"] and "default value is not carried" in fetch.notes[
        0
    ].message
    remote = _doc(servers["remote"])
    assert remote["url"] == "https://mcp.example.com/mcp" and remote["api_key_env"] == "EXAMPLE_TOKEN"
    assert servers["legacy"].definition is None and servers["legacy"].reason == SSE_REASON


def test_codex_config_written_by_its_cli() -> None:
    servers = _parse("codex.config.toml", "codex")
    assert _doc(servers["everything"])["command"] == ["npx", "-y", "@modelcontextprotocol/server-everything"]
    assert _doc(servers["tools"])["env"] == {"LOG_LEVEL": "debug"}
    assert _doc(servers["remote"])["api_key_env"] == "EXAMPLE_TOKEN"
    assert all(not s.notes for s in servers.values())


@pytest.mark.req("CW-01", "CW-02", "CW-07", "CW-08")
def test_codex_filters_timeouts_and_headers_become_definition_fields() -> None:
    servers = _parse("codex.fields.config.toml", "codex")
    docs = servers["docs"]
    definition = _doc(docs)
    assert definition["env_refs"] == {"DOCS_TOKEN": "DOCS_TOKEN"}
    assert definition["enabled_tools"] == ["search", "read"] and definition["disabled_tools"] == ["delete"]
    assert definition["connect_timeout"] == 20 and definition["call_timeout"] == 90
    assert not docs.notes
    figma = servers["figma"]
    assert _doc(figma)["api_key_env"] == "FIGMA_OAUTH_TOKEN"
    assert _doc(figma)["headers"] == {"X-Figma-Region": "us-east-1"}
    assert _doc(figma)["env_headers"] == {"X-Api-Key": "FIGMA_API_KEY"}
    assert not figma.notes


def test_cursor_and_vscode_files_as_their_docs_show_them() -> None:
    cursor = _parse("cursor.mcp.json", "cursor")
    claude = _parse("claude.mcp.json", "claude")
    assert cursor["everything"].definition == claude["everything"].definition  # one server, configured alike
    assert _doc(cursor["everything"])["env_refs"] == {"API_KEY": "EVERYTHING_KEY"}
    assert _doc(cursor["remote"])["api_key_env"] == "EXAMPLE_TOKEN"
    vscode = _parse("vscode.mcp.json", "vscode")
    assert _doc(vscode["perplexity"])["env_refs"] == {"PERPLEXITY_API_KEY": "PERPLEXITY_KEY"}
    assert "secret set PERPLEXITY_KEY" in vscode["perplexity"].notes[0].message
    assert _doc(vscode["github"])["url"] == "https://api.githubcopilot.com/mcp/"


def test_the_same_bytes_give_the_same_definitions() -> None:
    first = _parse("claude.mcp.json", "claude")
    again = _parse("claude.mcp.json", "claude")
    assert [s.definition for s in first.values()] == [s.definition for s in again.values()]


@pytest.mark.parametrize(
    ("path", "host"),
    [
        ("/p/.mcp.json", "claude"),
        ("/h/.claude.json", "claude"),
        ("/p/.cursor/mcp.json", "cursor"),
        ("/p/.vscode/mcp.json", "vscode"),
        ("/h/.codex/config.toml", "codex"),
        ("/p/servers.json", "generic"),
    ],
)
def test_the_host_is_guessed_from_the_file_name(path: str, host: str) -> None:
    assert guess_host(PurePath(path)) == host


# -- bad input ------------------------------------------------------------------------------


def test_both_servers_and_mcp_servers_is_an_error() -> None:
    data = json.dumps({"servers": {}, "mcpServers": {"a": {"command": "a"}}}).encode()
    with pytest.raises(ConfigError, match="both 'servers' and 'mcpServers'"):
        parse_config(data, "mcp.json", host="generic")


def test_a_file_with_neither_map_is_an_error() -> None:
    with pytest.raises(ConfigError, match="neither 'servers' nor 'mcpServers'"):
        parse_config(b'{"model": "x"}', "mcp.json", host="generic")


def test_a_toml_syntax_error_names_line_and_column() -> None:
    data = b'[mcp_servers.a]\ncommand = "npx"\nargs = ["-y",\n  oops]\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "config.toml", host="codex")
    assert "line 4, column 3" in caught.value.message and "nothing was imported" in caught.value.message


def test_invalid_json_and_non_utf8_are_errors() -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_config(b'{"mcpServers": {', "mcp.json", host="claude")
    with pytest.raises(ConfigError, match="not UTF-8"):
        parse_config(b'{"mcpServers": {"\xff": 1}}', "mcp.json", host="claude")
    with pytest.raises(ConfigError, match="unknown host"):
        parse_config(b"{}", "mcp.json", host="emacs")


def test_two_entries_with_one_name_keep_the_first() -> None:
    data = json.dumps({"mcpServers": {"a.b": {"command": "x"}, "a-b": {"command": "y"}}}).encode()
    first, second = parse_config(data, "mcp.json", host="generic").servers
    assert _doc(first)["command"] == ["x"] and first.notes[0].field == "name"
    assert second.definition is None and "also named 'a-b'" in (second.reason or "")


def test_claude_user_file_reads_the_projects_local_scope(tmp_path: Path) -> None:
    doc = {
        "numStartups": 3,
        "mcpServers": {"shared": {"command": "user-one"}, "only-user": {"command": "u"}},
        "projects": {str(tmp_path): {"mcpServers": {"shared": {"command": "local-one"}}}},
    }
    parsed = parse_config(json.dumps(doc).encode(), ".claude.json", host="claude", project=str(tmp_path))
    assert [(s.source_name, _doc(s)["command"]) for s in parsed.servers] == [
        ("shared", ["local-one"]),
        ("only-user", ["u"]),
    ]


def test_a_toml_error_at_the_end_still_names_line_and_column() -> None:
    with pytest.raises(ConfigError, match=r"at end of document: line 4, column 1"):
        parse_config(b'[mcp_servers.a]\ncommand = "npx"\nargs = [\n', "config.toml", host="codex")
