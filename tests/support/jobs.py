"""Helpers for tests that delegate work through the engine API: callers, trust, scripted turns, job waits.

- callers as the frontends build them: an MCP connection (confined to its owner and project)
  and the CLI (profile-wide, detached when it has no owner);
- trust a project through the API;
- scripted model turns that finish, park on an approval, or keep a job running;
- bounded waits on a job seen through the API (in-process or remote) and the model's request log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from shadowcode.engine.api import Access, Caller, EngineApi, JobDetail, JobQuery, OwnerHandle, ProjectInfo, ProjectTrust
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel, TaskStatus

__all__ = [
    "DONE_TURN",
    "PARK_TURN",
    "SLOW_TURN",
    "WRITE",
    "cli_caller",
    "kinds",
    "logged",
    "owner_caller",
    "trust",
    "wait_job",
]

WRITE = Access(allow_write=True, allow_approvals=True)
"""A frontend started with ``--allow-write --allow-approvals`` (and the CLI's own access)."""

DONE_TURN: dict[str, Any] = {"content": "finished"}
"""A model turn that ends the task with the answer ``finished``."""

PARK_TURN: dict[str, Any] = {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["true"]}}]}
"""A model turn that parks a workspace task on the exact approval of ``true``."""

SLOW_TURN: dict[str, Any] = {"content": "late", "delay_seconds": 60}
"""A model turn that keeps the job running (in the model call) until it is cancelled."""

_POLL_SECONDS = 0.02


def owner_caller(project: Path, owner: OwnerHandle | None, access: Access = WRITE) -> Caller:
    """An MCP connection as the engine sees it: confined to its project and its owner's jobs."""
    return Caller(project=project, access=access, owner=owner, confined=True)


def cli_caller(project: Path | None = None) -> Caller:
    """The CLI: write and approval access, profile-wide, no owner (its jobs are detached)."""
    return Caller(project=project, access=WRITE)


async def trust(api: EngineApi, folder: Path, level: PermissionLevel | str) -> ProjectInfo:
    """Trust ``folder`` at ``level`` through the API; returns the project's record."""
    return await api.project_trust(ProjectTrust(str(folder), PermissionLevel(level)))


def kinds(state: EngineState, task_id: str) -> list[str]:
    """The kinds of every event of a task, oldest first."""
    return [e.kind for e in state.records.events(task_id, limit=100_000)]


def logged(request_log: Path) -> list[dict[str, Any]]:
    """The scripted model's request log: one entry per model request."""
    if not request_log.exists():
        return []
    return [json.loads(line) for line in request_log.read_text(encoding="utf-8").splitlines()]


async def wait_job(
    api: EngineApi,
    job_id: str,
    caller: Caller,
    statuses: tuple[TaskStatus, ...] = tuple(s for s in TaskStatus if not s.active),
    *,
    pending_approval: bool = False,
    timeout: float = 30.0,
) -> JobDetail:
    """Poll the ``job`` verb until the job's status is one of ``statuses`` (or, with
    ``pending_approval``, until it has one); returns that page. Fails after ``timeout`` seconds."""
    try:
        with anyio.fail_after(timeout):
            while True:
                page = await api.job(JobQuery(job_id), caller)
                if page.pending_approvals if pending_approval else page.job.status in statuses:
                    return page
                await anyio.sleep(_POLL_SECONDS)
    except TimeoutError:
        what = "a pending approval" if pending_approval else f"one of {[str(s) for s in statuses]}"
        raise AssertionError(f"timed out after {timeout} s waiting for {job_id} to reach {what}") from None
