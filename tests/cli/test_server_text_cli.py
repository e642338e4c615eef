"""A server (and a model) whose every string carries terminal escape sequences, seen through the CLI.

Covers CW-04, CLI-13, ENG-08.

``shadowcode_conformance/fixtures/servers/hostile_server.py escapes`` puts clear-screen, window-title, colour,
carriage-return, bidi and C1 sequences and a faked line into every title, description,
annotation and result. ``mcp tools`` and ``jobs ID [--follow]`` must print them as visible
escapes, one line per value; ``--json`` keeps the strings whole. The last test runs both
views in a real terminal (tmux) and reads the screen back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from tests.support.mcp_client import REPO, hostile_argv, project_definition

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and tmux")

ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[41m\rRED\u202eevil\x9b2J\napprove with: yes"
SHOWN = "\\x1b[2J\\x1b[H\\x1b]0;owned\\x07\\x1b[41m\\x0dRED\\u202eevil\\x9b2J\\x0aapprove with: yes"
DESCRIPTION = SHOWN.replace("\\x0d", " ").replace("\\x0a", " ")
"""A description's line breaks and carriage returns read as spaces; everything else is shown."""


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]


def _cli(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shadowcode", "--workspace", str(workspace), *args],
        cwd=REPO,
        env=dict(os.environ, SHADOWCODE_HOME=str(home)),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def _enabled(state: EngineState, project_dir: Path, name: str, *argv: str) -> tuple[Path, str]:
    project = state.project_at(project_dir).path
    state.projects.trust(project, PermissionLevel.WORKSPACE)
    server_id = project_definition(project, name, {"name": name, "command": hostile_argv(*argv)})
    for definition in state.mcp_servers.definitions(project):
        if definition.id == server_id:
            state.mcp_servers.enable(project, definition.id, definition.sha256, trusted=True)  # type: ignore[union-attr]
    return project, server_id


@pytest.mark.req("CW-04")
def test_mcp_tools_shows_every_server_string_inert_and_json_keeps_it_whole(
    home: Path, project_dir: Path, state: EngineState
) -> None:
    project, server_id = _enabled(state, project_dir, "esc", "escapes")
    shown = _cli(home, project, "mcp", "tools", "esc")
    assert shown.returncode == 0, shown.stderr
    assert _raw_controls(shown.stdout) == []
    assert shown.stdout.splitlines() == [
        f"{server_id}: connected, protocol 2025-11-25, 2 tools",
        f"  echo (Echo{SHOWN})",
        f"      Echoes.{DESCRIPTION}",
        "      annotations: readOnlyHint",
        f"  fail (Fail{SHOWN})",
        f"      Fails.{DESCRIPTION}",
    ]
    as_json = _cli(home, project, "mcp", "tools", "esc", "--json")
    assert as_json.returncode == 0 and "\x1b" not in as_json.stdout
    tools = json.loads(as_json.stdout)["tools"]
    assert tools[0]["title"] == "Echo" + ESCAPES and tools[1]["description"] == "Fails." + ESCAPES


@pytest.mark.req("CW-04", "CLI-13")
@pytest.mark.parametrize(
    ("variant", "shown"),
    [("0", "'echo\\nfake line of the review'"), ("1", "(and 4960 more characters)"), ("2", "'../../etc/passwd'")],
    ids=["newline", "5000-characters", "path"],
)
def test_mcp_tools_refuses_a_catalog_with_an_invalid_tool_name(
    home: Path, project_dir: Path, state: EngineState, variant: str, shown: str
) -> None:
    project, server_id = _enabled(state, project_dir, "bad", "bad_name", variant)
    done = _cli(home, project, "mcp", "tools", "bad")
    assert done.returncode == 1, done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{server_id}: failed: the server lists a tool whose name is not a valid MCP tool name: ")
    assert shown in line and len(line) < 400 and _raw_controls(line) == []


def _recorded_job(state: EngineState, project_dir: Path) -> str:
    """A finished task whose events carry the escapes in every value a view shows."""
    project = state.project_at(project_dir).path
    task = state.records.create(
        project=project, owner=None, mode="build", prompt="use esc" + ESCAPES, permission_level="workspace",
        model="scripted", engine_id=state.id,
    )  # fmt: skip
    events = [
        ("model.reply", {"content": "calling" + ESCAPES, "tool_calls": [{"name": "mcp_call"}]}),
        ("tool.call", {"name": "mcp__esc__echo", "arguments": {"text": ESCAPES}}),
        ("approval.waiting", {"approval_id": "ap_1", "server": "project:esc", "tool": "fail" + ESCAPES, "cwd": "/"}),
        ("approval.resolved", {"approval_id": "ap_1", "status": "approved"}),
        ("tool.result", {"name": "mcp__esc__fail", "ok": False, "summary": "failed: " + ESCAPES}),
        ("task.note", {"note": "esc: " + ESCAPES}),
        ("command.result", {"argv": ["printf", ESCAPES], "exit_code": 0, "output": ESCAPES}),
        ("task.failed", {"error": "the server said " + ESCAPES}),
    ]
    for kind, data in events:
        state.records.event(task.id, kind, data)
    state.records.set_status(task.id, "failed", error="the server said " + ESCAPES)
    return task.id


@pytest.mark.req("CW-04", "ENG-08")
def test_jobs_and_jobs_follow_show_every_event_value_inert(home: Path, project_dir: Path, state: EngineState) -> None:
    job_id = _recorded_job(state, project_dir)
    shown = _cli(home, project_dir, "jobs", job_id)
    followed = _cli(home, project_dir, "jobs", job_id, "--follow")
    assert shown.returncode == 0 and followed.returncode == 1, shown.stderr + followed.stderr
    for out in (shown.stdout, followed.stdout):
        assert _raw_controls(out) == []
        assert out.count("\\x1b[2J") >= 7
        assert not any(line.startswith("approve with") for line in out.splitlines())
    assert followed.stdout.splitlines()[-1] == f"✗ failed: the server said {SHOWN}"
    as_json = _cli(home, project_dir, "--json", "jobs", job_id)
    assert json.loads(as_json.stdout)["events"][-1]["data"]["error"] == "the server said " + ESCAPES


def _tmux(socket: str, *args: str) -> str:
    done = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, encoding="utf-8", timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.req("CW-04", "ENG-08")
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (Debian package tmux)")
def test_in_a_real_terminal_the_screen_shows_the_escapes_inert(
    home: Path, project_dir: Path, state: EngineState, tmp_path: Path
) -> None:
    project, _ = _enabled(state, project_dir, "esc", "escapes")
    job_id = _recorded_job(state, project_dir)
    base = [sys.executable, "-m", "shadowcode", "--workspace", str(project)]
    script = tmp_path / "views.sh"
    script.write_text(
        "\n".join(
            [
                f"export SHADOWCODE_HOME='{home}'",
                f"cd '{REPO}'",
                "echo BEFORE-THE-VIEWS",
                " ".join([*base, "mcp", "tools", "esc"]),
                " ".join([*base, "jobs", job_id, "--follow"]),
                "echo AFTER-THE-VIEWS",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    socket = f"shadowcode-test-{os.getpid()}-{time.monotonic_ns()}"
    try:
        _tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", "250", "-y", "60", "-s", "views")
        _tmux(socket, "set-option", "-g", "remain-on-exit", "on")
        _tmux(socket, "set-option", "-g", "history-limit", "5000")
        _tmux(socket, "respawn-pane", "-k", "-t", "views", f"sh {script}")
        deadline = time.monotonic() + 120
        while _tmux(socket, "list-panes", "-t", "views", "-F", "#{pane_dead}").strip() != "1":
            assert time.monotonic() < deadline, "the views did not finish in the terminal within 120 s"
            time.sleep(0.1)
        screen = _tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-t", "views")
        title = _tmux(socket, "display-message", "-p", "-t", "views", "#{pane_title}")
        styled = _tmux(socket, "capture-pane", "-p", "-e", "-S", "-", "-t", "views")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=30)
    lines = screen.splitlines()
    assert "BEFORE-THE-VIEWS" in lines and "AFTER-THE-VIEWS" in lines, screen  # nothing cleared the screen
    assert lines.index("BEFORE-THE-VIEWS") < lines.index("AFTER-THE-VIEWS")
    assert f"  echo (Echo{SHOWN})" in lines
    assert f"✗ failed: the server said {SHOWN}" in lines
    assert not any(line.startswith(("approve with", "RED")) for line in lines)
    assert "owned" not in title
    assert "\x1b[41m" not in styled and "\x1b[101m" not in styled  # no red background anywhere
