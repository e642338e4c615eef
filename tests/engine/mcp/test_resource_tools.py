"""Build tasks using the resource and prompt helpers, and seeing a server's tools change, with real servers.

Covers CW-05, CW-06.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import Access, ApprovalRecord, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.resource_tools import ResourcePromptTools
from shadowcode.engine.mcp.task_catalog import ServerState
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.limits import MCP_RESOURCES_PAGE_MAX
from shadowcode.mcp.client.connection import ConnectionState
from shadowcode.mcp.client.definitions import ServerDefinition, StdioSpec
from tests.support.engine import enable_server, trust_workspace
from tests.support.mcp_client import (
    PY,
    PYTHON_SDK_SERVER,
    events_of,
    finished,
    project_definition,
    running,
    scripted,
    wait_for,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": n, "arguments": a}]} for i, (n, a) in enumerate(calls)
    ]
    return [*turns, {"content": "finished"}]


async def _submit(core: LocalEngine, project: Project, prompt: str) -> str:
    request = TaskRequest(prompt, TaskMode.BUILD, PermissionLevel.WORKSPACE)
    return (await core.task_submit(request, Caller(project=project.path, access=WRITE))).job_id


async def _approve(core: LocalEngine, task_id: str, decision: str = "approve") -> ApprovalRecord:
    """The task's next pending approval, resolved; waits long, as a loaded machine starts servers slowly."""
    approvals = core.state.approvals
    pending = await wait_for(lambda: approvals.pending(task_id=task_id), seconds=120, what="a pending approval")
    approvals.resolve(pending[0].id, decision, by="test")
    return pending[0]


def _results(core: LocalEngine, task_id: str) -> list[dict[str, Any]]:
    return [e.data for e in events_of(core, task_id) if e.kind == "tool.result"]


def _setup(engine: LocalEngine, project_dir: Path, *extra: str) -> tuple[Project, str]:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "py", {"name": "py", "command": [PY, str(PYTHON_SDK_SERVER), *extra]})
    enable_server(engine, project, def_id)
    return project, def_id


@pytest.mark.req("CW-06")
async def test_a_build_task_lists_without_approval_and_reads_and_gets_prompts_after_exact_approvals(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, def_id = _setup(engine, project_dir)
    calls = _calls(
        ("mcp_resources", {}),
        ("mcp_resources", {"server": "py", "page": 0}),
        ("mcp_get_prompt", {"server": "py", "prompt": "review", "arguments": {"colour": "red"}}),
        ("mcp_get_prompt", {"server": "py", "prompt": "review", "arguments": {"style": "long"}}),
        ("mcp_get_prompt", {"server": "py", "prompt": "nope", "arguments": {}}),
        ("mcp_read_resource", {"server": "py", "uri": "fixture://greeting"}),
        ("mcp_get_prompt", {"server": "py", "prompt": "review", "arguments": {"code": "x = 1"}}),
        ("mcp_read_resource", {"server": "py", "uri": "fixture://sized/5"}),
        ("mcp_resources", {"server": "py", "page": -1}),
    )
    scripted(engine, tmp_path, [{"match": "use the helpers", "turns": calls}])
    async with running(engine, seconds=300) as core:
        task_id = await _submit(core, project, "use the helpers")
        seen = [(await _approve(core, task_id)).action for _ in range(2)]
        denied = await _approve(core, task_id, "deny")
        task = await finished(core, task_id, seconds=120)
    assert task.status == "done", task
    assert seen == [
        {"server": def_id, "uri": "fixture://greeting"},
        {"server": def_id, "prompt": "review", "arguments": {"code": "x = 1"}},
    ]
    assert denied.kind == "mcp_read_resource" and denied.action == {"server": def_id, "uri": "fixture://sized/5"}
    results = _results(core, task_id)
    assert [r["ok"] for r in results] == [True, True, False, False, False, True, True, False, False]
    # Summaries are cut at 500 characters: look for what comes first.
    assert f'"id": "{def_id}"' in results[0]["summary"] and "fixture://greeting" in results[0]["summary"]
    assert "fixture://sized/{size}" in results[1]["summary"]
    assert "declares no argument 'colour'" in results[2]["summary"]
    assert "requires 'code'" in results[3]["summary"]
    assert "has no prompt 'nope'" in results[4]["summary"]
    assert "hello from the fixture" in results[5]["summary"]
    assert "Review this code (short): x = 1" in results[6]["summary"]
    assert "did not approve" in results[7]["summary"]
    assert "page must be 0 or more" in results[8]["summary"]
    kinds_seen = [e.kind for e in events_of(core, task_id)]
    assert kinds_seen.count("mcp.read_resource") == 1 and kinds_seen.count("mcp.get_prompt") == 1
    assert kinds_seen.count("mcp.connected") == 1


@pytest.mark.req("CW-05")
async def test_a_build_task_sees_added_and_removed_tools_and_a_call_resolved_before_a_change_is_refused(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, def_id = _setup(engine, project_dir, "--changing", "--legacy")
    calls = _calls(
        ("mcp_call", {"server": "py", "tool": "grow", "arguments": {"name": "later"}}),
        ("mcp__py__later", {"text": "offered now"}),
        ("mcp_call", {"server": "py", "tool": "shrink", "arguments": {"name": "later"}}),
        ("mcp__py__later", {"text": "gone"}),
        ("mcp_call", {"server": "py", "tool": "later", "arguments": {"text": "gone"}}),
        ("mcp_call", {"server": "py", "tool": "grow", "arguments": {"name": "again", "delay": 0.5}}),
        ("mcp_call", {"server": "py", "tool": "echo", "arguments": {"text": "resolved before"}}),
        ("mcp_call", {"server": "py", "tool": "echo", "arguments": {"text": "retried"}}),
    )
    scripted(engine, tmp_path, [{"match": "watch the tools", "turns": calls}])
    async with running(engine, seconds=300) as core:
        task_id = await _submit(core, project, "watch the tools")
        actions = [(await _approve(core, task_id)).action for _ in range(4)]
        stale = await wait_for(
            lambda: core.state.approvals.pending(task_id=task_id), seconds=120, what="the echo approval"
        )
        # The server adds a tool while the echo call waits for its approval.
        changed = [e for e in events_of(core, task_id) if e.kind == "mcp.tools_changed"]
        await wait_for(
            lambda: len([e for e in events_of(core, task_id) if e.kind == "mcp.tools_changed"]) > len(changed),
            seconds=60,
            what="the delayed change, revalidated",
        )
        assert (project_dir / "grown.flag").exists()
        core.state.approvals.resolve(stale[0].id, "approve", by="test")
        retried = await _approve(core, task_id)
        task = await finished(core, task_id, seconds=120)
    assert task.status == "done", task
    assert [a["tool"] for a in actions] == ["grow", "later", "shrink", "grow"]
    assert stale[0].action["tool"] == "echo" and retried.action["arguments"] == {"text": "retried"}
    results = _results(core, task_id)
    # The removed first-class tool is no longer offered: dispatch answers it without a tool.result.
    assert [r["ok"] for r in results] == [True, True, True, False, True, False, True], results
    assert [e.data["name"] for e in events_of(core, task_id) if e.kind == "tool.call"].count("mcp__py__later") == 1
    assert "offered now" in results[1]["summary"]
    assert "has no tool 'later'" in results[3]["summary"]
    assert "the server's tools changed: retry the call" in results[5]["summary"]
    assert "retried" in results[6]["summary"]
    changes = [e.data for e in events_of(core, task_id) if e.kind == "mcp.tools_changed"]
    assert [c["generation"] for c in changes] == [1, 2, 3] and all(c["server"] == def_id for c in changes)
    calls_sent = [e.data["tool"] for e in events_of(core, task_id) if e.kind == "mcp.call"]
    assert calls_sent == ["grow", "later", "shrink", "grow", "echo"]


@pytest.mark.req("CW-05")
async def test_a_build_task_whose_server_revalidation_fails_stops_offering_its_tools(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, _ = _setup(engine, project_dir, "--changing", "--legacy")
    calls = _calls(
        ("mcp_call", {"server": "py", "tool": "break_listing", "arguments": {}}),
        ("mcp_call", {"server": "py", "tool": "echo", "arguments": {"text": "stale"}}),
        ("mcp_tools", {}),
    )
    scripted(engine, tmp_path, [{"match": "break it", "turns": calls}])
    async with running(engine, seconds=300) as core:
        task_id = await _submit(core, project, "break it")
        await _approve(core, task_id)
        with anyio.fail_after(60):
            task = await finished(core, task_id, seconds=120)
    assert task.status == "done", task
    results = _results(core, task_id)
    assert [r["ok"] for r in results] == [True, False, True]
    assert "revalidating the catalog failed" in results[1]["summary"]
    assert json.loads(results[2]["summary"])["servers"][0]["tools"] is None
    closed = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.closed")
    assert "revalidating the catalog failed" in (closed["error"] or "")


class _Listed:
    """A ready connection stand-in whose lists hold ``count`` entries each."""

    state = ConnectionState.READY

    def __init__(self, count: int) -> None:
        self.count = count

    async def skills(self) -> tuple[list[Any], list[Any]]:
        return [], []

    async def listing(self, kind: str) -> list[dict[str, Any]]:
        key = {"resources": "uri", "templates": "uriTemplate", "prompts": "name"}[kind]
        return [{key: f"{kind}-{i}", "name": f"n{i}", "ignored": True} for i in range(self.count)]


@pytest.mark.req("CW-06")
@pytest.mark.parametrize("count", [MCP_RESOURCES_PAGE_MAX, MCP_RESOURCES_PAGE_MAX + 1])
async def test_mcp_resources_pages_hold_the_page_limit_of_each_list(count: int) -> None:
    spec = StdioSpec(name="p", command=("true",))
    definition = ServerDefinition(id="config:p", scope="config", path=None, sha256="0" * 64, spec=spec)
    server = ServerState(definition)
    server.conn = _Listed(count)  # type: ignore[assignment]
    helpers = ResourcePromptTools()
    helpers._servers = {"p": server}  # noqa: SLF001 - what the mixin's host provides
    helpers._server = lambda key: server  # type: ignore[method-assign]  # noqa: SLF001

    async def ensure(state: ServerState, **_: object) -> Any:
        return state.conn

    helpers._ensure = ensure  # type: ignore[method-assign]  # noqa: SLF001
    first = await helpers.run_helper(None, "mcp_resources", {"server": "p"})  # type: ignore[arg-type]
    assert [len(first[k]) for k in ("resources", "templates", "prompts")] == [MCP_RESOURCES_PAGE_MAX] * 3
    assert first["resources"][0] == {"uri": "resources-0", "name": "n0"}
    if count == MCP_RESOURCES_PAGE_MAX:
        assert first["pages"] == 1 and first["next_page"] is None
    else:
        assert first["pages"] == 2 and first["next_page"] == 1
        second = await helpers.run_helper(None, "mcp_resources", {"server": "p", "page": 1})  # type: ignore[arg-type]
        assert second["resources"] == [{"uri": f"resources-{count - 1}", "name": f"n{count - 1}"}]
