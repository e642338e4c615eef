"""Registration snippets: shapes, literal encoding and every refusal.

Covers REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowcode.errors import ConfigError, UsageError
from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.mcp.register import (
    Client,
    HttpTarget,
    Launch,
    archive_path,
    build_snippet,
    http_snippet,
    launch_command,
    stdio_snippet,
    toml_string,
    validate_env_name,
    validate_url,
)

ODD_NAME = 'my "odd" project\'s dir \\ with spaces'


@pytest.fixture
def odd_project(tmp_path: Path) -> Path:
    project = tmp_path / ODD_NAME
    project.mkdir()
    return project


def _entry(document: dict[str, object] | None, name: str = "shadowcode") -> dict[str, object]:
    assert document is not None
    servers = document["mcpServers"]
    assert isinstance(servers, dict)
    entry = servers[name]
    assert isinstance(entry, dict)
    return entry


def _fake_pyz(folder: Path, name: str = "shadowcode.pyz", *, shiv_files: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("__main__.py", "import sys\n")
        if shiv_files:
            archive.writestr("environment.json", "{}")
            archive.writestr("_bootstrap/__init__.py", "")
    return path


# --- REG-01: generic output, absolute executable, canonical project, profile -------------


@pytest.mark.req("REG-01")
def test_generic_snippet_names_interpreter_module_and_canonical_project(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)

    snippet = build_snippet(Client.GENERIC, workspace=link)

    entry = _entry(snippet.document)
    assert set(entry) == {"command", "args"}
    assert entry["command"] == os.path.abspath(sys.executable)
    assert Path(str(entry["command"])).is_absolute()
    assert entry["args"] == ["-m", "shadowcode", "--workspace", str(real.resolve()), "mcp", "serve"]
    assert json.loads(snippet.text) == snippet.document


@pytest.mark.req("REG-01")
def test_generic_snippet_passes_profile_before_workspace_and_flags_after_serve(tmp_path: Path) -> None:
    snippet = build_snippet(Client.GENERIC, workspace=tmp_path, profile="work", allow_write=True, allow_approvals=True)

    args = _entry(snippet.document)["args"]
    assert args == [
        "-m", "shadowcode", "--profile", "work", "--workspace", str(tmp_path.resolve()),
        "mcp", "serve", "--allow-write", "--allow-approvals",
    ]  # fmt: skip


@pytest.mark.req("REG-01")
def test_snippet_without_profile_has_no_profile_flag(tmp_path: Path) -> None:
    args = _entry(build_snippet(Client.GENERIC, workspace=tmp_path).document)["args"]
    assert isinstance(args, list)
    assert "--profile" not in args
    assert "--allow-write" not in args and "--allow-approvals" not in args


@pytest.mark.req("REG-01", "ENG-01")
def test_profile_name_is_checked_at_its_length_limit(tmp_path: Path) -> None:
    longest = "p" * PROFILE_NAME_MAX_CHARS
    args = _entry(build_snippet(Client.GENERIC, workspace=tmp_path, profile=longest).document)["args"]
    assert isinstance(args, list) and args[args.index("--profile") + 1] == longest
    for bad in ("p" * (PROFILE_NAME_MAX_CHARS + 1), "a/b", "x${y}", ""):
        with pytest.raises(ConfigError) as info:
            build_snippet(Client.CLAUDE, workspace=tmp_path, profile=bad)
        assert info.value.exit_code == 2


@pytest.mark.req("REG-01")
def test_missing_workspace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_snippet(Client.GENERIC, workspace=tmp_path / "absent")
    assert info.value.exit_code == 2


@pytest.mark.req("REG-01")
def test_workspace_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        build_snippet(Client.CLAUDE, workspace=file)
    assert info.value.exit_code == 2


# --- REG-02: the archive, never the extraction folder -----------------------------------


@pytest.mark.req("REG-02")
def test_archive_is_found_from_argv0(tmp_path: Path) -> None:
    pyz = _fake_pyz(tmp_path / "with space")
    assert archive_path(argv0=str(pyz), main_file="") == pyz


@pytest.mark.req("REG-02")
def test_archive_is_found_from_main_module_inside_it(tmp_path: Path) -> None:
    pyz = _fake_pyz(tmp_path / "dist")
    assert archive_path(argv0="", main_file=str(pyz / "__main__.py")) == pyz


@pytest.mark.req("REG-02")
def test_relative_archive_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pyz = _fake_pyz(tmp_path / "dist")
    monkeypatch.chdir(tmp_path)
    found = archive_path(argv0=os.path.join("dist", "shadowcode.pyz"), main_file="")
    assert found == pyz
    assert found is not None and found.is_absolute()


@pytest.mark.req("REG-02")
def test_extraction_folder_is_never_returned(tmp_path: Path) -> None:
    extracted = tmp_path / ".shiv" / "shadowcode.pyz_abc" / "site-packages" / "shadowcode"
    extracted.mkdir(parents=True)
    assert archive_path(argv0=str(extracted / "__main__.py"), main_file=str(extracted / "__main__.py")) is None
    pyz = _fake_pyz(tmp_path / "dist")
    assert archive_path(argv0=str(pyz), main_file=str(extracted / "__main__.py")) == pyz


@pytest.mark.req("REG-02")
def test_renamed_shiv_archive_is_recognised_by_its_bootstrap(tmp_path: Path) -> None:
    renamed = _fake_pyz(tmp_path, "shadowcode", shiv_files=True)
    plain_zip = _fake_pyz(tmp_path, "other.zip")
    assert archive_path(argv0=str(renamed), main_file="") == renamed
    assert archive_path(argv0=str(plain_zip), main_file="") is None


@pytest.mark.req("REG-02")
def test_source_run_is_not_an_archive() -> None:
    here = Path(__file__)
    assert archive_path(argv0=str(here), main_file=str(here)) is None


@pytest.mark.req("REG-02")
def test_archive_launch_runs_the_interpreter_on_the_archive(tmp_path: Path) -> None:
    pyz = _fake_pyz(tmp_path / "opt dir")
    launch = launch_command(tmp_path, executable="/usr/bin/python3", archive=pyz)
    assert launch == Launch(command="/usr/bin/python3", args=(str(pyz), "--workspace", str(tmp_path), "mcp", "serve"))


@pytest.mark.req("REG-02")
def test_missing_interpreter_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        launch_command(tmp_path, executable="", archive=None)


# --- REG-03: codex TOML -----------------------------------------------------------------


@pytest.mark.req("REG-03")
def test_codex_snippet_is_one_toml_section_with_command_and_args(odd_project: Path) -> None:
    snippet = build_snippet(Client.CODEX, workspace=odd_project, profile="p")

    assert snippet.document is None
    assert snippet.text.startswith("[mcp_servers.shadowcode]\n")
    parsed = tomllib.loads(snippet.text)
    assert list(parsed) == ["mcp_servers"]
    server = parsed["mcp_servers"]["shadowcode"]
    assert server == {
        "command": os.path.abspath(sys.executable),
        "args": ["-m", "shadowcode", "--profile", "p", "--workspace", str(odd_project), "mcp", "serve"],
    }


@pytest.mark.req("REG-03")
def test_codex_with_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        build_snippet(Client.CODEX, workspace=tmp_path, json_output=True)
    assert info.value.exit_code == 2


@pytest.mark.req("REG-03")
def test_codex_http_with_json_is_refused() -> None:
    with pytest.raises(UsageError):
        build_snippet(Client.CODEX, workspace=Path("."), url="http://127.0.0.1:1/mcp", token_env="T", json_output=True)


@pytest.mark.req("REG-03")
def test_custom_entry_name_is_used_and_checked(tmp_path: Path) -> None:
    snippet = build_snippet(Client.CODEX, workspace=tmp_path, name="shadow-2")
    assert "shadow-2" in tomllib.loads(snippet.text)["mcp_servers"]
    for bad in ("", "a.b", "a b", 'x"', "ünï"):
        with pytest.raises(UsageError):
            build_snippet(Client.CODEX, workspace=tmp_path, name=bad)


# --- REG-04: claude, cursor, generic shapes ---------------------------------------------


@pytest.mark.req("REG-04")
def test_claude_snippet_is_an_mcp_json_stdio_entry(tmp_path: Path) -> None:
    snippet = build_snippet(Client.CLAUDE, workspace=tmp_path)
    entry = _entry(snippet.document)
    assert entry["type"] == "stdio"
    assert entry["env"] == {}
    assert entry["command"] == os.path.abspath(sys.executable)
    assert json.loads(snippet.text) == snippet.document


@pytest.mark.req("REG-04")
def test_cursor_snippet_is_a_cursor_mcp_json_entry(tmp_path: Path) -> None:
    snippet = build_snippet(Client.CURSOR, workspace=tmp_path, allow_write=True)
    entry = _entry(snippet.document)
    assert set(entry) == {"type", "command", "args"}
    assert entry["type"] == "stdio"
    args = entry["args"]
    assert isinstance(args, list) and args[-1] == "--allow-write"


@pytest.mark.req("REG-04")
def test_the_three_json_clients_share_the_same_launch_command(tmp_path: Path) -> None:
    clients = (Client.GENERIC, Client.CLAUDE, Client.CURSOR)
    entries = [_entry(build_snippet(c, workspace=tmp_path).document) for c in clients]
    assert len({json.dumps([e["command"], e["args"]]) for e in entries}) == 1


# --- REG-05: literal values, ${ refused for claude and cursor ---------------------------


@pytest.mark.req("REG-05")
def test_space_and_quote_path_round_trips_through_json_and_toml(odd_project: Path) -> None:
    for client in (Client.GENERIC, Client.CLAUDE, Client.CURSOR):
        args = _entry(json.loads(build_snippet(client, workspace=odd_project).text))["args"]
        assert isinstance(args, list)
        assert args[args.index("--workspace") + 1] == str(odd_project)
    codex_text = build_snippet(Client.CODEX, workspace=odd_project).text
    toml_args = tomllib.loads(codex_text)["mcp_servers"]["shadowcode"]["args"]
    assert toml_args[toml_args.index("--workspace") + 1] == str(odd_project)


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", [Client.CLAUDE, Client.CURSOR])
def test_dollar_brace_in_project_path_is_refused_for_expanding_hosts(tmp_path: Path, client: Client) -> None:
    project = tmp_path / "a${HOME}b"
    project.mkdir()
    with pytest.raises(UsageError, match=r"\$\{") as info:
        build_snippet(client, workspace=project)
    assert info.value.exit_code == 2


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", [Client.CLAUDE, Client.CURSOR])
def test_dollar_brace_in_archive_path_is_refused(tmp_path: Path, client: Client) -> None:
    launch = launch_command(tmp_path, executable="/usr/bin/python3", archive=Path("/opt/${X}/shadowcode.pyz"))
    with pytest.raises(UsageError):
        stdio_snippet(client, launch)


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", [Client.GENERIC, Client.CODEX])
def test_dollar_brace_is_kept_literally_for_hosts_that_do_not_expand_it(tmp_path: Path, client: Client) -> None:
    project = tmp_path / "a${HOME}b"
    project.mkdir()
    snippet = build_snippet(client, workspace=project)
    if client is Client.CODEX:
        args = tomllib.loads(snippet.text)["mcp_servers"]["shadowcode"]["args"]
    else:
        args = _entry(snippet.document)["args"]
    assert str(project) in args


@pytest.mark.req("REG-05")
def test_lone_dollar_is_accepted_for_claude(tmp_path: Path) -> None:
    project = tmp_path / "cost$5 {x}"
    project.mkdir()
    assert str(project) in _entry(build_snippet(Client.CLAUDE, workspace=project).document)["args"]  # type: ignore[operator]


@pytest.mark.req("REG-05")
@given(st.text())
def test_toml_string_round_trips_any_text(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(UsageError):
            toml_string(value)
        return
    assert tomllib.loads(f"k = {toml_string(value)}\n") == {"k": value}


@pytest.mark.req("REG-05")
def test_toml_string_escapes_quotes_backslashes_and_controls() -> None:
    assert toml_string('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert toml_string("\x00\x1f\x7f\n\t") == '"\\u0000\\u001F\\u007F\\n\\t"'
    assert toml_string("é ☃") == '"é ☃"'


@pytest.mark.req("REG-05")
def test_undecodable_path_bytes_are_refused(tmp_path: Path) -> None:
    launch = Launch(command="/usr/bin/python3", args=("--workspace", "/p/\udcff"))
    for client in Client:
        with pytest.raises(UsageError):
            stdio_snippet(client, launch)


# --- REG-06: HTTP forms name the variable only ------------------------------------------

URL = "http://127.0.0.1:8765/mcp"


@pytest.mark.req("REG-06")
def test_codex_http_snippet_uses_bearer_token_env_var() -> None:
    snippet = build_snippet(Client.CODEX, workspace=Path("/nonexistent"), url=URL, token_env="SHADOW_MCP_HTTP_TOKEN")
    assert tomllib.loads(snippet.text) == {
        "mcp_servers": {"shadowcode": {"url": URL, "bearer_token_env_var": "SHADOW_MCP_HTTP_TOKEN"}}
    }


@pytest.mark.req("REG-06")
def test_claude_http_snippet_uses_dollar_brace_name() -> None:
    snippet = build_snippet(Client.CLAUDE, workspace=Path("/nonexistent"), url=URL, token_env="TOK")
    assert _entry(snippet.document) == {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${TOK}"}}


@pytest.mark.req("REG-06")
def test_cursor_http_snippet_uses_env_colon_name() -> None:
    snippet = build_snippet(Client.CURSOR, workspace=Path("/nonexistent"), url=URL, token_env="TOK")
    assert _entry(snippet.document) == {"url": URL, "headers": {"Authorization": "Bearer ${env:TOK}"}}


@pytest.mark.req("REG-06")
def test_http_snippet_never_contains_the_token_value(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-value-that-must-not-appear-0123456789abcdef"
    monkeypatch.setenv("TOK", secret)
    for client in (Client.CODEX, Client.CLAUDE, Client.CURSOR):
        text = build_snippet(client, workspace=Path("."), url=URL, token_env="TOK").text
        assert secret not in text and "TOK" in text


@pytest.mark.req("REG-06")
@pytest.mark.parametrize("name", ["", "1TOK", "TOK-EN", "TOK EN", "${TOK}", "TOK=1", "é"])
def test_invalid_token_variable_name_is_refused(name: str) -> None:
    with pytest.raises(UsageError):
        build_snippet(Client.CLAUDE, workspace=Path("."), url=URL, token_env=name)


@pytest.mark.req("REG-06")
def test_valid_token_variable_names_are_accepted() -> None:
    for name in ("T", "_", "SHADOW_MCP_HTTP_TOKEN", "tok_9"):
        assert validate_env_name(name) == name


@pytest.mark.req("REG-06")
def test_url_without_token_env_and_token_env_without_url_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        build_snippet(Client.CODEX, workspace=tmp_path, url=URL)
    with pytest.raises(UsageError):
        build_snippet(Client.CODEX, workspace=tmp_path, token_env="TOK")


# --- REG-07: HTTP refusals --------------------------------------------------------------


@pytest.mark.req("REG-07")
def test_generic_http_output_is_refused() -> None:
    with pytest.raises(UsageError) as info:
        build_snippet(Client.GENERIC, workspace=Path("."), url=URL, token_env="TOK")
    assert info.value.exit_code == 2
    with pytest.raises(UsageError):
        http_snippet(Client.GENERIC, HttpTarget(url=URL, token_env="TOK"))


@pytest.mark.req("REG-07")
@pytest.mark.parametrize(("allow_write", "allow_approvals"), [(True, False), (False, True), (True, True)])
def test_permission_flags_with_url_are_refused(allow_write: bool, allow_approvals: bool) -> None:
    with pytest.raises(UsageError, match="stdio"):
        build_snippet(
            Client.CODEX,
            workspace=Path("."),
            url=URL,
            token_env="TOK",
            allow_write=allow_write,
            allow_approvals=allow_approvals,
        )


@pytest.mark.req("REG-07")
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp"),
        ("http://[::1]:8765/mcp", "http://[::1]:8765/mcp"),
        ("http://localhost:8765/mcp", "http://localhost:8765/mcp"),
        ("http://LOCALHOST:8765/mcp", "http://localhost:8765/mcp"),
        ("HTTP://127.0.0.1:1/mcp", "http://127.0.0.1:1/mcp"),
        ("http://127.0.0.1:65535/mcp", "http://127.0.0.1:65535/mcp"),
    ],
)
def test_loopback_mcp_urls_are_accepted(url: str, expected: str) -> None:
    assert validate_url(url) == expected


@pytest.mark.req("REG-07")
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8765/mcp?token=x",
        "http://127.0.0.1:8765/mcp?",
        "http://127.0.0.1:8765/mcp#frag",
        "http://127.0.0.1:8765/mcp#",
        "http://user:pass@127.0.0.1:8765/mcp",
        "http://user@127.0.0.1:8765/mcp",
        "http://10.0.0.1:8765/mcp",
        "http://example.com:8765/mcp",
        "http://127.0.0.2:8765/mcp",
        "http://0.0.0.0:8765/mcp",
        "http://[::]:8765/mcp",
        "http://localhost.example.com:8765/mcp",
        "https://127.0.0.1:8765/mcp",
        "ws://127.0.0.1:8765/mcp",
        "http://127.0.0.1/mcp",
        "http://127.0.0.1:0/mcp",
        "http://127.0.0.1:65536/mcp",
        "http://127.0.0.1:port/mcp",
        "http://127.0.0.1:8765/",
        "http://127.0.0.1:8765",
        "http://127.0.0.1:8765/mcp/",
        "http://127.0.0.1:8765/sse",
        "http://127.0.0.1:8765/MCP",
        "http://127.0.0.1:8765/mcp;x",
        "http://127.0.0.1:8765/mcp ",
        "http://127.0.0.1:8765/m\ncp",
        "127.0.0.1:8765/mcp",
        "",
    ],
)
def test_non_loopback_or_decorated_urls_are_refused(url: str) -> None:
    with pytest.raises(UsageError):
        validate_url(url)
    with pytest.raises(UsageError):
        build_snippet(Client.CLAUDE, workspace=Path("."), url=url, token_env="TOK")


@pytest.mark.req("REG-06")
def test_http_registration_does_not_need_an_existing_workspace(tmp_path: Path) -> None:
    snippet = build_snippet(Client.CURSOR, workspace=tmp_path / "absent", url=URL, token_env="TOK")
    assert _entry(snippet.document)["url"] == URL


# -- --approve-in-host and --approval-page (SRV-29, SRV-30) --------------------------------------


@pytest.mark.req("SRV-29", "REG-04")
@pytest.mark.parametrize("client", list(Client))
def test_approve_in_host_is_in_the_launch_command_of_every_client_format(tmp_path: Path, client: Client) -> None:
    text = build_snippet(client, workspace=tmp_path, allow_write=True, approve_in_host=True).text
    serve = text.index('"serve"') if '"serve"' in text else text.index("serve")
    assert text.index("--allow-write") > serve and text.index("--approve-in-host") > text.index("--allow-write")
    paged = build_snippet(client, workspace=tmp_path, approve_in_host=True, approval_page=True).text
    assert paged.count("--approval-page") == 1 and paged.index("--approve-in-host") < paged.index("--approval-page")
    assert "--approve-in-host" not in build_snippet(client, workspace=tmp_path).text


@pytest.mark.req("SRV-30")
def test_approval_page_without_approve_in_host_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--approval-page goes with --approve-in-host"):
        build_snippet(Client.CLAUDE, workspace=tmp_path, approval_page=True)


@pytest.mark.req("SRV-29", "REG-07")
def test_approve_in_host_with_url_is_refused() -> None:
    with pytest.raises(UsageError, match="stdio launch command only"):
        build_snippet(Client.CLAUDE, workspace=Path("."), url=URL, token_env="TOK", approve_in_host=True)
