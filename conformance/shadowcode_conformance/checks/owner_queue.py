"""An owner's queued tasks, seen from outside: cancelled at once, never started (SRV-21, SRV-22).

With ``<target> engine`` running, an unrelated detached CLI task and the owner's own tasks
fill the engine's running slots, each parked on a pending approval, until the owner has two
tasks waiting in the queue. Then:

* the owner cancels its first queued task with ``shadow_jobs``: the answer comes at once
  and the task reads ``cancelled``, although no slot is free, and nothing else changed;
* the owner's stdin closes: its running *and* queued tasks must end ``cancelled``; the
  queued ones must never have started (no start event, no model request under their id),
  which a close that cancels running tasks first would break (their freed slots start the
  queued ones); the unrelated detached task keeps waiting on its approval.

How many tasks an engine runs at once is not part of the contract: the check keeps
submitting until two are queued (at most :data:`SUBMISSIONS_MAX`).
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import anyio
import anyio.to_thread

from shadowcode_conformance.checks.boundaries import call_raw, serve
from shadowcode_conformance.checks.delegation import (
    McpSession,
    detached_task,
    model_and_engine,
    pending_approval,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["SUBMISSIONS_MAX", "eof_cancels_queued_tasks"]

SUBMISSIONS_MAX = 12
"""Tasks the owner submits at most while looking for two queued ones."""

QUEUED_CANCEL_SECONDS = 10.0
"""Seconds the explicit cancellation of a queued task may take: it waits behind nothing."""

_COMMAND_TIMEOUT_SECONDS = 30.0
_SETTLE_SECONDS = 30.0
_EXIT_WAIT_SECONDS = 15.0
_POLL_SECONDS = 0.2
_FINISHED = frozenset({"done", "failed", "cancelled", "interrupted"})


async def _state(s: McpSession, job_id: str) -> str:
    """``"queued"``, ``"parked"`` (running with a pending approval), ``"moving"`` or a finished status."""
    got = await s.job(job_id)
    job: dict[str, Any] = got.get("job") or {}
    status = str(job.get("status", "?"))
    if status == "queued" or status in _FINISHED:
        return status
    return "parked" if got.get("pending_approvals") else "moving"


async def _fill(s: McpSession) -> tuple[list[str], list[str]]:
    """Submit sleeping tasks until two are queued; ``(parked ids, queued ids)``."""
    submitted: list[str] = []
    states: dict[str, str] = {}
    while len(submitted) < SUBMISSIONS_MAX:
        reply = await s.ok(
            "shadow_run", {"prompt": f"conformance sleep {len(submitted)}", "permission_level": "workspace"}
        )
        if not reply.get("job_id"):
            return [], []
        submitted.append(str(reply["job_id"]))
        # Settled: every task is parked on its approval or still queued, twice in a row.
        settled, previous = False, None
        with anyio.move_on_after(_SETTLE_SECONDS):
            while not settled:
                states = {job: await _state(s, job) for job in submitted}
                settled = states == previous and set(states.values()) <= {"parked", "queued"}
                previous = states
                await anyio.sleep(_POLL_SECONDS)
        if not settled:
            s.problems.append(f"the owner's tasks did not settle within {_SETTLE_SECONDS:g} s: {states}")
            return [], []
        queued = [job for job in submitted if states[job] == "queued"]
        if len(queued) >= 2:
            return [job for job in submitted if states[job] == "parked"], queued
    s.problems.append(f"{SUBMISSIONS_MAX} submitted tasks never left two waiting in the queue: {states}")
    return [], []


async def _job_doc(ctx: Context, job_id: str) -> dict[str, Any]:
    done = await ctx.run(ctx.target_argv("--json", "jobs", job_id), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    try:
        doc = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return cast("dict[str, Any]", doc) if isinstance(doc, dict) else {}


def _started(doc: dict[str, Any]) -> bool:
    """Whether a job's events (``<target> --json jobs ID``) show that it ever started."""
    events: list[object] = doc.get("events") or []
    for found in events:
        event = cast("dict[str, Any]", found) if isinstance(found, dict) else {}
        kind = str(event.get("kind") or event.get("type") or "")
        if "start" in kind:
            return True
    return False


def _model_requests(log: Any, job_id: str) -> int:
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0
    count = 0
    for line in lines:
        try:
            count += json.loads(line).get("task_id") == job_id
        except (ValueError, AttributeError):
            continue
    return count


async def _cancel_first_queued(s: McpSession, parked: list[str], queued: list[str]) -> None:
    started = time.monotonic()
    with anyio.move_on_after(QUEUED_CANCEL_SECONDS):
        is_error, text, _ = await call_raw(s, "shadow_jobs", {"action": "cancel", "job_id": queued[0]})
        if is_error:
            s.problems.append(f"cancelling the queued job {queued[0]} was refused: {text[:200]}")
    waited = time.monotonic() - started
    if waited >= QUEUED_CANCEL_SECONDS:
        s.problems.append(f"cancelling a queued job took more than {QUEUED_CANCEL_SECONDS:g} s: it waited behind work")
        return
    if (state := await _state(s, queued[0])) != "cancelled":
        s.problems.append(f"the queued job {queued[0]} reads {state!r} after its cancellation, expected 'cancelled'")
    others = {job: await _state(s, job) for job in [*parked, *queued[1:]]}
    if any(state != ("parked" if job in parked else "queued") for job, state in others.items()):
        s.problems.append(f"cancelling one queued job disturbed the others: {others}")


@check(
    "owner_queue:eof_cancels_queued_tasks",
    covers=["SRV-22", "SRV-21"],
    timeout_seconds=240,
    own_engine=True,
)
async def eof_cancels_queued_tasks(ctx: Context) -> CheckResult:
    """A queued cancellation waits behind nothing, and EOF cancels queued tasks unstarted (SRV-22, SRV-21).

    See the module docstring for the fixture. Fails when the explicit cancel of a queued
    task takes more than ``QUEUED_CANCEL_SECONDS`` or leaves it not ``cancelled``; when after
    EOF any of the owner's tasks is not ``cancelled``; when a queued task shows a start
    event or a model request; or when the detached task of another owner lost its approval
    or finished.
    """
    problems: list[str] = []
    async with model_and_engine(ctx, problems) as log:
        if log is None:
            return CheckResult(False, "; ".join(problems))
        await _scenario(ctx, log, problems)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(
        True,
        "a queued job was cancelled at once; EOF cancelled the owner's running and queued jobs, the queued never "
        "started; the detached job kept its approval",
    )


async def _scenario(ctx: Context, log: Any, problems: list[str]) -> None:
    other, approval = await detached_task(ctx, "conformance sleep: unrelated detached work", problems, _SETTLE_SECONDS)
    if not approval:
        return
    async with serve(ctx, ctx.project, "--allow-write") as s:
        parked, queued = await _fill(s)
        first_started = False
        if queued:
            await _cancel_first_queued(s, parked, queued)
            first_started = _started(await s.job(queued[0]))
        await s.close_stdin()
        code = await s.wait_exit(_EXIT_WAIT_SECONDS)
        if code is None:
            s.problems.append(f"the server still ran {_EXIT_WAIT_SECONDS:g} s after its stdin closed")
    problems += s.problems
    if problems or not queued:
        return
    statuses = await _statuses(ctx)
    for job in [*parked, *queued]:
        if (status := statuses.get(job, "?")) != "cancelled":
            problems.append(f"after EOF the owner's job {job} is {status!r}, expected 'cancelled'")
    if _started(await _job_doc(ctx, queued[-1])) or first_started:
        problems.append("a queued job started before it was cancelled")
    for job in queued:
        if requests := await anyio.to_thread.run_sync(_model_requests, log, job):
            problems.append(f"the queued job {job} made {requests} model request(s) before it was cancelled")
    if statuses.get(other, "?") in _FINISHED or await pending_approval(ctx, other) != approval:
        problems.append(f"the other owner's detached job {other} is {statuses.get(other)!r} without its approval")


async def _statuses(ctx: Context) -> dict[str, str]:
    """Job id to status from one ``<target> --json jobs --limit 50``."""
    argv = ctx.target_argv("--json", "jobs", "--limit", "50")
    done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    try:
        found: list[object] = json.loads(done.stdout.decode("utf-8")).get("jobs") or []
    except (UnicodeDecodeError, ValueError, AttributeError):
        return {}
    jobs = [cast("dict[str, Any]", j) for j in found if isinstance(j, dict)]
    return {str(j.get("id")): str(j.get("status")) for j in jobs}
