"""The command line: global options, --json documents, and bad input (ENG-01, ENG-02, ENG-05, SRV-02)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SHADOWCODE_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "shadowcode", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.req("SRV-02")
def test_mcp_serve_with_json_is_refused(tmp_path: Path) -> None:
    done = run(tmp_path / "h", "--json", "--workspace", str(tmp_path), "mcp", "serve")
    assert done.returncode == 2 and done.stdout == "" and "--json" in done.stderr


@pytest.mark.req("ENG-02")
@pytest.mark.parametrize("verb", [["mcp", "serve"], ["status"]])
def test_missing_workspace_exits_2_with_a_message(tmp_path: Path, verb: list[str]) -> None:
    done = run(tmp_path / "h", "--workspace", str(tmp_path / "missing"), *verb)
    assert done.returncode == 2 and done.stdout == "" and "does not exist" in done.stderr


@pytest.mark.req("ENG-02")
@pytest.mark.parametrize("verb", [["mcp", "serve"], ["status"]])
def test_a_deleted_working_directory_exits_2_with_a_message_not_a_traceback(tmp_path: Path, verb: list[str]) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    env = dict(os.environ, SHADOWCODE_HOME=str(tmp_path / "h"), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    # the child enters the folder, which is then removed before Python starts
    argv = ["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone)]
    done = subprocess.run(
        [*argv, sys.executable, "-m", "shadowcode", *verb],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "current directory" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.req("ENG-02")
def test_workspace_that_is_a_file_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x", encoding="utf-8")
    done = run(tmp_path / "h", "--workspace", str(f), "mcp", "serve")
    assert done.returncode == 2 and done.stdout == "" and "not a directory" in done.stderr


@pytest.mark.req("ENG-01")
def test_profile_with_a_path_separator_exits_2(tmp_path: Path) -> None:
    done = run(tmp_path / "h", "--profile", "a/b", "--workspace", str(tmp_path), "mcp", "serve")
    assert done.returncode == 2 and done.stdout == "" and "profile" in done.stderr
    assert not (tmp_path / "h").exists()


def test_unknown_flag_exits_2_on_stderr(tmp_path: Path) -> None:
    done = run(tmp_path / "h", "--bogus")
    assert done.returncode == 2 and done.stdout == "" and "--bogus" in done.stderr


@pytest.mark.req("ENG-02")
def test_trust_status_untrust_print_one_json_document_each(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "h"
    trusted = run(home, "--json", "trust", "--level", "elevated", str(project))
    assert trusted.returncode == 0 and json.loads(trusted.stdout) == {
        "path": str(project.resolve()),
        "trusted": True,
        "level": "elevated",
    }
    status = json.loads(run(home, "--json", "--workspace", str(project), "status").stdout)
    assert status["project"]["trusted"] is True and status["engine"]["mode"] == "temporary"
    untrusted = json.loads(run(home, "--json", "untrust", str(project)).stdout)
    assert untrusted["trusted"] is False


@pytest.mark.req("ENG-02")
def test_trust_with_an_unknown_level_exits_2_and_changes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = run(tmp_path / "h", "trust", "--level", "root", str(project))
    assert done.returncode == 2 and "level" in done.stderr
    status = json.loads(run(tmp_path / "h", "--json", "--workspace", str(project), "status").stdout)
    assert status["project"]["trusted"] is False


@pytest.mark.req("ENG-01")
def test_profiles_keep_separate_trust(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    run(tmp_path / "h", "--profile", "work", "trust", str(project))
    other = json.loads(run(tmp_path / "h", "--json", "--profile", "play", "--workspace", str(project), "status").stdout)
    assert other["project"]["trusted"] is False and other["profile"]["name"] == "play"


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    "options,message",
    [
        (["--provider", "scripted"], "--provider scripted needs --script FILE"),
        (["--provider", "openai", "--model", "m"], "--provider openai needs --base-url and --model"),
    ],
)
def test_models_add_of_an_incomplete_model_exits_2_and_saves_nothing(
    tmp_path: Path, options: list[str], message: str
) -> None:
    home = tmp_path / "h"
    done = run(home, "models", "add", "half", *options)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and "Traceback" not in done.stderr
    listed = run(home, "--json", "models", "list")
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"models": [], "default": None}


@pytest.mark.req("ENG-03")
def test_a_verb_that_runs_no_mcp_task_does_not_load_the_mcp_sdk(tmp_path: Path) -> None:
    """Each verb opens a temporary engine; loading the MCP SDK there made every verb seconds slower."""
    code = (
        "import sys\n"
        "from shadowcode.cli import run\n"
        "sys.argv = ['shadowcode', '--json', 'approvals']\n"
        "try:\n"
        "    run()\n"
        "except SystemExit:\n"
        "    pass\n"
        "sdk = ('mcp', 'mcp_types', 'shadowcode.mcp.client.connection')\n"
        "loaded = sorted(m for m in sys.modules if m in sdk or m.startswith(('mcp.', 'mcp_types.')))\n"
        "sys.stderr.write('loaded: ' + ','.join(loaded) + '\\n')\n"
    )
    env = dict(os.environ, SHADOWCODE_HOME=str(tmp_path / "h"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", env=env, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert json.loads(done.stdout) == {"approvals": []}, done.stderr
    assert "loaded: \n" in done.stderr, done.stderr[-2000:]
