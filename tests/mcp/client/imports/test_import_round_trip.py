"""What ``mcp register`` prints for each host, ``mcp import`` reads back as the same definition (CW-01).

Covers CW-01, REG-04, REG-06.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowcode.mcp.client.imports import HOSTS, guess_host, parse_config, well_known
from shadowcode.mcp.host_entries import HOSTS as PRINTED
from shadowcode.mcp.host_entries import Client
from shadowcode.mcp.register import build_snippet

ODD = "odd 'quoted' \"dir\" with spaces, # and: colons"


def _one(text: str, host: str) -> dict[str, object]:
    parsed = parse_config(text.encode("utf-8"), "printed", host=host)
    (server,) = parsed.servers
    assert server.reason is None and server.definition is not None, server
    assert server.notes == (), server.notes
    return json.loads(server.definition)  # type: ignore[no-any-return]


@pytest.mark.req("CW-01", "REG-04")
def test_every_printed_host_is_importable_by_its_own_name() -> None:
    assert {c.value for c in Client} <= set(HOSTS)


@pytest.mark.req("CW-01", "REG-04")
@pytest.mark.parametrize("client", list(Client))
def test_a_printed_stdio_entry_imports_as_the_launch_it_prints(client: Client, tmp_path: Path) -> None:
    project = tmp_path / ODD
    project.mkdir()
    home = tmp_path / "profiles root"
    snippet = build_snippet(client, workspace=project, profile="work", allow_write=True, home=str(home))
    generic = build_snippet(Client.GENERIC, workspace=project, profile="work", allow_write=True, home=str(home))

    definition = _one(snippet.text, client.value)

    entry = json.loads(generic.text)["mcpServers"]["shadowcode"]
    assert definition["command"] == [entry["command"], *entry["args"]]
    assert definition["env"] == {"SHADOWCODE_HOME": str(home)}
    assert definition == _one(generic.text, "generic")


@pytest.mark.req("CW-01", "REG-06")
@pytest.mark.parametrize("client", [c for c in Client if PRINTED[c].http is not None])
def test_a_printed_http_entry_imports_as_the_url_and_the_token_variable(client: Client) -> None:
    snippet = build_snippet(client, workspace=Path("."), url="http://[::1]:8765/mcp", token_env="SHADOW_TOKEN")

    definition = _one(snippet.text, client.value)

    assert definition == {
        "name": "shadowcode",
        "description": definition["description"],
        "url": "http://[::1]:8765/mcp",
        "api_key_env": "SHADOW_TOKEN",
    }


@pytest.mark.req("CW-01")
@pytest.mark.parametrize(
    ("host", "text", "env_refs"),
    [
        ("gemini", '{"mcpServers": {"s": {"command": "/bin/s", "env": {"K": "$API_KEY"}}}}', {"K": "API_KEY"}),
        ("qwen", '{"mcpServers": {"s": {"command": "/bin/s", "env": {"K": "${API_KEY}"}}}}', {"K": "API_KEY"}),
        (
            "opencode",
            '{"mcp": {"s": {"type": "local", "command": ["/bin/s"], "environment": {"K": "{env:API_KEY}"}}}}',
            {"K": "API_KEY"},
        ),
        (
            "continue",
            "mcpServers:\n- name: s\n  command: /bin/s\n  env: {K: '${{ secrets.API_KEY }}'}\n",
            {"K": "API_KEY"},
        ),
        ("windsurf", '{"mcpServers": {"s": {"command": "/bin/s", "env": {"K": "${env:API_KEY}"}}}}', {"K": "API_KEY"}),
    ],
)
def test_each_host_reference_syntax_becomes_an_env_ref(host: str, text: str, env_refs: dict[str, str]) -> None:
    assert _one(text, host)["env_refs"] == env_refs


@pytest.mark.req("CW-01")
@pytest.mark.parametrize(
    ("host", "value"), [("opencode", "${HOME}/x"), ("continue", "${HOME}/x"), ("zed", "${HOME}/x"), ("cline", "$HOME")]
)
def test_what_a_host_does_not_replace_stays_literal(host: str, value: str) -> None:
    entries = {
        "opencode": {"mcp": {"s": {"type": "local", "command": ["/bin/s", value]}}},
        "continue": {"mcpServers": [{"name": "s", "command": "/bin/s", "args": [value]}]},
        "zed": {"context_servers": {"s": {"source": "custom", "command": "/bin/s", "args": [value]}}},
        "cline": {"mcpServers": {"s": {"command": "/bin/s", "args": [value]}}},
    }
    assert _one(json.dumps(entries[host]), host)["command"] == ["/bin/s", value]


@pytest.mark.req("CW-01")
def test_a_value_the_host_would_replace_in_part_is_not_copied_as_if_literal() -> None:
    text = '{"mcp": {"s": {"type": "local", "command": ["/bin/s", "{file:/etc/token}"]}}}'
    (server,) = parse_config(text.encode(), "opencode.json", host="opencode").servers
    assert server.definition is None and "variable reference" in (server.reason or "")
    gemini = '{"mcpServers": {"s": {"command": "/bin/s", "args": ["$HOME/x"]}}}'
    (server,) = parse_config(gemini.encode(), "settings.json", host="gemini").servers
    assert server.definition is None


@pytest.mark.req("CW-01")
def test_host_specific_shapes_and_skips() -> None:
    sse = '{"mcpServers": {"s": {"url": "http://127.0.0.1:9/sse"}}}'
    (server,) = parse_config(sse.encode(), "settings.json", host="gemini").servers
    assert server.definition is None and "SSE" in (server.reason or "")
    ext = '{"context_servers": {"gh": {"source": "extension", "settings": {}}}}'
    (server,) = parse_config(ext.encode(), "settings.json", host="zed").servers
    assert server.definition is None and "extension" in (server.reason or "")
    old_zed = '{"context_servers": {"s": {"command": {"path": "/bin/s", "args": ["a"], "env": {}}}}}'
    assert _one(old_zed, "zed")["command"] == ["/bin/s", "a"]
    filters = '{"mcpServers": {"s": {"command": "/bin/s", "includeTools": ["a"], "excludeTools": ["b"]}}}'
    assert {k: v for k, v in _one(filters, "gemini").items() if k.endswith("_tools")} == {
        "enabled_tools": ["a"],
        "disabled_tools": ["b"],
    }
    remote = '{"mcp": {"s": {"type": "remote", "url": "https://h.example/mcp"}}}'
    assert _one(remote, "kilo")["url"] == "https://h.example/mcp"
    wrong = '{"mcp": {"s": {"type": "docker", "command": ["/bin/s"]}}}'
    (server,) = parse_config(wrong.encode(), "opencode.json", host="opencode").servers
    assert server.definition is None and "'local' or 'remote'" in (server.reason or "")


@pytest.mark.req("CW-01")
@pytest.mark.parametrize("host", ["gemini", "qwen", "opencode", "kilo", "zed", "continue"])
def test_a_settings_file_without_servers_holds_no_entry(host: str) -> None:
    text = "theme: dark\n" if host == "continue" else '{"theme": "dark"}'
    assert parse_config(text.encode(), "settings", host=host).servers == ()


@pytest.mark.req("CW-01")
def test_comments_and_trailing_commas_are_read_where_the_host_writes_them() -> None:
    text = """// Zed settings
    {
      "theme": "One Dark", /* "context_servers": {} */
      "context_servers": {
        "s": {"source": "custom", "command": "/bin/s", "args": ["// not a comment", "/* nor this */"],},
      },
    }
    """
    assert _one(text, "zed")["command"] == ["/bin/s", "// not a comment", "/* nor this */"]
    with pytest.raises(Exception, match="not valid JSON"):
        parse_config(b'{"mcpServers": {}, // no\n}', ".mcp.json", host="claude")


@pytest.mark.req("CW-01")
def test_each_new_host_file_is_recognised_by_its_name(tmp_path: Path) -> None:
    names = {
        ".gemini/settings.json": "gemini",
        ".qwen/settings.json": "qwen",
        "cline_mcp_settings.json": "cline",
        "opencode.jsonc": "opencode",
        ".kilo/kilo.json": "kilo",
        "config.yaml": "continue",
        ".zed/settings.json": "zed",
        ".config/zed/settings.json": "zed",
        ".codeium/windsurf/mcp_config.json": "windsurf",
    }
    for name, host in names.items():
        assert guess_host(tmp_path / name) == host, name
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    home, project = tmp_path / "home", tmp_path / "project"
    for path in (
        "home/.gemini/settings.json",
        "home/.continue/config.yaml",
        "home/.codeium/windsurf/mcp_config.json",
        "home/.cline/data/settings/cline_mcp_settings.json",
        "home/.config/zed/settings.json",
        "project/opencode.json",
        "project/.kilo/kilo.json",
        "project/.qwen/settings.json",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}", encoding="utf-8")
    found = [(loc.host, loc.scope) for loc in well_known(home, project)]
    assert found == [
        ("qwen", "project"),
        ("opencode", "project"),
        ("kilo", "project"),
        ("gemini", "user"),
        ("cline", "user"),
        ("continue", "user"),
        ("zed", "user"),
        ("windsurf", "user"),
    ]
