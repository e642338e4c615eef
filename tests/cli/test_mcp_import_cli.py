"""``shadowcode mcp import`` run as a user would (shadowcode/cli/mcp_import.py).

Covers CW-01: the report per server, exit statuses, the well-known locations listed before
anything is written, and the bad input of the issue, each refused or reported clearly with
nothing on stdout for an error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_client import REPO

pytestmark = pytest.mark.req("CW-01")

CONFIGS = REPO / "conformance/shadowcode_conformance/fixtures" / "configs"


def _cli(home: Path, workspace: Path, *args: str, user_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SHADOWCODE_HOME=str(home))
    if user_home is not None:
        env.update(HOME=str(user_home), CODEX_HOME=str(user_home / ".codex"))
    return subprocess.run(
        [sys.executable, "-m", "shadowcode", "--workspace", str(workspace), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


def _catalog(home: Path, workspace: Path) -> dict[str, Any]:
    done = _cli(home, workspace, "--json", "mcp")
    assert done.returncode == 0, done.stderr
    return {s["id"]: s for s in json.loads(done.stdout)["servers"]}


def test_without_file_the_hosts_files_are_listed_before_anything_is_written(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    shutil.copyfile(CONFIGS / "codex.config.toml", user / ".codex" / "config.toml")
    shutil.copyfile(CONFIGS / "cursor.mcp.json", project_dir / ".mcp.json")

    dry = _cli(home, project_dir, "mcp", "import", "--dry-run", user_home=user)
    assert dry.returncode == 1, dry.stderr  # Codex's everything clashes with the project's
    lines = dry.stdout.splitlines()
    assert lines[0] == "2 MCP config files found:"
    assert f"{project_dir / '.mcp.json'}  (Claude Code, project, 2 servers)" in lines[1]
    assert "(Codex, user, 3 servers)" in lines[2]
    assert "would import as config:everything" in dry.stdout and "would be imported" in dry.stdout
    assert _catalog(home, project_dir) == {}

    done = _cli(home, project_dir, "--json", "mcp", "import", user_home=user)
    assert done.returncode == 1
    assert done.stderr.startswith("2 MCP config files found:")
    report = json.loads(done.stdout)
    assert report["dry_run"] is False and [f["host"] for f in report["files"]] == ["claude", "codex"]
    outcomes = {(s["host"], s["source_name"]): s["outcome"] for s in report["servers"]}
    assert outcomes == {
        ("claude", "everything"): "imported",
        ("claude", "remote"): "imported",
        ("codex", "everything"): "skipped",
        ("codex", "tools"): "imported",
        ("codex", "remote"): "unchanged",
    }
    catalog = _catalog(home, project_dir)
    assert sorted(catalog) == ["config:everything", "config:remote", "config:tools"]
    assert {s["grant"]["state"] for s in catalog.values()} == {"disabled"}


def test_importing_a_file_twice_changes_nothing(home: Path, project_dir: Path) -> None:
    path = CONFIGS / "vscode.mcp.json"
    first = _cli(home, project_dir, "mcp", "import", str(path))
    assert first.returncode == 0, first.stderr
    assert "perplexity: imported as config:perplexity (hash " in first.stdout
    assert "env.PERPLEXITY_API_KEY: VS Code prompts for input 'perplexity-key'" in first.stdout
    assert "2 imported, 0 unchanged, 0 skipped; nothing was enabled or started." in first.stdout
    before = _catalog(home, project_dir)
    again = _cli(home, project_dir, "mcp", "import", str(path), "--from", "vscode")
    assert again.returncode == 0 and "0 imported, 2 unchanged, 0 skipped" in again.stdout
    assert _catalog(home, project_dir) == before


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_with_both_maps_or_bad_toml_is_refused_and_imports_nothing(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    both = _bad(tmp_path, "mcp.json", json.dumps({"servers": {"a": {"command": "a"}}, "mcpServers": {}}))
    done = _cli(home, project_dir, "mcp", "import", str(both))
    assert done.returncode == 2 and done.stdout == ""
    assert "both 'servers' and 'mcpServers'" in done.stderr and "Traceback" not in done.stderr
    toml = _bad(tmp_path, "config.toml", '[mcp_servers.a]\ncommand = "a"\n\n[mcp_servers.b\ncommand = "b"\n')
    done = _cli(home, project_dir, "mcp", "import", str(toml))
    assert done.returncode == 2 and done.stdout == ""
    assert "line 4, column 15" in done.stderr and "nothing was imported" in done.stderr
    wrong = _cli(home, project_dir, "mcp", "import", str(toml), "--from", "emacs")
    assert wrong.returncode == 2 and "--from 'emacs'" in wrong.stderr
    assert _catalog(home, project_dir) == {}


def test_servers_that_cannot_be_imported_are_reported_one_by_one(home: Path, project_dir: Path, tmp_path: Path) -> None:
    servers = {
        "ok": {"command": "srv", "args": ["--stdio"]},
        "nothing": {"args": ["x"]},
        "legacy": {"type": "sse", "url": "https://mcp.example.com/sse"},
        "pathvar": {"command": "${HOME}/bin/srv"},
        "literal": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer literal-secret-4f1c"},
        },
    }
    path = _bad(tmp_path, ".mcp.json", json.dumps({"mcpServers": servers}))
    done = _cli(home, project_dir, "--json", "mcp", "import", str(path))
    assert done.returncode == 1, done.stderr
    report = {s["source_name"]: s for s in json.loads(done.stdout)["servers"]}
    assert report["ok"]["outcome"] == "imported"
    assert "neither 'command'" in report["nothing"]["reason"]
    assert "2024 HTTP+SSE" in report["legacy"]["reason"]
    assert "command path" in report["pathvar"]["reason"]
    literal = report["literal"]
    assert literal["outcome"] == "imported"
    assert literal["notes"][0]["field"] == "headers.Authorization"
    assert "secret set LITERAL_TOKEN" in literal["notes"][0]["message"]
    assert "literal-secret-4f1c" not in done.stdout + done.stderr
    catalog = _catalog(home, project_dir)
    assert sorted(catalog) == ["config:literal", "config:ok"]
    assert catalog["config:literal"]["api_key_env"] == "LITERAL_TOKEN"
    assert "literal-secret-4f1c" not in json.dumps(catalog)


@pytest.mark.slow
def test_an_imported_server_connects_once_reviewed_and_enabled(home: Path, project_dir: Path, tmp_path: Path) -> None:
    server = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "python_sdk_server.py"
    config = {"mcpServers": {"sdk": {"type": "stdio", "command": sys.executable, "args": [str(server)]}}}
    path = _bad(tmp_path, ".mcp.json", json.dumps(config))
    done = _cli(home, project_dir, "--json", "mcp", "import", str(path))
    assert done.returncode == 0, done.stderr
    digest = json.loads(done.stdout)["servers"][0]["hash"]
    assert _cli(home, project_dir, "trust", "--level", "workspace").returncode == 0
    enabled = _cli(home, project_dir, "mcp", "enable", "config:sdk", "--hash", digest)
    assert enabled.returncode == 0, enabled.stderr
    checked = _cli(home, project_dir, "mcp", "validate", "sdk")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("config:sdk: connected, protocol ")
