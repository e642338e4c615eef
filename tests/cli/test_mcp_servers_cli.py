"""The `mcp add|enable|disable|remove|tools|validate|doctor` commands and `--json mcp`, run as a user would.

Covers CLI-01, CLI-02, CLI-03, CLI-05, CW-03, CW-04.

The commands reach the engine through its API verbs (mcp_catalog, mcp_add, mcp_enable, mcp_disable, mcp_remove,
mcp_server_tools, mcp_validate, mcp_doctor).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from tests.support.mcp_client import PYTHON_SDK_SERVER, REPO, hostile_argv, project_definition


def _cli(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SHADOWCODE_HOME=str(home))
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
    return json.loads(done.stdout)


@pytest.mark.req("CLI-01", "CLI-02", "CLI-05")
def test_the_cli_registers_reviews_enables_disables_and_removes_without_running_anything(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    definition = tmp_path / "tools.json"
    definition.write_text(
        json.dumps({"name": "tools", "command": ["touch", str(marker)], "env": {"TOKEN": "value-never-shown"}}),
        encoding="utf-8",
    )
    added = _cli(home, project_dir, "--json", "mcp", "add", str(definition))
    assert added.returncode == 0, added.stderr
    digest = json.loads(added.stdout)["hash"]
    catalog = _catalog(home, project_dir)
    assert [s["id"] for s in catalog["servers"]] == ["config:tools"]
    assert catalog["servers"][0]["hash"] == digest and catalog["servers"][0]["env_names"] == ["TOKEN"]
    assert "value-never-shown" not in json.dumps(catalog)

    untrusted = _cli(home, project_dir, "mcp", "enable", "config:tools", "--hash", digest)
    assert untrusted.returncode == 3 and "trusted project" in untrusted.stderr
    assert _cli(home, project_dir, "trust", "--level", "workspace").returncode == 0
    stale = _cli(home, project_dir, "mcp", "enable", "config:tools", "--hash", "0" * 64)
    assert stale.returncode == 1 and "does not match" in stale.stderr
    assert _cli(home, project_dir, "mcp", "enable", "config:tools", "--hash", digest).returncode == 0
    assert _catalog(home, project_dir)["servers"][0]["grant"] == {"state": "enabled", "hash": digest}
    text = _cli(home, project_dir, "mcp")
    assert text.returncode == 0 and "config:tools" in text.stdout and "enabled" in text.stdout

    assert _cli(home, project_dir, "mcp", "disable", "config:tools").returncode == 0
    assert _catalog(home, project_dir)["servers"][0]["grant"]["state"] == "disabled"
    assert _cli(home, project_dir, "mcp", "enable", "config:tools", "--hash", digest).returncode == 0
    wrong = _cli(home, project_dir, "mcp", "remove", "config:tools", "--hash", "0" * 64)
    assert wrong.returncode == 1
    removed = _cli(home, project_dir, "--json", "mcp", "remove", "config:tools", "--hash", digest)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout) == {"id": "config:tools", "removed": True, "grants_revoked": 1}
    assert _cli(home, project_dir, "mcp", "add", str(definition)).returncode == 0
    assert _catalog(home, project_dir)["servers"][0]["grant"]["state"] == "disabled"
    assert not marker.exists()


@pytest.mark.req("CLI-03")
def test_an_invalid_definition_is_refused_with_the_file_and_field_named_and_exit_2(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    definition = tmp_path / "bad.yaml"
    definition.write_text("name: bad\ncommand: server --stdio\n", encoding="utf-8")
    done = _cli(home, project_dir, "mcp", "add", str(definition))
    assert done.returncode == 2
    assert "bad.yaml: field 'command'" in done.stderr and done.stdout == ""


@pytest.mark.req("CW-03", "CW-04")
def test_validate_tools_and_doctor_print_their_reports_and_exit_0_1_or_2(
    home: Path, project_dir: Path, state: EngineState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLI_UNSET_REF", raising=False)
    project = state.project_at(project_dir).path
    state.projects.trust(project, PermissionLevel.WORKSPACE)
    good = project_definition(project, "good", {"name": "good", "command": hostile_argv("plain")})
    mute = project_definition(project, "mute", {"name": "mute", "command": hostile_argv("no_init"), "timeout_sec": 0.5})
    project_definition(project, "lost", {"name": "lost", "command": ["true"], "env_refs": {"T": "CLI_UNSET_REF"}})
    for definition in state.mcp_servers.definitions(project):
        if definition.id in (good, mute):
            state.mcp_servers.enable(project, definition.id, definition.sha256, trusted=True)  # type: ignore[union-attr]

    validated = _cli(home, project, "mcp", "validate")
    assert validated.returncode == 1, validated.stderr
    assert validated.stdout.splitlines() == [
        f"{good}: connected, protocol 2025-11-25, 5 tools",
        f"{mute}: failed: the server did not finish initialization within 0.5 s",
    ]
    listed = _cli(home, project, "mcp", "tools", "good", "--json")
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert doc["server"]["connected"] and doc["tools"][0]["name"] == "echo"
    assert doc["tools"][0]["input_schema"]["required"] == ["text"]
    doctor = _cli(home, project, "--json", "mcp", "doctor")
    assert doctor.returncode == 1, doctor.stderr
    assert [p["check"] for p in json.loads(doctor.stdout)["problems"]] == ["env"]

    unknown = _cli(home, project, "mcp", "tools", "nosuch")
    assert unknown.returncode == 2 and unknown.stdout == "" and "no MCP server 'nosuch'" in unknown.stderr
    bad_flag = _cli(home, project, "mcp", "validate", "--bogus")
    assert bad_flag.returncode == 2 and bad_flag.stdout == ""


@pytest.mark.req("CW-03", "CLI-16")
def test_validate_names_the_revision_each_stdio_server_negotiated_in_text_and_json(
    home: Path, project_dir: Path, state: EngineState
) -> None:
    project = state.project_at(project_dir).path
    state.projects.trust(project, PermissionLevel.WORKSPACE)
    pysdk = project_definition(
        project, "pysdk", {"name": "pysdk", "command": [sys.executable, str(PYTHON_SDK_SERVER)], "timeout_sec": 30}
    )
    modern = project_definition(project, "modern", {"name": "modern", "command": hostile_argv("modern")})
    legacy = project_definition(project, "legacy", {"name": "legacy", "command": hostile_argv("discover_exit")})
    for definition in state.mcp_servers.definitions(project):
        state.mcp_servers.enable(project, definition.id, definition.sha256, trusted=True)  # type: ignore[union-attr]

    text = _cli(home, project, "mcp", "validate")
    assert text.returncode == 0, text.stderr
    assert sorted(text.stdout.splitlines()) == sorted(
        [
            f"{pysdk}: connected, protocol 2026-07-28, 7 tools",
            f"{modern}: connected, protocol 2026-07-28, 5 tools",
            f"{legacy}: connected, protocol 2025-11-25, 5 tools",
        ]
    )
    doc = _cli(home, project, "--json", "mcp", "validate", "legacy")
    assert doc.returncode == 0, doc.stderr
    (server,) = json.loads(doc.stdout)["servers"]
    assert server["id"] == legacy and server["connected"] and server["protocol_version"] == "2025-11-25"
