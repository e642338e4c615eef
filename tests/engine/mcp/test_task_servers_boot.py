"""Session boot: a Build task starts its servers in the background; lazy servers wait until needed.

Covers CW-10.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import Access, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from tests.support.engine import enable_server, trust_workspace
from tests.support.mcp_client import (
    HOSTILE,
    PY,
    approve_next,
    events_of,
    finished,
    hostile_argv,
    project_definition,
    running,
    scripted,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-10"),
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


def _flagged(flag: str, *args: str) -> list[str]:
    """The hostile fixture in ``args`` mode, started through a shell that first appends to ``flag``."""
    return ["/bin/sh", "-c", f'echo started >> {flag}; exec "$0" "$@"', PY, str(HOSTILE), *args]


def _define(
    engine: LocalEngine, project_dir: Path, servers: dict[str, dict[str, Any]]
) -> tuple[Project, dict[str, str]]:
    project = trust_workspace(engine, project_dir)
    ids = {}
    for name, doc in servers.items():
        ids[name] = project_definition(project_dir, name, {"name": name} | doc)
        enable_server(engine, project, ids[name])
    return project, ids


async def _submit(core: LocalEngine, project: Project, prompt: str) -> str:
    request = TaskRequest(prompt, TaskMode.BUILD, PermissionLevel.WORKSPACE)
    return (await core.task_submit(request, Caller(project=project.path, access=WRITE))).job_id


def _results(core: LocalEngine, task_id: str) -> list[dict[str, Any]]:
    return [e.data for e in events_of(core, task_id) if e.kind == "tool.result"]


async def test_servers_start_concurrently_in_the_background_and_the_first_request_is_not_held(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    # Each server takes 3 s to list its tools: one after the other they would take 6 s.
    project, ids = _define(
        engine,
        project_dir,
        {"a": {"command": hostile_argv("slow_list", "3")}, "b": {"command": hostile_argv("slow_list", "3")}},
    )
    calls = [("mcp_tools", {}), ("mcp_tools", {"server": "a"}), ("mcp_tools", {"server": "b"}), ("mcp_tools", {})]
    scripted(engine, tmp_path, [{"match": "boot", "turns": _calls(*calls)}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "boot")
        assert (await finished(core, task_id, seconds=90)).status == "done"
    events = events_of(core, task_id)
    kinds = [e.kind for e in events]
    assert kinds.index("model.request") < kinds.index("mcp.connected"), "the first request waited for a server"
    connecting = [e.data for e in events if e.kind == "mcp.connecting"]
    assert sorted(c["server"] for c in connecting) == sorted(ids.values())
    assert {c["reason"] for c in connecting} == {"boot"}
    assert kinds.count("mcp.connected") == 2, "each server started once"
    # Event times are whole seconds: one start after the other would span 6 s or more.
    began = min(e.at for e in events if e.kind == "mcp.connecting")
    span = max(e.at for e in events if e.kind == "mcp.connected") - began
    assert 3 <= span <= 4, f"the servers did not start concurrently ({span} s from the first start to the last)"
    first, listed_a, listed_b, last = (json.loads(r["summary"]) for r in _results(core, task_id))
    assert [s["state"] for s in first["servers"]] == ["connecting", "connecting"]
    assert [s["tools"] for s in first["servers"]] == [None, None]
    assert listed_a["tools"][:2] == ["echo", "env"] and listed_b["tools"][:2] == ["echo", "env"]
    assert [s["state"] for s in last["servers"]] == ["connected", "connected"]


async def test_a_lazy_server_the_task_never_needs_never_starts(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, ids = _define(
        engine,
        project_dir,
        {
            "eager": {"command": _flagged("eager.flag", "plain")},
            "heavy": {"command": _flagged("heavy.flag", "plain"), "lazy": True},
        },
    )
    calls = [("mcp_tools", {}), ("mcp__eager__echo", {"text": "hi"}), ("mcp_tools", {})]
    scripted(engine, tmp_path, [{"match": "work", "turns": _calls(*calls)}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "work")
        await approve_next(core, task_id)
        assert (await finished(core, task_id, seconds=60)).status == "done"
    events = events_of(core, task_id)
    assert (project_dir / "eager.flag").is_file()
    assert not (project_dir / "heavy.flag").exists(), "the lazy server was started"
    started = {e.data["server"] for e in events if e.kind in ("mcp.connecting", "mcp.connected")}
    assert started == {ids["eager"]}
    first, echo, last = (json.loads(r["summary"]) for r in _results(core, task_id))
    heavy = [s for s in first["servers"] + last["servers"] if s["server"] == "heavy"]
    assert [(s["state"], s["lazy"], s["tools"]) for s in heavy] == [("not connected", True, None)] * 2
    assert echo["content"][0]["text"] == "hi"
    eager = next(s for s in last["servers"] if s["server"] == "eager")
    assert eager["state"] == "connected" and eager["lazy"] is False


async def test_a_lazy_server_starts_when_the_task_needs_its_tools_and_only_then(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, ids = _define(engine, project_dir, {"heavy": {"command": _flagged("heavy.flag", "plain"), "lazy": True}})
    calls = [("mcp_tools", {}), ("mcp__heavy__echo", {"text": "needed"}), ("mcp_tools", {})]
    scripted(engine, tmp_path, [{"match": "need", "turns": _calls(*calls)}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "need")
        await approve_next(core, task_id)
        assert (await finished(core, task_id, seconds=60)).status == "done"
    events = events_of(core, task_id)
    kinds = [e.kind for e in events]
    connecting = [e.data for e in events if e.kind == "mcp.connecting"]
    assert connecting == [{"server": ids["heavy"], "reason": "needed"}]
    assert kinds.index("mcp.connecting") > kinds.index("tool.result"), "it started before it was needed"
    first, echo, last = (json.loads(r["summary"]) for r in _results(core, task_id))
    assert first["servers"][0]["state"] == "not connected"
    assert echo["content"][0]["text"] == "needed"
    assert last["servers"][0]["state"] == "connected"
    assert (project_dir / "heavy.flag").read_text(encoding="utf-8").split() == ["started"]


async def test_a_required_lazy_server_connects_before_the_first_request(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, ids = _define(engine, project_dir, {"needed": {"command": hostile_argv(), "lazy": True, "required": True}})
    scripted(engine, tmp_path, [{"match": "req", "turns": _calls(("mcp_tools", {}))}])
    async with running(engine, seconds=120) as core:
        task_id = await _submit(core, project, "req")
        assert (await finished(core, task_id, seconds=60)).status == "done"
    events = events_of(core, task_id)
    kinds = [e.kind for e in events]
    assert kinds.index("mcp.connected") < kinds.index("model.request")
    assert [e.data for e in events if e.kind == "mcp.connecting"] == [{"server": ids["needed"], "reason": "required"}]
    assert json.loads(_results(core, task_id)[0]["summary"])["servers"][0]["state"] == "connected"


async def test_a_task_ending_while_a_server_is_still_starting_stops_it_at_once(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project, ids = _define(engine, project_dir, {"stuck": {"command": hostile_argv("no_init"), "connect_timeout": 60}})
    scripted(engine, tmp_path, [{"match": "quick", "turns": _calls(("mcp_tools", {}))}])
    async with running(engine, seconds=120) as core:
        started = time.monotonic()
        task_id = await _submit(core, project, "quick")
        assert (await finished(core, task_id, seconds=30)).status == "done"
        took = time.monotonic() - started
    events = events_of(core, task_id)
    assert took < 20, f"the task waited for the start ({took:.1f} s)"
    assert json.loads(_results(core, task_id)[0]["summary"])["servers"][0]["state"] == "connecting"
    closed = [e.data for e in events if e.kind == "mcp.closed"]
    assert len(closed) == 1 and closed[0]["server"] == ids["stuck"] and closed[0]["error"] == "closed while connecting"
    kinds = [e.kind for e in events]
    assert kinds.index("mcp.closed") < kinds.index("task.done")
    assert not [e for e in events if e.kind == "task.note"], "an abandoned start is not a failure to note"
    assert _servers_in(project_dir) == [], "the server's process outlived the task"


def _servers_in(folder: Path) -> list[int]:
    """Pids of hostile fixture processes whose working directory is ``folder``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if str(HOSTILE).encode() in cmdline and Path(cwd) == folder.resolve():
            found.append(int(entry))
    return found
