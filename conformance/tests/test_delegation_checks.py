"""The delegation and engine-lifecycle checks fail targets that do not do the work they promise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from check_runs import SUITE, run_check, sample_project

from shadowcode_conformance.checks.delegation import settled_status
from shadowcode_conformance.context import Context
from shadowcode_conformance.report import CheckRecord

# A target that accepts trust and models, serves MCP, and lies about delegated work: every job
# is "done" at once without asking for an approval, any number of jobs is accepted, and its
# `engine` exits at once.
FAKE_TARGET = r"""
import json, os, sys
args = sys.argv[1:]
home = os.environ["SHADOWCODE_HOME"]
jobs = []

def reply(ident, structured, is_error=False):
    result = {"content": [{"type": "text", "text": json.dumps(structured)}],
              "structuredContent": structured, "isError": is_error}
    return {"jsonrpc": "2.0", "id": ident, "result": result}

def call(name, arguments):
    if name == "shadow_run":
        jobs.append("job_%d" % (len(jobs) + 1))
        level = arguments.get("permission_level", "read_only")
        return {"job_id": jobs[-1], "status": "queued", "permission_level": level, "notes": []}
    if name == "shadow_jobs" and arguments.get("action") == "get":
        return {"job": {"id": arguments.get("job_id"), "status": "done"}, "events": [],
                "next_cursor": None, "pending_approvals": []}
    if name == "shadow_jobs":
        return {"jobs": [{"id": j, "status": "done"} for j in jobs]}
    if name == "shadow_status":
        return {"engine": {"mode": "somewhere"}, "project": {"level": "workspace"}}
    return {}

if "mcp" in args and "serve" in args:
    for raw in sys.stdin:
        msg = json.loads(raw)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "fake", "version": "0"}}
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        elif msg["method"] == "tools/call":
            out = reply(msg["id"], call(msg["params"]["name"], msg["params"].get("arguments") or {}))
        else:
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
elif "models" in args:
    folder = os.path.join(home, "profiles", "default")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "settings.json"), "w", encoding="utf-8") as f:
        json.dump({"models": [{"name": "scripted", "provider": "scripted"}]}, f)
elif args[-2:] == ["engine", "status"]:
    print(json.dumps({"running": False}))
    sys.exit(3)
elif "jobs" in args:
    print(json.dumps({"job": {"status": "done"}}))
"""


@pytest.fixture
def lying_target(tmp_path: Path) -> list[str]:
    script = tmp_path / "lying_target.py"
    script.write_text(FAKE_TARGET, encoding="utf-8")
    return [sys.executable, str(script)]


def _run(name: str, target: list[str]) -> list[CheckRecord]:
    return run_check(name, target, sample_project)


@pytest.mark.req("SRV-21", "SRV-23", "SRV-24", "ENG-03", "ENG-08")
@pytest.mark.parametrize(
    ("name", "ident"),
    [
        ("delegation:stdin_eof_cancels_task", "SRV-21"),
        ("delegation:sigkill_cancels_task", "SRV-21"),
        ("delegation:detached_task_survives_owner_eof", "ENG-08"),
        ("delegation:owner_job_limit", "SRV-24"),
        ("engine_lifecycle:background_outlives_owner", "SRV-23"),
        ("engine_lifecycle:restart_keeps_state", "ENG-03"),
    ],
)
def test_checks_fail_a_target_that_refuses_every_command(name: str, ident: str) -> None:
    records = _run(name, ["false"])
    assert ident in records[0].covers
    assert not records[0].ok
    assert "`trust --level " in records[0].detail


@pytest.mark.req("SRV-21", "SRV-22")
def test_eof_check_fails_a_target_whose_task_never_waits_for_approval(lying_target: list[str]) -> None:
    [record] = _run("delegation:stdin_eof_cancels_task", lying_target)
    assert not record.ok
    assert "before asking for approval" in record.detail


@pytest.mark.req("SRV-21", "SRV-22", "CONF-03")
def test_sigkill_check_fails_a_target_whose_task_never_waits_for_approval(
    lying_target: list[str],
) -> None:
    [record] = _run("delegation:sigkill_cancels_task", lying_target)
    assert not record.ok
    assert "before asking for approval" in record.detail


@pytest.mark.req("SRV-24")
def test_job_limit_check_fails_a_target_that_accepts_a_65th_job(lying_target: list[str]) -> None:
    [record] = _run("delegation:owner_job_limit", lying_target)
    assert not record.ok
    assert "job 65 was accepted" in record.detail


@pytest.mark.req("ENG-03", "ENG-08")
@pytest.mark.parametrize(
    "name",
    [
        "engine_lifecycle:restart_keeps_state",
        "engine_lifecycle:second_engine_refused",
        "delegation:detached_task_survives_owner_eof",
        "engine_lifecycle:owner_socket_limit",
    ],
)
def test_engine_checks_fail_a_target_whose_engine_never_runs(lying_target: list[str], name: str) -> None:
    records = _run(name, lying_target)
    assert not records[0].ok
    assert "did not become ready" in records[0].detail


@pytest.mark.req("SRV-23")
def test_background_check_fails_a_target_whose_task_never_asks_to_start_one(lying_target: list[str]) -> None:
    [record] = _run("engine_lifecycle:background_outlives_owner", lying_target)
    assert not record.ok
    assert "temporary engine: job job_1 ended" in record.detail


@pytest.mark.req("ENG-03")
def test_attach_check_fails_a_server_that_reports_no_temporary_engine(lying_target: list[str]) -> None:
    [record] = _run("engine_lifecycle:frontends_report_attached", lying_target)
    assert not record.ok
    assert "'somewhere', not temporary" in record.detail


def _node_ready() -> bool:
    return shutil.which("node") is not None and (SUITE / "node_probes" / "node_modules").is_dir()


@pytest.mark.req("CONF-02")
@pytest.mark.skipif(not _node_ready(), reason="node or shadowcode_conformance/node_probes/node_modules is missing")
@pytest.mark.parametrize("probe", ["jobs_sdk1", "jobs_sdk2"])
def test_jobs_probe_refuses_bad_usage_with_exit_2(probe: str) -> None:
    script = SUITE / "node_probes" / "probes" / f"{probe}.mjs"
    done = subprocess.run(
        ["node", str(script), "--request-log"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        encoding="utf-8",
    )
    assert done.returncode == 2
    assert "usage:" in done.stderr and done.stdout == ""


@pytest.mark.req("CONF-02", "SRV-17")
@pytest.mark.skipif(not _node_ready(), reason="node or shadowcode_conformance/node_probes/node_modules is missing")
def test_jobs_probe_fails_a_target_that_never_asks_for_approval(lying_target: list[str]) -> None:
    records = _run("delegation:jobs_sdk1", lying_target)
    assert not records[0].ok
    by_name = {r.name: r for r in records[1:]}
    assert by_name["jobs_sdk1:connect"].ok
    assert not by_name["jobs_sdk1:build_job_reads_and_writes"].ok
    assert not by_name["jobs_sdk1:test_job_needs_exact_approval"].ok
    assert not by_name["jobs_sdk1:rollback_restores_the_file"].ok
    assert not by_name["jobs_sdk1:build_model_requests_logged"].ok


# A target whose `jobs ID` says `running` for its first READS reads, then `cancelled`: a job whose
# row is written once the engine's cleanup ends.
SLOW_CANCEL_TARGET = r"""
import json, os, sys
count = os.path.join(os.environ["SHADOWCODE_HOME"], "reads")
reads = int(open(count, encoding="utf-8").read()) if os.path.exists(count) else 0
open(count, "w", encoding="utf-8").write(str(reads + 1))
print(json.dumps({"job": {"status": "running" if reads < int(os.environ["READS"]) else "cancelled"}}))
"""


def _settled(tmp_path: Path, reads: int, seconds: float) -> tuple[str, int]:
    script = tmp_path / "slow_cancel.py"
    script.write_text(SLOW_CANCEL_TARGET, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    ctx = Context(
        target=[sys.executable, str(script)],
        home=home,
        project=tmp_path,
        scratch=tmp_path,
        env={**os.environ, "SHADOWCODE_HOME": str(home), "READS": str(reads)},
        cwd=tmp_path,
        repo_root=SUITE,
        deadline=time.monotonic() + 60,
    )
    status = anyio.run(settled_status, ctx, "task_1", seconds)
    return status, int((home / "reads").read_text(encoding="utf-8"))


@pytest.mark.req("SRV-21", "SRV-22", "CONF-03")
def test_a_cancelled_job_is_read_again_until_its_row_says_so(tmp_path: Path) -> None:
    assert _settled(tmp_path, reads=2, seconds=30) == ("cancelled", 3)


@pytest.mark.req("SRV-21", "SRV-22", "CONF-03")
def test_a_job_that_stays_running_is_reported_running_once_the_wait_is_over(tmp_path: Path) -> None:
    status, reads = _settled(tmp_path, reads=1_000, seconds=1.0)
    assert status == "running"
    assert reads >= 2
