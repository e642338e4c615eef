"""Helpers for the MCP client tests: fixture server commands, definitions, a running engine, bounded waits."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from shadowcode.engine.local import LocalEngine
from shadowcode.process_group import pids_alive
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.tasks import EventRecord, TaskRecord

__all__ = [
    "HOSTILE",
    "PY",
    "PYTHON_SDK_SERVER",
    "SLOW_SDK_SERVER",
    "REPO",
    "approve_next",
    "events_of",
    "finished",
    "group_gone",
    "hostile_argv",
    "pid_gone",
    "project_definition",
    "running",
    "scripted",
    "wait_for",
]

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "hostile_server.py"
PYTHON_SDK_SERVER = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "python_sdk_server.py"
SLOW_SDK_SERVER = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "slow_sdk_server.py"
_POLL_SECONDS = 0.02


def hostile_argv(mode: str = "plain", *extra: str) -> list[str]:
    """The command of the hostile fixture server in ``mode``."""
    return [PY, str(HOSTILE), mode, *extra]


def project_definition(project: Path, name: str, doc: dict[str, Any], *, folder: str = ".shadowcode/mcp") -> str:
    """Write ``doc`` as ``<folder>/<name>.json`` in the project; returns its id."""
    target = project / folder
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    return f"project:{folder}/{name}.json"


def scripted(engine: LocalEngine, tmp: Path, tasks: list[dict[str, Any]]) -> None:
    """Make a scripted model replaying ``tasks`` the profile's only model."""
    script = tmp / "model.json"
    script.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    profile = engine.state.profile
    profile.ensure()
    profile.settings_path.write_text(
        json.dumps({"models": [{"name": "scripted", "provider": "scripted", "script": str(script)}]}),
        encoding="utf-8",
    )


@asynccontextmanager
async def running(engine: LocalEngine, *, seconds: float = 60.0) -> AsyncIterator[LocalEngine]:
    """``engine`` running as a temporary engine; the whole block, shutdown included, is bounded."""
    with anyio.fail_after(seconds):
        async with engine.running():
            yield engine


async def wait_for(check: Callable[[], Any], *, seconds: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns a truthy value; fail after ``seconds``."""
    with anyio.fail_after(seconds):
        while True:
            value = check()
            if value:
                return value
            await anyio.sleep(_POLL_SECONDS)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first


def events_of(core: LocalEngine, task_id: str) -> list[EventRecord]:
    """Every event of a task, oldest first."""
    return core.state.records.events(task_id, limit=100_000)


async def finished(core: LocalEngine, task_id: str, *, seconds: float = 30.0) -> TaskRecord:
    """Wait until the task is finished; returns its record."""
    return await wait_for(
        lambda: not (t := core.state.records.get(task_id)).status.active and t,
        seconds=seconds,
        what=f"task {task_id} to finish",
    )


async def approve_next(core: LocalEngine, task_id: str, *, decision: str = "approve") -> ApprovalRecord:
    """Wait for the task's next pending approval and resolve it; returns the approval as it was pending."""
    approvals = core.state.approvals
    pending = await wait_for(lambda: approvals.pending(task_id=task_id), what="a pending approval")
    approval = pending[0]
    approvals.resolve(approval.id, decision, by="test")
    return approval


def group_gone(pid: int) -> bool:
    """True when no live process is left in the group led by ``pid``."""
    return not pids_alive(pid)


def pid_gone(pid: int) -> bool:
    """True when ``pid`` no longer names a live process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        raw = stat.read_bytes()
    except OSError:
        return True
    return raw[raw.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")
