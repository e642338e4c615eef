"""Plugin servers in a running Build task: disable and revoke withdraw them mid-call; drift fails the next dispatch.

Covers CW-12.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import Access, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.plugins import PluginRegistry
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from tests.support.engine import cli_env, trust_workspace, wait_for_sync
from tests.support.mcp_client import (
    HOSTILE,
    PY,
    PYTHON_SDK_SERVER,
    approve_next,
    events_of,
    finished,
    group_gone,
    running,
    scripted,
    wait_for,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-12"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)
SERVER = "plugin-5-notes-echo"
SERVER_ID = f"plugin:{SERVER}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _plugin(engine: LocalEngine, project_dir: Path, tmp_path: Path) -> tuple[Project, PluginRegistry, Path]:
    project = trust_workspace(engine, project_dir)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copyfile(HOSTILE, bundle / "server.py")
    server = {"command": [PY, "${PLUGIN_ROOT}/server.py", "plain"], "enabled_tools": ["echo", "slow"]}
    manifest = {"name": "notes", "mcp_servers": {"echo": server}}
    (bundle / "plugin.json").write_text(json.dumps(manifest), encoding="utf-8")
    plugins = PluginRegistry(engine.state.store)
    plugins.trust(bundle, plugins.review(bundle)["digest"])
    plugins.enable(project.path, "notes", trusted=True)
    return project, plugins, bundle


def _turns(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": "mcp_call", "arguments": {"server": SERVER} | c}]}
        for i, c in enumerate(calls)
    ]
    return [*turns, {"content": "finished"}]


async def _submit(core: LocalEngine, project: Project, prompt: str) -> str:
    request = TaskRequest(prompt, TaskMode.BUILD, PermissionLevel.WORKSPACE)
    return (await core.task_submit(request, Caller(project=project.path, access=WRITE))).job_id


@pytest.mark.parametrize("how", ["disable", "revoke"])
async def test_disable_or_revoke_cancels_the_call_in_flight_and_stops_the_process(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, how: str
) -> None:
    project, plugins, _ = _plugin(engine, project_dir, tmp_path)
    scripted(engine, tmp_path, [{"match": "slow", "turns": _turns({"tool": "slow", "arguments": {"seconds": 60}})}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "slow call")
        await approve_next(core, task_id)
        await wait_for(lambda: (project_dir / "slow.log").exists(), seconds=30, what="the call to reach the server")
        if how == "disable":
            plugins.disable(project.path, "notes")
        else:
            plugins.revoke("notes")
        assert (await finished(core, task_id, seconds=60)).status == "done"
    events = events_of(core, task_id)
    kinds = [e.kind for e in events]
    withdrawn = next(e.data for e in events if e.kind == "mcp.plugin_withdrawn")
    assert withdrawn["server"] == SERVER_ID
    assert ("disabled" if how == "disable" else "revoked") in withdrawn["reason"]
    (result,) = [e.data for e in events if e.kind == "tool.result"]
    assert result["ok"] is False
    assert "mcp.result" not in kinds
    pid = next(e.data["pid"] for e in events if e.kind == "mcp.connected")
    assert group_gone(pid)
    assert engine.state.mcp_servers.grants(project.path) == {}


async def test_drift_refuses_the_next_call_before_anything_is_sent(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, _, bundle = _plugin(engine, project_dir, tmp_path)
    calls = ({"tool": "echo", "arguments": {"text": "one"}}, {"tool": "echo", "arguments": {"text": "two"}})
    scripted(engine, tmp_path, [{"match": "drift", "turns": _turns(*calls)}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "drift")
        await approve_next(core, task_id)
        approvals = core.state.approvals
        await wait_for(lambda: any(e.kind == "mcp.result" for e in events_of(core, task_id)), what="the first answer")
        (second,) = await wait_for(lambda: approvals.pending(task_id=task_id), what="the second approval")
        # The bundle changes while the second call waits for its approval: it is refused once approved.
        (bundle / "server.py").write_text("# replaced after trust\n", encoding="utf-8")
        approvals.resolve(second.id, "approve", by="test")
        assert (await finished(core, task_id, seconds=60)).status == "done"
    events = events_of(core, task_id)
    results = [e.data for e in events if e.kind == "tool.result"]
    assert [r["ok"] for r in results] == [True, False]
    assert "changed since it was trusted (drift)" in results[1]["summary"]
    assert "nothing was sent" in results[1]["summary"]
    assert [e.kind for e in events].count("mcp.call") == 1
    pid = next(e.data["pid"] for e in events if e.kind == "mcp.connected")
    assert group_gone(pid)


@contextmanager
def _sdk_http(tmp: Path) -> Iterator[str]:
    """The Python SDK fixture over Streamable HTTP on loopback until the block ends; yields its port."""
    out = tmp / "sdk-server.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [PY, str(PYTHON_SDK_SERVER), "http"],
            env=cli_env(tmp),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
        )
    try:
        found = wait_for_sync(
            lambda: proc.poll() is None and re.search(r"PORT (\d+)", out.read_text(encoding="utf-8", errors="replace")),
            timeout=30,
            what="the server's port",
        )
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def test_a_plugin_remote_is_called_through_the_same_approvals_and_network_policy(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    with _sdk_http(tmp_path) as port:
        project = trust_workspace(engine, project_dir)
        bundle = tmp_path / "web"
        bundle.mkdir()
        remote = {"url": f"http://localhost:{port}/mcp", "network_hosts": ["localhost"], "enabled_tools": ["add"]}
        (bundle / "plugin.json").write_text(json.dumps({"name": "web", "mcp_servers": {"sdk": remote}}), "utf-8")
        plugins = PluginRegistry(engine.state.store)
        plugins.trust(bundle, plugins.review(bundle)["digest"])
        plugins.enable(project.path, "web", trusted=True)
        call = {"server": "plugin-3-web-sdk", "tool": "add", "arguments": {"a": 2, "b": 3}}
        turns = [{"content": "s", "tool_calls": [{"name": "mcp_call", "arguments": call}]}, {"content": "finished"}]
        scripted(engine, tmp_path, [{"match": "web", "turns": turns}])
        async with running(engine, seconds=120) as core:
            task_id = await _submit(core, project, "web call")
            approval = await approve_next(core, task_id)
            assert approval.kind == "mcp_call" and approval.action["server"] == "plugin:plugin-3-web-sdk"
            assert (await finished(core, task_id, seconds=60)).status == "done"
    (result,) = [json.loads(e.data["summary"]) for e in events_of(core, task_id) if e.kind == "tool.result"]
    assert result["structured_content"] == {"total": 5}
