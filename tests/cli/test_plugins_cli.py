"""The `plugin review|trust|enable|disable|revoke|list` commands, run as a user would.

Covers CW-12.

The commands reach the engine through its API verbs (plugin_review, plugin_trust, plugin_enable,
plugin_disable, plugin_revoke, plugin_list); the `mcp` catalog shows the plugin's servers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine import cli

pytestmark = pytest.mark.req("CW-12")

SECRET = "value-never-shown-4b1d"


def _bundle(folder: Path) -> Path:
    folder.mkdir()
    (folder / "server.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    manifest = {
        "name": "notes",
        "version": "1.0.0",
        "mcp_servers": {
            "echo": {
                "command": ["python3", "${PLUGIN_ROOT}/server.py"],
                "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"},
                "enabled_tools": ["echo"],
            },
        },
    }
    (folder / "plugin.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _json(home: Path, workspace: Path, *args: str) -> Any:
    done = cli(home, "--json", *args, workspace=workspace)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_whole_life_of_a_bundle_from_the_command_line(
    home: Path, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", SECRET)
    bundle = _bundle(tmp_path / "notes")
    text = cli(home, "plugin", "review", str(bundle), workspace=project_dir)
    assert text.returncode == 0, text.stderr
    assert "plugin-5-notes-echo" in text.stdout and "env NOTES_TOKEN from NOTES_TOKEN" in text.stdout
    assert f"{bundle}/server.py" in text.stdout and "enabled tools: echo" in text.stdout
    review = _json(home, project_dir, "plugin", "review", str(bundle))
    local_flag = cli(home, "plugin", "review", str(bundle), "--json", workspace=project_dir)
    assert json.loads(local_flag.stdout) == review  # the command's own --json, as the global one
    assert SECRET not in text.stdout + json.dumps(review)
    trusted = _json(home, project_dir, "plugin", "trust", str(bundle), "--digest", review["digest"])
    assert trusted["state"] == "trusted" and trusted["servers"] == ["plugin:plugin-5-notes-echo"]
    listed = _json(home, project_dir, "plugin", "list")
    assert [(p["name"], p["state"]) for p in listed["plugins"]] == [("notes", "trusted")]
    # An untrusted project cannot enable it; nothing changes.
    refused = cli(home, "plugin", "enable", "notes", workspace=project_dir)
    assert refused.returncode != 0 and refused.stdout == "" and "trusted project" in refused.stderr
    assert cli(home, "trust", "--level", "workspace", str(project_dir), workspace=project_dir).returncode == 0
    assert _json(home, project_dir, "plugin", "enable", "notes")["state"] == "enabled"
    catalog = _json(home, project_dir, "mcp")
    (server,) = catalog["servers"]
    assert server["id"] == "plugin:plugin-5-notes-echo" and server["plugin"] == "notes"
    assert server["grant"] == {"state": "enabled", "hash": review["digest"]}
    shown = cli(home, "mcp", workspace=project_dir).stdout
    assert "plugin:plugin-5-notes-echo" in shown and "from plugin notes" in shown
    assert _json(home, project_dir, "plugin", "disable", "notes")["state"] == "disabled"
    assert _json(home, project_dir, "mcp")["servers"][0]["grant"]["state"] == "disabled"
    assert _json(home, project_dir, "plugin", "revoke", "notes")["state"] == "revoked"
    assert _json(home, project_dir, "mcp")["servers"] == []
    assert _json(home, project_dir, "plugin", "list")["plugins"] == []


@pytest.mark.parametrize(
    "args",
    [
        ("plugin", "trust", "."),  # --digest missing
        ("plugin", "enable"),  # NAME missing
        ("plugin", "review", ".", "--nope"),
        ("plugin", "frobnicate"),
    ],
)
def test_wrong_usage_exits_2_with_nothing_on_stdout(home: Path, project_dir: Path, args: tuple[str, ...]) -> None:
    done = cli(home, *args, workspace=project_dir)
    assert done.returncode == 2 and done.stdout == "" and done.stderr


def test_a_refused_manifest_is_a_clear_error_and_nothing_is_trusted(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bad"
    bundle.mkdir()
    remote = {"url": "https://mcp.example.com/mcp", "network_hosts": ["mcp.example.com"], "headers": {"X": "v"}}
    (bundle / "plugin.json").write_text(json.dumps({"name": "bad", "mcp_servers": {"r": remote}}), encoding="utf-8")
    done = cli(home, "plugin", "review", str(bundle), workspace=project_dir)
    assert done.returncode == 2 and done.stdout == ""
    assert "literal headers are refused" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert _json(home, project_dir, "plugin", "list")["plugins"] == []
