"""``shadowcode mcp register`` as a process: output, exit codes and side effects.

Covers REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, Path]:
    """Empty HOME and SHADOWCODE_HOME, so a test can prove nothing was written there."""
    home = tmp_path / "home"
    shadow_home = tmp_path / "shadow-home"
    home.mkdir()
    shadow_home.mkdir()
    return {"HOME": home, "SHADOWCODE_HOME": shadow_home}


def _run(
    args: list[str], homes: dict[str, Path], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Result:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE")}
    full_env.update({k: str(v) for k, v in homes.items()})
    full_env.update(env or {})
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
        env=full_env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _shadowcode(args: list[str], homes: dict[str, Path], **kwargs: object) -> Result:
    return _run([sys.executable, "-m", "shadowcode", *args], homes, **kwargs)  # type: ignore[arg-type]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _odd_project(tmp_path: Path) -> Path:
    project = tmp_path / 'my project\'s "copy"'
    project.mkdir()
    return project


# --- successful output ------------------------------------------------------------------


@pytest.mark.req("REG-01")
def test_register_prints_generic_json_and_writes_nothing(tmp_path: Path, homes: dict[str, Path]) -> None:
    project = _odd_project(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(project)

    result = _shadowcode(["--profile", "work", "--workspace", str(link), "mcp", "register"], homes)

    assert result.code == 0, result.err
    assert result.err == "MCP client: merge the entry into the client's mcpServers map.\n"
    document = json.loads(result.out)
    entry = document["mcpServers"]["shadowcode"]
    assert entry == {
        "command": os.path.abspath(sys.executable),
        "args": ["-m", "shadowcode", "--profile", "work", "--workspace", str(project.resolve()), "mcp", "serve"],
        "env": {"SHADOWCODE_HOME": str(homes["SHADOWCODE_HOME"])},
    }
    assert _tree(homes["HOME"]) == [] and _tree(homes["SHADOWCODE_HOME"]) == []


@pytest.mark.req("REG-01")
def test_without_shadowcode_home_the_entry_sets_no_environment(tmp_path: Path, homes: dict[str, Path]) -> None:
    unset = {"HOME": homes["HOME"]}
    generic = _shadowcode(["--workspace", str(tmp_path), "mcp", "register"], unset)
    claude = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", "claude"], unset)
    codex = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", "codex"], unset)
    assert generic.code == claude.code == codex.code == 0, generic.err + claude.err + codex.err
    assert "env" not in json.loads(generic.out)["mcpServers"]["shadowcode"]
    assert json.loads(claude.out)["mcpServers"]["shadowcode"]["env"] == {}
    assert "env" not in tomllib.loads(codex.out)["mcp_servers"]["shadowcode"]


@pytest.mark.req("REG-01", "REG-03", "REG-05")
@pytest.mark.parametrize("client", ["generic", "codex"])
def test_shadowcode_home_with_a_space_quote_and_dollar_brace_is_literal(
    client: str, tmp_path: Path, homes: dict[str, Path]
) -> None:
    odd_home = tmp_path / 'profiles "here" ${HOME}'
    odd_home.mkdir()
    result = _shadowcode(
        ["--workspace", str(tmp_path), "mcp", "register", "--client", client], {**homes, "SHADOWCODE_HOME": odd_home}
    )
    assert result.code == 0, result.err
    if client == "codex":
        env = tomllib.loads(result.out)["mcp_servers"]["shadowcode"]["env"]
    else:
        env = json.loads(result.out)["mcpServers"]["shadowcode"]["env"]
    assert env == {"SHADOWCODE_HOME": str(odd_home)}


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", ["claude", "cursor"])
def test_shadowcode_home_with_dollar_brace_is_refused_where_the_host_expands_it(
    client: str, tmp_path: Path, homes: dict[str, Path]
) -> None:
    odd_home = tmp_path / "profiles ${HOME}"
    odd_home.mkdir()
    result = _shadowcode(
        ["--workspace", str(tmp_path), "mcp", "register", "--client", client], {**homes, "SHADOWCODE_HOME": odd_home}
    )
    assert result.code == 2
    assert result.out == ""
    assert "${" in result.err


@pytest.mark.req("REG-01")
def test_a_relative_shadowcode_home_is_written_absolute(tmp_path: Path, homes: dict[str, Path]) -> None:
    result = _shadowcode(
        ["--workspace", str(tmp_path), "mcp", "register"], {**homes, "SHADOWCODE_HOME": Path("rel")}, cwd=tmp_path
    )
    assert result.code == 0, result.err
    assert json.loads(result.out)["mcpServers"]["shadowcode"]["env"] == {"SHADOWCODE_HOME": str(tmp_path / "rel")}


@pytest.mark.req("REG-01")
def test_register_defaults_to_the_current_directory(tmp_path: Path, homes: dict[str, Path]) -> None:
    result = _shadowcode(["mcp", "register", "--client", "cursor"], homes, cwd=tmp_path)
    assert result.code == 0, result.err
    args = json.loads(result.out)["mcpServers"]["shadowcode"]["args"]
    assert args[args.index("--workspace") + 1] == str(tmp_path.resolve())


@pytest.mark.req("REG-03", "REG-05")
def test_codex_output_is_toml_that_round_trips_a_space_and_quote_path(tmp_path: Path, homes: dict[str, Path]) -> None:
    project = _odd_project(tmp_path)
    result = _shadowcode(
        ["--workspace", str(project), "mcp", "register", "--client", "codex", "--allow-write", "--allow-approvals"],
        homes,
    )
    assert result.code == 0, result.err
    server = tomllib.loads(result.out)["mcp_servers"]["shadowcode"]
    assert server["command"] == os.path.abspath(sys.executable)
    assert server["args"] == [
        "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", "--allow-write", "--allow-approvals",
    ]  # fmt: skip


@pytest.mark.req("REG-04")
@pytest.mark.parametrize("client", ["claude", "cursor", "generic"])
def test_json_flag_prints_the_same_json_for_json_clients(client: str, tmp_path: Path, homes: dict[str, Path]) -> None:
    plain = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", client], homes)
    with_json = _shadowcode(["--json", "--workspace", str(tmp_path), "mcp", "register", "--client", client], homes)
    assert plain.code == 0 and with_json.code == 0
    assert json.loads(plain.out) == json.loads(with_json.out)


@pytest.mark.req("REG-04")
def test_claude_and_cursor_stdio_shapes(tmp_path: Path, homes: dict[str, Path]) -> None:
    claude = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", "claude"], homes)
    cursor = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", "cursor"], homes)
    claude_entry = json.loads(claude.out)["mcpServers"]["shadowcode"]
    cursor_entry = json.loads(cursor.out)["mcpServers"]["shadowcode"]
    pinned = {"SHADOWCODE_HOME": str(homes["SHADOWCODE_HOME"])}
    assert claude_entry["type"] == "stdio" and claude_entry["env"] == pinned
    assert set(cursor_entry) == {"type", "command", "args", "env"} and cursor_entry["env"] == pinned
    assert claude_entry["args"] == cursor_entry["args"]


@pytest.mark.req("REG-06")
@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("claude", {"type": "http", "url": "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer ${TOK}"}}),
        ("cursor", {"url": "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}}),
    ],
)
def test_http_registration_names_only_the_variable(
    client: str, expected: dict[str, object], homes: dict[str, Path]
) -> None:
    secret = "0123456789abcdef0123456789abcdef-secret"
    result = _shadowcode(
        ["mcp", "register", "--client", client, "--url", "http://127.0.0.1:8765/mcp", "--token-env", "TOK"],
        homes,
        env={"TOK": secret},
    )
    assert result.code == 0, result.err
    assert secret not in result.out + result.err
    assert json.loads(result.out)["mcpServers"]["shadowcode"] == expected
    assert _tree(homes["HOME"]) == [] and _tree(homes["SHADOWCODE_HOME"]) == []


@pytest.mark.req("REG-06")
def test_codex_http_registration_uses_bearer_token_env_var(homes: dict[str, Path]) -> None:
    result = _shadowcode(
        ["mcp", "register", "--client", "codex", "--url", "http://[::1]:9/mcp", "--token-env", "SHADOW_MCP_HTTP_TOKEN"],
        homes,
    )
    assert result.code == 0, result.err
    assert tomllib.loads(result.out) == {
        "mcp_servers": {"shadowcode": {"url": "http://[::1]:9/mcp", "bearer_token_env_var": "SHADOW_MCP_HTTP_TOKEN"}}
    }


# --- REG-02: a zipapp registers its archive ---------------------------------------------


@pytest.mark.req("REG-02")
def test_zipapp_registers_the_archive_path(tmp_path: Path, homes: dict[str, Path]) -> None:
    dist = tmp_path / "install dir"
    dist.mkdir()
    pyz = dist / "shadowcode.pyz"
    with zipfile.ZipFile(pyz, "w") as archive:
        archive.writestr("__main__.py", "from shadowcode.__main__ import main\nmain()\n")
    project = _odd_project(tmp_path)

    absolute = _run([sys.executable, str(pyz), "--workspace", str(project), "mcp", "register"], homes)
    relative = _run(
        [sys.executable, "shadowcode.pyz", "--workspace", str(project), "mcp", "register", "--client", "codex"],
        homes,
        cwd=dist,
    )

    assert absolute.code == 0, absolute.err
    entry = json.loads(absolute.out)["mcpServers"]["shadowcode"]
    assert entry["command"] == os.path.abspath(sys.executable)
    assert entry["args"] == [str(pyz), "--workspace", str(project), "mcp", "serve"]
    assert relative.code == 0, relative.err
    assert tomllib.loads(relative.out)["mcp_servers"]["shadowcode"]["args"][0] == str(pyz)


# --- refusals: exit 2, message on stderr, nothing on stdout -----------------------------

URL = "http://127.0.0.1:8765/mcp"


@pytest.mark.req("REG-03", "REG-06", "REG-07")
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--json", "mcp", "register", "--client", "codex"], "--json"),
        (["mcp", "register", "--client", "emacs"], "--client"),
        (["--json", "mcp", "register", "--client", "continue"], "YAML"),
        (["mcp", "register", "--client", "zed", "--url", URL, "--token-env", "T"], "Zed sends header values"),
        (["mcp", "register", "--client", "claude", "--url", URL + "?x=1", "--token-env", "T"], "query"),
        (["mcp", "register", "--client", "claude", "--url", URL + "#f", "--token-env", "T"], "fragment"),
        (
            ["mcp", "register", "--client", "codex", "--url", "http://192.168.1.5:8765/mcp", "--token-env", "T"],
            "loopback",
        ),
        (
            ["mcp", "register", "--client", "cursor", "--url", "http://u:p@127.0.0.1:8765/mcp", "--token-env", "T"],
            "credentials",
        ),
        (["mcp", "register", "--client", "claude", "--url", "http://127.0.0.1:8765/sse", "--token-env", "T"], "/mcp"),
        (["mcp", "register", "--url", URL, "--token-env", "T"], "codex, claude, cursor"),
        (["mcp", "register", "--client", "codex", "--url", URL], "--token-env"),
        (["mcp", "register", "--client", "codex", "--token-env", "T"], "--url"),
        (["mcp", "register", "--client", "codex", "--url", URL, "--token-env", "T-1"], "--token-env"),
        (["mcp", "register", "--client", "codex", "--url", URL, "--token-env", "T", "--allow-write"], "--allow-write"),
        (["mcp", "register", "--client", "claude", "--url", URL, "--token-env", "T", "--allow-approvals"], "stdio"),
        (["mcp", "register", "--name", "bad name"], "--name"),
        (["--profile", "a/b", "mcp", "register", "--client", "claude"], "profile"),
    ],
)
def test_bad_register_options_exit_2_with_a_message_and_no_output(
    args: list[str], fragment: str, tmp_path: Path, homes: dict[str, Path]
) -> None:
    result = _shadowcode(args, homes, cwd=tmp_path)
    assert result.code == 2, (result.out, result.err)
    assert result.out == ""
    assert fragment in result.err
    assert _tree(homes["HOME"]) == [] and _tree(homes["SHADOWCODE_HOME"]) == []


@pytest.mark.req("REG-05")
@pytest.mark.parametrize("client", ["claude", "cursor"])
def test_dollar_brace_in_path_is_refused_for_claude_and_cursor(
    client: str, tmp_path: Path, homes: dict[str, Path]
) -> None:
    project = tmp_path / "proj ${HOME}"
    project.mkdir()
    result = _shadowcode(["--workspace", str(project), "mcp", "register", "--client", client], homes)
    assert result.code == 2
    assert result.out == ""
    assert "${" in result.err


@pytest.mark.req("REG-05")
def test_dollar_brace_in_path_is_literal_for_codex(tmp_path: Path, homes: dict[str, Path]) -> None:
    project = tmp_path / "proj ${HOME}"
    project.mkdir()
    result = _shadowcode(["--workspace", str(project), "mcp", "register", "--client", "codex"], homes)
    assert result.code == 0, result.err
    assert str(project) in tomllib.loads(result.out)["mcp_servers"]["shadowcode"]["args"]


@pytest.mark.req("REG-01")
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_workspace_that_is_not_a_directory_exits_2(kind: str, tmp_path: Path, homes: dict[str, Path]) -> None:
    target = tmp_path / "target"
    if kind == "file":
        target.write_text("x", encoding="utf-8")
    result = _shadowcode(["--workspace", str(target), "mcp", "register"], homes)
    assert result.code == 2
    assert result.out == ""
    assert "workspace" in result.err


@pytest.mark.req("REG-04")
@pytest.mark.parametrize(("client", "needs"), [("gemini", "--approval-mode yolo"), ("continue", "config.yaml")])
def test_the_host_line_goes_to_stderr_and_stdout_keeps_only_the_snippet(
    client: str, needs: str, tmp_path: Path, homes: dict[str, Path]
) -> None:
    import yaml

    result = _shadowcode(["--workspace", str(tmp_path), "mcp", "register", "--client", client], homes)
    assert result.code == 0, result.err
    document = yaml.safe_load(result.out) if client == "continue" else json.loads(result.out)
    assert str(tmp_path.resolve()) in json.dumps(document)
    assert needs in result.err and result.err.count("\n") == 1
    assert _tree(homes["HOME"]) == [] and _tree(homes["SHADOWCODE_HOME"]) == []
