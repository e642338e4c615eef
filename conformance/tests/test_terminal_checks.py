"""The terminal checks fail targets that do not do what they promise (shadowcode_conformance/checks/terminal.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from check_runs import run_check, sample_project

from shadowcode_conformance.report import CheckRecord

# A target whose Build task writes the file, whose rollback never asks, and whose killed engine
# leaves a pending approval that `approve` accepts: the bugs the terminal checks look for.
FAKE_TARGET = r"""
import json, os, sys, time
args = sys.argv[1:]
project = args[args.index("--workspace") + 1] if "--workspace" in args else "."
render = os.path.join(project, "notebook", "render.py")
approval = {"id": "appr_1", "task_id": "job_1", "kind": "command", "status": "pending",
            "action": {"argv": ["sleep", "60"], "cwd": project}}
if args[-2:] == ["engine", "status"]:
    print(json.dumps({"running": True}))
elif args[-1:] == ["engine"]:
    time.sleep(120)
elif "models" in args:
    folder = os.path.join(os.environ["SHADOWCODE_HOME"], "profiles", "default")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "settings.json"), "w", encoding="utf-8") as f:
        json.dump({"models": [{"name": "scripted", "provider": "scripted"}]}, f)
elif "trust" in args:
    pass
elif "run" in args and "--detach" in args:
    print(json.dumps({"job_id": "job_1", "status": "queued"}))
elif "run" in args:
    with open(render, "w", encoding="utf-8") as f:
        f.write("changed\n")
    print(json.dumps({"id": "job_1", "status": "done"}))
elif "rollback" in args:
    print(json.dumps({"task_id": "job_1", "restored": [], "removed": []}))
elif "why" in args:
    print(json.dumps({"entries": []}))
elif "approvals" in args:
    print(json.dumps({"approvals": [approval]}))
elif "approve" in args:
    print("appr_1 approved")
elif "jobs" in args:
    print(json.dumps({"job": {"id": "job_1", "status": "waiting"}, "events": []}))
"""


@pytest.fixture
def fake_target(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_target.py"
    script.write_text(FAKE_TARGET, encoding="utf-8")
    return [sys.executable, str(script)]


def _run(name: str, target: list[str]) -> list[CheckRecord]:
    return run_check(name, target, sample_project)


@pytest.mark.req("ENG-06", "SRV-18", "SRV-19")
def test_the_rollback_check_fails_a_target_that_never_asks_and_never_restores(fake_target: list[str]) -> None:
    [record] = _run("terminal:build_rollback_why", fake_target)
    assert not record.ok
    assert "stdin not a terminal exited 0" in record.detail
    assert "did not restore notebook/render.py" in record.detail
    assert "does not show the rollback then the write" in record.detail


@pytest.mark.req("ENG-07", "ENG-08")
def test_the_sigkill_check_fails_a_target_that_keeps_a_dead_engines_approval(fake_target: list[str]) -> None:
    [record] = _run("terminal:sigkill_waiting_approval", fake_target)
    assert not record.ok
    assert "not 'interrupted'" in record.detail
    assert "still lists appr_1" in record.detail and "exited 0" in record.detail
