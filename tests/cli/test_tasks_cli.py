"""``shadowcode run``, ``jobs``, ``approvals``, ``approve`` and ``deny`` as a person uses them.

Covers ENG-07, ENG-08 (and ENG-03 for ``run --detach`` needing the headless engine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.approvals import Approvals
from shadowcode.engine.tasks import TaskRecords
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.profile import Profile
from shadowcode.store import Store
from shadowcode.store.approvals import ApprovalRecord
from tests.support.engine import PY, cli, cli_env, headless_engine, scripted_model, wait_for_sync

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses unix sockets and /proc")

DONE_TURN = {"content": "all finished"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def profile(home: Path) -> Profile:
    return Profile(name="default", root=home / "profiles" / "default")


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    done = cli(home, "trust", "--level", "workspace", str(folder))
    assert done.returncode == 0, done.stderr
    return folder.resolve()


def parked_approval(profile: Profile, project: Path, argv: list[str]) -> ApprovalRecord:
    """A pending command approval of a (recorded, never run) task, as a waiting task leaves it."""
    profile.ensure()
    store = Store(profile.db_path)
    try:
        task = TaskRecords(store).create(
            project=project, owner=None, mode=TaskMode.BUILD, prompt="p", permission_level=PermissionLevel.WORKSPACE,
            model=None, engine_id="eng_cli",
        )  # fmt: skip
        return Approvals(store).request(task.id, None, "command", {"argv": argv, "cwd": str(project)})
    finally:
        store.close()


# -- approvals, approve, deny (ENG-07) -----------------------------------------------------------


@pytest.mark.req("ENG-07")
def test_approvals_lists_the_exact_command_and_cwd_and_approve_resolves_it_once(
    home: Path, profile: Profile, project: Path
) -> None:
    empty = cli(home, "approvals")
    assert empty.returncode == 0 and "no pending approvals" in empty.stdout
    argv = ["python3", "-m", "pytest", "-k", "two words"]
    made = parked_approval(profile, project, argv)

    listed = cli(home, "--json", "approvals")
    assert listed.returncode == 0
    [shown] = json.loads(listed.stdout)["approvals"]
    assert shown["id"] == made.id and shown["action"] == {"argv": argv, "cwd": str(project)}
    text = cli(home, "approvals").stdout
    assert made.id in text and "python3 -m pytest -k two words" in text and str(project) in text

    approved = cli(home, "approve", made.id)
    assert approved.returncode == 0 and f"{made.id} approved" in approved.stdout
    again = cli(home, "approve", made.id)
    assert again.returncode == 3 and "already approved" in again.stderr and again.stdout == ""
    assert "no pending approvals" in cli(home, "approvals").stdout


@pytest.mark.req("ENG-07")
def test_deny_resolves_one_approval_and_an_unknown_id_fails(home: Path, profile: Profile, project: Path) -> None:
    first = parked_approval(profile, project, ["make", "deploy"])
    second = parked_approval(profile, project, ["make", "test"])
    denied = cli(home, "--json", "deny", first.id)
    assert denied.returncode == 0 and json.loads(denied.stdout)["status"] == "denied"
    remaining = json.loads(cli(home, "--json", "approvals").stdout)["approvals"]
    assert [a["id"] for a in remaining] == [second.id]
    unknown = cli(home, "deny", "appr_000000000000")
    assert unknown.returncode == 1 and "no approval 'appr_000000000000'" in unknown.stderr
    resolved = cli(home, "deny", first.id)
    assert resolved.returncode == 3 and "already denied" in resolved.stderr


# -- run and jobs (ENG-08) ----------------------------------------------------------------------


@pytest.mark.req("ENG-08")
def test_run_detach_without_a_headless_engine_exits_2_and_names_the_fix(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [DONE_TURN]}])
    refused = cli(home, "run", "--detach", "do it", workspace=project)
    assert refused.returncode == 2
    assert "shadowcode engine" in refused.stderr and refused.stdout == ""
    assert json.loads(cli(home, "--json", "jobs").stdout)["jobs"] == []


@pytest.mark.req("ENG-08")
def test_run_detach_returns_at_once_and_jobs_follow_streams_the_job_to_its_end(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    (project / "notes.txt").write_text("hello notes\n", encoding="utf-8")
    read = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    argv = [PY, "-c", "print('tail-of-' + 'the-command')"]
    command = {"name": "run_command", "arguments": {"argv": argv}}
    turns = [{"content": "Reading the notes.", "tool_calls": [read]}, {"tool_calls": [command]}, DONE_TURN]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    with headless_engine(home):
        submitted = cli(home, "run", "--detach", "--level", "workspace", "summarise the notes", workspace=project)
        assert submitted.returncode == 0, submitted.stderr
        job_id = submitted.stdout.split()[0]
        assert job_id.startswith("task_") and f"shadowcode jobs {job_id} --follow" in submitted.stdout
        status = json.loads(cli(home, "--json", "jobs", job_id).stdout)["job"]["status"]
        assert status in ("queued", "running", "waiting")  # the command came back before the work was done

        follower = subprocess.Popen(
            [PY, "-m", "shadowcode", "jobs", job_id, "--follow"],
            env=cli_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        try:
            [approval] = wait_for_sync(
                lambda: json.loads(cli(home, "--json", "approvals").stdout)["approvals"], timeout=20, what="approval"
            )
            assert follower.poll() is None  # still following a job that is not finished
            assert cli(home, "approve", approval["id"]).returncode == 0
            lines, err = follower.communicate(timeout=30)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.communicate(timeout=10)
        assert follower.returncode == 0, err
        waiting = f"waiting for approval {approval['id']}"
        expected = ["asking scripted", "model: Reading the notes.", "→ read_file", waiting, "→ exit 0",
                    "| tail-of-the-command", "✓ done", "all finished"]  # fmt: skip
        positions = [lines.find(text) for text in expected]
        assert -1 not in positions and positions == sorted(positions), lines
        listed = cli(home, "jobs")
        assert job_id in listed.stdout and "done" in listed.stdout


@pytest.mark.req("ENG-05", "ENG-08")
def test_run_without_a_configured_model_exits_2_and_names_the_fix(home: Path, project: Path) -> None:
    refused = cli(home, "run", "--level", "read_only", "look around", workspace=project)
    assert refused.returncode == 2
    assert "no model is configured" in refused.stderr and "shadowcode models add" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""


@pytest.mark.req("ENG-08")
def test_run_in_the_foreground_follows_the_task_and_exits_0_when_it_is_done(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [DONE_TURN]}])
    done = cli(home, "run", "--level", "read_only", "look around", workspace=project)
    assert done.returncode == 0, done.stderr
    assert "started (build, read_only)" in done.stdout and "✓ done" in done.stdout and "all finished" in done.stdout
    job_id = done.stdout.split()[0]
    shown = cli(home, "--json", "jobs", job_id)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert set(doc) == {"job", "events"}
    assert set(doc["job"]) == {"id", "mode", "status", "prompt", "permission_level", "model", "created_at",
                               "finished_at", "answer", "error"}  # fmt: skip
    assert doc["job"]["id"] == job_id and doc["job"]["status"] == "done" and doc["job"]["answer"] == "all finished"
    kinds = [e["kind"] for e in doc["events"]]
    assert kinds[0] == "task.queued" and kinds[-1] == "task.done"


@pytest.mark.req("ENG-08")
def test_run_in_the_foreground_exits_1_when_the_task_fails(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [{"error": "the model fell over"}]}])
    failed = cli(home, "run", "--level", "read_only", "look around", workspace=project)
    assert "✗ failed" in failed.stdout and "the model fell over" in failed.stdout
    assert failed.returncode == 1
    job_id = json.loads(cli(home, "--json", "jobs").stdout)["jobs"][0]["id"]
    followed = cli(home, "jobs", job_id, "--follow")
    assert followed.returncode == 1 and "✗ failed" in followed.stdout


@pytest.mark.req("ENG-08")
def test_run_lowers_the_level_to_the_projects_and_refuses_a_bad_mode(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [DONE_TURN]}])
    lowered = cli(home, "run", "--level", "elevated", "go", workspace=project)
    assert lowered.returncode == 0, lowered.stderr
    assert "(build, workspace)" in lowered.stdout and "note: permission level lowered" in lowered.stdout
    bad = cli(home, "run", "--mode", "deploy", "go", workspace=project)
    assert bad.returncode == 2 and "--mode" in bad.stderr


@pytest.mark.req("ENG-07", "ENG-08")
def test_a_foreground_run_waits_for_an_approval_given_from_another_cli_process(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    argv = [PY, "-c", "print('approved command ran')"]
    turns = [{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}, DONE_TURN]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    proc = subprocess.Popen(
        [PY, "-m", "shadowcode", "--workspace", str(project), "run", "--level", "workspace", "run it"],
        env=cli_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:

        def pending() -> list[dict[str, Any]]:
            return list(json.loads(cli(home, "--json", "approvals").stdout)["approvals"])

        [approval] = wait_for_sync(pending, timeout=20, what="the run's approval")
        assert approval["action"] == {"argv": argv, "cwd": str(project)}
        assert cli(home, "approve", approval["id"]).returncode == 0
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert f"waiting for approval {approval['id']}" in out
    assert "→ exit 0" in out and "approved command ran" in out and "✓ done" in out
