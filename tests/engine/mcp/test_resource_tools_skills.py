"""Build tasks listing and reading skills served over MCP, with the skills fixture server.

Covers CW-09.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import Access, ApprovalRecord, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from tests.support.engine import enable_server, trust_workspace
from tests.support.mcp_client import PY, REPO, events_of, finished, project_definition, running, scripted, wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-09"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)
SKILLS_SERVER = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "skills_server.py"
PDF = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": n, "arguments": a}]} for i, (n, a) in enumerate(calls)
    ]
    return [*turns, {"content": "finished"}]


async def _approve(core: LocalEngine, task_id: str) -> ApprovalRecord:
    approvals = core.state.approvals
    pending = await wait_for(lambda: approvals.pending(task_id=task_id), seconds=120, what="a pending approval")
    approvals.resolve(pending[0].id, "approve", by="test")
    return pending[0]


def _setup(engine: LocalEngine, project_dir: Path, variant: str, log: Path) -> tuple[Project, str]:
    project = trust_workspace(engine, project_dir)
    argv = [PY, str(SKILLS_SERVER), "--variant", variant, "--log", str(log)]
    def_id = project_definition(project_dir, "skills", {"name": "skills", "command": argv})
    enable_server(engine, project, def_id)
    return project, def_id


async def _run(engine: LocalEngine, project: Project, tmp: Path, calls: list[Any], approvals: int) -> tuple[Any, Any]:
    scripted(engine, tmp, [{"match": "skills", "turns": _calls(*calls)}])
    async with running(engine, seconds=300) as core:
        request = TaskRequest("use the skills", TaskMode.BUILD, PermissionLevel.WORKSPACE)
        task_id = (await core.task_submit(request, Caller(project=project.path, access=WRITE))).job_id
        seen = [(await _approve(core, task_id)).action for _ in range(approvals)]
        task = await finished(core, task_id, seconds=120)
        events = events_of(core, task_id)
    assert task.status == "done", task
    return seen, events


async def test_a_task_lists_skills_without_reading_them_and_reads_a_skill_file_verified(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "reads.log"
    project, def_id = _setup(engine, project_dir, "good", log)
    calls = [
        ("mcp_resources", {"server": "skills"}),
        ("mcp_read_resource", {"server": "skills", "uri": "skill://pdf-processing/unlisted.md"}),
        ("mcp_read_resource", {"server": "skills", "uri": PDF}),
    ]
    seen, events = await _run(engine, project, tmp_path, calls, 1)
    assert seen == [{"server": def_id, "uri": PDF}]
    results = [e.data for e in events if e.kind == "tool.result"]
    assert [r["ok"] for r in results] == [True, False, True]
    listed = next(e.data for e in events if e.kind == "mcp.skills")
    assert listed["kept"] == [PDF, "skill://acme/billing/refunds/SKILL.md"]
    assert [s["uri"] for s in listed["skipped"]] == ["skill://reports/daily/SKILL.md"]
    assert "is not one of its listed files; nothing was sent" in results[1]["summary"]
    assert '"verified": true' in results[2]["summary"] or "pdf-processing" in results[2]["summary"]
    verified = [e.data for e in events if e.kind == "mcp.result"]
    assert verified == [{"server": def_id, "uri": PDF, "skill": PDF, "contents": 1, "verified": True}]
    assert log.read_text(encoding="utf-8").split() == [PDF], "only the approved SKILL.md was read"


async def test_a_task_refuses_a_skill_file_whose_digest_does_not_match_and_loads_none_of_it(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, def_id = _setup(engine, project_dir, "wrong-digest", tmp_path / "reads.log")
    calls = [("mcp_read_resource", {"server": "skills", "uri": FORMS})]
    seen, events = await _run(engine, project, tmp_path, calls, 1)
    assert seen == [{"server": def_id, "uri": FORMS}]
    results = [e.data for e in events if e.kind == "tool.result"]
    assert [r["ok"] for r in results] == [False]
    assert "its SHA-256 digest is not the listed one" in results[0]["summary"]
    refused = [e.data for e in events if e.kind == "mcp.skill_refused"]
    assert len(refused) == 1 and refused[0]["skill"] == PDF
    everything = json.dumps([e.data for e in events])
    assert "EVERY field" not in everything, "the tampered content reached the task"
    assert not [e for e in events if e.kind == "mcp.result"]
