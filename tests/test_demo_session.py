"""The README's main job stays true: the demo session inspects, delegates and rolls back (PKG-02).

``docs/examples/demo_session.py`` is run against the source tree (``python -m shadowcode``),
with its temporary folders under this test's own ``tmp_path``; its transcript must name every
step of the delegation in order. The fast tests keep the demo's model script in step with the
demo and check that its project comparison can fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "docs" / "examples" / "demo_session.py"

DEMO_SECONDS = 100
"""Bound on the whole demo run from source, below pytest's 120 s timeout."""


def _load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shadowcode_demo_session", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


demo = _load_demo()

# The transcript's landmarks, in the order the steps happen.
STEPS = (
    "trust --level workspace",
    "models add demo --provider scripted",
    "mcp serve --allow-write --allow-approvals",
    "connected with the official MCP Python SDK client",
    "== shadow_understand",
    "== shadow_sqlite",
    "== shadow_run: delegate a Build task at permission level workspace",
    ": queued at workspace",
    "== shadow_jobs get: the job is waiting",
    "edit_file notebook/__init__.py",
    "wrote notebook/__init__.py",
    "pending approval appr_",
    "== shadow_approve appr_",
    "In normal use the person approves, at the terminal: shadowcode approve appr_",
    "-> approved",
    "== shadow_jobs get, followed until the job finished",
    "exit 0, output: notebook 0.2.0",
    "== the file the task wrote, notebook/__init__.py",
    '+ __version__ = "0.2.0"',
    "== shadow_checkpoint: 1 checkpoint(s) of job task_",
    "notebook/__init__.py: write, sha256",
    "(the original's hash)",
    "== shadow_rollback task_",
    "restored: notebook/__init__.py",
    "== notebook/__init__.py after the rollback",
    "(byte for byte the original)",
    "the project is as it was",
    "done: the server exited with its client",
)


@pytest.mark.slow
@pytest.mark.req("PKG-02", "SRV-11", "SRV-15", "SRV-16", "SRV-18", "ENG-06")
def test_demo_session_delegates_approves_and_rolls_back_from_source(tmp_path: Path) -> None:
    target = shlex.join([sys.executable, "-m", "shadowcode"])
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, str(DEMO), "--target", target],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=DEMO_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "demo failed" not in done.stderr
    position = 0
    for step in STEPS:
        found = done.stdout.find(step, position)
        assert found >= 0, f"the transcript lacks {step!r} after position {position}:\n{done.stdout}"
        position = found + len(step)
    assert "Traceback" not in done.stdout + done.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("shadowcode-demo")] == []


def test_demo_script_matches_the_prompt_and_writes_the_line_the_demo_checks() -> None:
    script = yaml.safe_load(demo.SCRIPT.read_text(encoding="utf-8"))
    entries = [e for e in script["tasks"] if re.search(e["match"], demo.PROMPT)]
    assert len(entries) == 1
    calls = [c for turn in entries[0]["turns"] for c in turn.get("tool_calls", [])]
    assert [c["name"] for c in calls] == ["read_file", "edit_file", "run_command"]
    edit = calls[1]["arguments"]
    assert edit["path"] == demo.EDITED
    assert demo.VERSION_LINE in edit["new"]
    assert demo.VERSION_LINE not in (demo.SCRIPT.parents[1] / "projects" / "sample" / demo.EDITED).read_text(
        encoding="utf-8"
    )
    assert calls[2]["arguments"]["argv"][:2] == ["python3", "-B"], "the command must leave no bytecode behind"


def test_demo_comparison_fails_on_any_difference_but_the_sqlite_sidecar() -> None:
    initial = {"data": None, "data/app.db": b"db", "notebook": None, "notebook/__init__.py": b"x"}
    before_run = {**initial, demo.SQLITE_SIDECAR: b"shm"}
    demo._compare(initial, before_run, dict(before_run))
    for after in (
        {**before_run, "notebook/__init__.py": b"y"},
        {**before_run, "notebook/new.py": b""},
        {k: v for k, v in before_run.items() if k != "notebook/__init__.py"},
        {**before_run, "notebook/__pycache__": None},
    ):
        with pytest.raises(demo.DemoFailed, match="before shadow_run"):
            demo._compare(initial, before_run, after)
    changed_early = {**initial, "data/app.db": b"changed"}
    with pytest.raises(demo.DemoFailed, match="before the server started"):
        demo._compare(initial, changed_early, dict(changed_early))
    with pytest.raises(demo.DemoFailed, match="never started"):
        demo._compare(initial, {}, dict(initial))


def test_demo_snapshot_records_folders_files_and_symlinks_without_following(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_bytes(b"content")
    (tmp_path / "link").symlink_to("d")
    assert demo.snapshot(tmp_path) == {"d": None, "d/f.txt": b"content", "link": b"-> d"}
