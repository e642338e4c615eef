"""A headless engine killed with SIGKILL leaves nothing that looks alive (ENG-07, ENG-08).

Whatever phase a job was in (queued, asking the model, waiting for an approval, running an
approved command), after a restart it reads ``interrupted`` with the reason, its approvals are
expired with that reason (``approve`` exits 3 and says so, ``approvals`` never lists them), no
child process is left, the checkpoint of a write it made still rolls back, and the profile's
database passes ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.tasks import ORPHAN_REASON
from shadowcode.profile import Profile
from shadowcode.store import Store
from tests.support.engine import (
    PY,
    HeadlessEngine,
    cli,
    group_gone,
    headless_engine,
    scripted_model,
    sleeper_argv,
    wait_for_sync,
)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
    pytest.mark.req("ENG-07", "ENG-08"),
]

DONE_TURN = {"content": "finished"}
SLOW_TURN = {"content": "late", "delay_seconds": 60}


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


def detach(home: Path, project: Path, prompt: str) -> str:
    done = cli(home, "--json", "run", "--detach", "--level", "workspace", prompt, workspace=project)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["job_id"])


def status_of(profile: Profile, task_id: str) -> str:
    with closing(Store(profile.db_path)) as store:
        task = store.tasks.get(task_id)
    assert task is not None
    return str(task.status)


def pending_of(home: Path, task_id: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        listed = json.loads(cli(home, "--json", "approvals").stdout)["approvals"]
        return next((a for a in listed if a["task_id"] == task_id), None)

    return wait_for_sync(find, timeout=30, what=f"an approval of {task_id}")  # type: ignore[no-any-return]


def killed_while(home: Path, setup: Any) -> Any:
    """Start an engine, run ``setup(engine)`` (it leaves work in the phase to test), SIGKILL the engine."""
    engine = HeadlessEngine(home)
    try:
        engine.wait_ready()
        found = setup(engine)
        engine.kill()
    finally:
        engine.close()
    return found


def assert_interrupted(home: Path, profile: Profile, job: str) -> None:
    assert status_of(profile, job) == "interrupted"
    shown = json.loads(cli(home, "--json", "jobs", job).stdout)
    assert shown["job"]["status"] == "interrupted" and shown["job"]["error"] == ORPHAN_REASON
    assert shown["events"][-1]["kind"] == "task.interrupted"
    with closing(Store(profile.db_path)) as store:
        assert store.approvals.pending(task_id=job) == []


def assert_database_sound(profile: Profile) -> None:
    with closing(sqlite3.connect(profile.db_path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_killed_while_waiting_for_approval_the_approval_expires_and_the_write_rolls_back(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("before\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "after\n"}}
    command = {"name": "run_command", "arguments": {"argv": [PY, "-c", "print('never')"]}}
    scripted_model(
        profile, tmp_path / "s.json", [{"match": "", "turns": [{"tool_calls": [write]}, {"tool_calls": [command]}]}]
    )

    def park(engine: HeadlessEngine) -> tuple[str, dict[str, Any]]:
        job = detach(home, project, "write then wait")
        approval = pending_of(home, job)
        assert status_of(profile, job) == "waiting"
        assert (project / "a.txt").read_text(encoding="utf-8") == "after\n"
        return job, approval

    job, approval = killed_while(home, park)
    # No engine runs now: the CLI's own temporary engine sweeps, as a restarted headless one does.
    listed = cli(home, "--json", "approvals")
    assert listed.returncode == 0 and json.loads(listed.stdout)["approvals"] == []
    with headless_engine(home):
        assert_interrupted(home, profile, job)
        assert "no pending approvals" in cli(home, "approvals").stdout
        approved = cli(home, "approve", approval["id"])
        assert approved.returncode == 3 and approved.stdout == ""
        assert "already expired" in approved.stderr and ORPHAN_REASON in approved.stderr
        denied = cli(home, "--json", "deny", approval["id"])
        assert denied.returncode == 3 and "already expired" in denied.stderr
        with closing(Store(profile.db_path)) as store:
            row = store.approvals.get(approval["id"])
        assert row is not None and row.status == "expired" and row.reason == ORPHAN_REASON
        rolled = cli(home, "--json", "rollback", job, "--yes", workspace=project)
        assert rolled.returncode == 0, rolled.stderr
        assert json.loads(rolled.stdout)["restored"] == ["a.txt"]
    assert (project / "a.txt").read_text(encoding="utf-8") == "before\n"
    assert_database_sound(profile)


def test_killed_while_jobs_are_queued_and_asking_the_model_they_read_interrupted(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [SLOW_TURN]}])

    def crowd(engine: HeadlessEngine) -> list[str]:
        # Four run at once (TASKS_RUNNING_MAX); the fifth waits in the queue.
        jobs = [detach(home, project, f"slow {n}") for n in range(5)]
        wait_for_sync(
            lambda: (
                sorted(status_of(profile, j) for j in jobs) == ["queued", "running", "running", "running", "running"]
            ),
            timeout=30,
            what="four running jobs and one queued",
        )
        return jobs

    jobs = killed_while(home, crowd)
    with headless_engine(home):
        for job in jobs:
            assert_interrupted(home, profile, job)
    assert_database_sound(profile)


def test_killed_while_an_approved_command_runs_no_child_is_left(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    command = {"name": "run_command", "arguments": {"argv": sleeper_argv(pidfile, seconds=120)}}
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [{"tool_calls": [command]}, DONE_TURN]}])

    def start(engine: HeadlessEngine) -> tuple[str, int]:
        job = detach(home, project, "run the sleeper")
        approval = pending_of(home, job)
        assert cli(home, "approve", approval["id"]).returncode == 0
        text = wait_for_sync(lambda: pidfile.exists() and pidfile.read_text(encoding="utf-8"), what="the child's pid")
        return job, int(text)

    job, child = killed_while(home, start)
    wait_for_sync(lambda: group_gone(child), timeout=30, what="the command's process group to end")
    with headless_engine(home):
        assert_interrupted(home, profile, job)
    assert_database_sound(profile)
