"""``shadowcode rollback``, ``checkpoint`` and ``why`` as a person uses them (cli/history.py).

Covers ENG-06, SRV-18, SRV-19: a Build task delegated from the terminal is rolled back from the
terminal after a preview (on a terminal it asks; elsewhere --yes is needed); refusals change nothing.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from shadowcode.profile import Profile
from tests.support.engine import PY, cli, cli_env, scripted_model, wait_for_sync

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses unix sockets and /proc")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def profile(home: Path) -> Profile:
    return Profile(name="default", root=home / "profiles" / "default")


def trusted(home: Path, folder: Path) -> Path:
    folder.mkdir()
    done = cli(home, "trust", "--level", "workspace", str(folder))
    assert done.returncode == 0, done.stderr
    return folder.resolve()


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    return trusted(home, tmp_path / "project")


def build_task(home: Path, profile: Profile, project: Path, tmp_path: Path) -> str:
    """Run a scripted Build task from the terminal that changes a.txt and creates b.txt; returns its id."""
    (project / "a.txt").write_text("before\n", encoding="utf-8")
    writes = [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "after\n"}},
        {"name": "write_file", "arguments": {"path": "b.txt", "content": "new\n"}},
    ]
    turns = [{"tool_calls": writes}, {"content": "changed both"}]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    done = cli(home, "--json", "run", "--level", "workspace", "change the files", workspace=project)
    assert done.returncode == 0, done.stderr
    assert (project / "a.txt").read_text(encoding="utf-8") == "after\n"
    return str(json.loads(done.stdout)["id"])


@pytest.mark.req("ENG-06", "SRV-18", "SRV-19")
def test_a_build_task_from_the_terminal_is_previewed_rolled_back_and_why_shows_both(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    job = build_task(home, profile, project, tmp_path)

    shown = cli(home, "checkpoint", job, workspace=project)
    assert shown.returncode == 0 and f"task {job}" in shown.stdout
    assert "a.txt" in shown.stdout and "b.txt" in shown.stdout and "(absent)" in shown.stdout

    refused = cli(home, "rollback", job, workspace=project)  # stdin is not a terminal
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert "restore  a.txt" in refused.stdout and "remove   b.txt" in refused.stdout
    assert "conflict check: passed" in refused.stdout
    assert (project / "a.txt").read_text(encoding="utf-8") == "after\n" and (project / "b.txt").exists()

    rolled = cli(home, "--json", "rollback", job, "--yes", workspace=project)
    assert rolled.returncode == 0, rolled.stderr
    doc = json.loads(rolled.stdout)
    assert doc["restored"] == ["a.txt"] and doc["removed"] == ["b.txt"]
    assert doc["preview"]["conflicts"] == [] and doc["preview"]["restore"] == ["a.txt"]
    assert (project / "a.txt").read_text(encoding="utf-8") == "before\n" and not (project / "b.txt").exists()

    why = cli(home, "--json", "why", "a.txt", workspace=project)
    assert why.returncode == 0
    kinds = [(e["kind"], e["task_id"]) for e in json.loads(why.stdout)["entries"]]
    assert kinds == [("rollback", job), ("write", job)]
    text = cli(home, "why", "a.txt", workspace=project).stdout
    assert "rollback a.txt" in text and "write    a.txt" in text and "change the files" in text

    again = cli(home, "rollback", job, "--yes", workspace=project)
    assert again.returncode == 0 and "nothing to roll back" in again.stdout


@pytest.mark.req("ENG-06", "SRV-18")
def test_rollback_refuses_a_task_of_another_project_a_conflict_and_an_untrusted_project(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    job = build_task(home, profile, project, tmp_path)
    other = trusted(home, tmp_path / "other")

    elsewhere = cli(home, "rollback", job, "--yes", workspace=other)
    assert elsewhere.returncode == 1 and "no task" in elsewhere.stderr and "in this project" in elsewhere.stderr
    assert (project / "a.txt").read_text(encoding="utf-8") == "after\n"

    (project / "a.txt").write_text("edited by hand\n", encoding="utf-8")
    conflict = cli(home, "rollback", job, "--yes", workspace=project)
    assert conflict.returncode == 1 and "nothing was rolled back: a.txt" in conflict.stderr
    assert "CONFLICT a.txt" in conflict.stdout and "conflict check: failed" in conflict.stdout
    assert (project / "a.txt").read_text(encoding="utf-8") == "edited by hand\n" and (project / "b.txt").exists()

    assert cli(home, "untrust", str(project)).returncode == 0
    (project / "a.txt").write_text("after\n", encoding="utf-8")
    untrusted = cli(home, "rollback", job, "--yes", workspace=project)
    assert untrusted.returncode == 3 and "trusted project" in untrusted.stderr and untrusted.stdout == ""
    assert (project / "a.txt").read_text(encoding="utf-8") == "after\n" and (project / "b.txt").exists()
    # Reading the history needs no trust, as over MCP.
    assert cli(home, "checkpoint", job, workspace=project).returncode == 0
    assert job in cli(home, "why", "--task", job, workspace=project).stdout


@pytest.mark.req("SRV-18")
def test_checkpoint_of_an_unknown_task_fails_clearly(home: Path, project: Path) -> None:
    missing = cli(home, "checkpoint", "task_000000000000", workspace=project)
    assert missing.returncode == 1 and "no checkpoint" in missing.stderr and missing.stdout == ""
    empty = cli(home, "why", "nothing.txt", workspace=project)
    assert empty.returncode == 0 and "no recorded changes" in empty.stdout


def _on_a_terminal(home: Path, project: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """Run ``shadowcode ARGS`` with a pseudo-terminal as stdin, answer its question; returns (status, stderr)."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [PY, "-m", "shadowcode", "--workspace", str(project), *args],
            env=cli_env(home),
            stdin=terminal,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            assert proc.stderr is not None
            os.set_blocking(proc.stderr.fileno(), False)
            seen = bytearray()

            def asked() -> bool:
                seen.extend(proc.stderr.read() or b"")  # type: ignore[union-attr]
                if proc.poll() is not None:
                    raise AssertionError(f"exited {proc.returncode} before asking: {seen.decode()}")
                return b"Roll back" in seen

            wait_for_sync(asked, timeout=30, what="the question")
            os.write(controller, answer)
            proc.wait(timeout=30)
            os.set_blocking(proc.stderr.fileno(), True)
            seen.extend(proc.stderr.read())
            return proc.returncode, seen.decode("utf-8", "replace")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
    finally:
        os.close(controller)
        os.close(terminal)


@pytest.mark.req("ENG-06", "SRV-18")
def test_on_a_terminal_rollback_asks_and_only_yes_rolls_back(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    job = build_task(home, profile, project, tmp_path)
    status, err = _on_a_terminal(home, project, b"n\n", "rollback", job)
    assert status == 1 and "nothing was rolled back" in err
    assert (project / "a.txt").read_text(encoding="utf-8") == "after\n" and (project / "b.txt").exists()
    status, err = _on_a_terminal(home, project, b"y\n", "rollback", job)
    assert status == 0, err
    assert (project / "a.txt").read_text(encoding="utf-8") == "before\n" and not (project / "b.txt").exists()
