"""Who may act on a delegated job, seen from outside: approvals, job views, permission levels.

* ``approve_needs_flags_and_ownership`` (SRV-11, SRV-16): a server started with
  ``--allow-write`` alone cannot approve its own job's approval, but may deny it; a second
  server of the same profile and project, started with ``--allow-write --allow-approvals``,
  neither sees, cancels nor approves the first server's job or approval. Every refusal is
  verified afterwards: the approval is still pending, the job still waits, its command never ran.
* ``level_lowered_never_raised`` (SRV-10): ``shadow_run`` without ``permission_level`` runs at
  ``read_only``; asking for ``elevated`` in a project trusted at ``workspace`` runs at
  ``workspace`` (lowered, with a note); asking for ``read_only`` there runs at ``read_only``;
  and the project's configured level is unchanged afterwards.
* ``rollback_needs_write_and_confirm`` (SRV-18, SRV-09): after a task rewrote a file, a
  read-only server's ``shadow_rollback`` (with ``confirm: true``) and a writable server's
  without ``confirm`` are refused and leave the file as the task wrote it; the writable
  server's confirmed rollback then restores the original (so the refusals are policy).

The target is driven only through ``trust``, ``models add`` and ``mcp serve``.
"""

from __future__ import annotations

from typing import Any

from shadowcode_conformance.checks.delegation import (
    FINISHED,
    WAIT_SECONDS,
    McpSession,
    check_result,
    commands_in,
    configure_model,
    open_session,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_objects
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["approve_needs_flags_and_ownership", "level_lowered_never_raised", "rollback_needs_write_and_confirm"]

_SLEEP_ARGV = ["sleep", "60"]
"""The command the conformance script's ``conformance sleep`` task asks to run."""


async def _refused(s: McpSession, label: str, tool: str, arguments: dict[str, Any]) -> None:
    """A call that must answer with an error; a success is noted on ``s`` under ``label``."""
    reply = await s.call(tool, arguments)
    if not reply.is_error:
        s.problems.append(f"{label}: {tool} {arguments} was not refused ({reply.text[:160]})")


async def _still_waiting(
    ctx: Context, owner: McpSession, job_id: str, approval_id: str, after: str, problems: list[str]
) -> None:
    """Nothing changed: ``job_id`` still waits on ``approval_id`` and its command never ran."""
    got = await owner.job(job_id)
    row: dict[str, Any] = got.get("job") or {}
    status = row.get("status")
    pending = [str(a.get("id")) for a in json_objects(got.get("pending_approvals"))]
    if status in FINISHED or approval_id not in pending:
        problems.append(f"after {after} the job is {status} with pending approvals {pending}, expected {approval_id}")
    if commands_in(ctx.project, _SLEEP_ARGV):
        problems.append(f"after {after} the unapproved `sleep 60` runs in the project")


@check("approval_scope:approve_needs_flags_and_ownership", covers=["SRV-11", "SRV-16"], timeout_seconds=150)
async def approve_needs_flags_and_ownership(ctx: Context) -> CheckResult:
    """Approving needs both flags and the job's own connection; denying needs neither flag (SRV-11, SRV-16).

    Server A (``--allow-write``) delegates a task that asks to run ``sleep 60``. A's approve is
    refused. Server B (``--allow-write --allow-approvals``, same profile and project) delegates
    a quick task of its own, then must not list, inspect, cancel or approve A's job. After each
    refusal A's job still waits on the same approval and no ``sleep 60`` runs. Finally A denies
    its approval (no approval flag needed) and the job ends without running the command.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    async with open_session(ctx, "--allow-write") as a:
        submitted = await a.ok("shadow_run", {"prompt": "conformance sleep", "permission_level": "workspace"})
        job_id = str(submitted.get("job_id", ""))
        approval = await a.wait_approval(job_id) if job_id else None
        if approval is None:
            return check_result(a.problems or ["the task asked for no approval"], "")
        approval_id = str(approval["id"])
        await _refused(a, "a server without --allow-approvals", "shadow_approve",
                       {"approval_id": approval_id, "decision": "approve"})  # fmt: skip
        await _still_waiting(ctx, a, job_id, approval_id, "A's refused approve", problems)
        async with open_session(ctx, "--allow-write", "--allow-approvals") as b:
            quick = {"prompt": "conformance quick: B's own job", "mode": "plan"}
            own = str((await b.ok("shadow_run", quick)).get("job_id", ""))
            listed = await b.ok("shadow_jobs", {"action": "list"})
            seen = [str(j.get("id")) for j in json_objects(listed.get("jobs"))]
            if job_id in seen:
                problems.append(f"B's job listing shows A's job {job_id}: {seen}")
            if own and own not in seen:
                problems.append(f"B's job listing lacks its own job {own}: {seen}")
            await _refused(b, "another connection", "shadow_jobs", {"action": "get", "job_id": job_id})
            await _refused(b, "another connection", "shadow_jobs", {"action": "cancel", "job_id": job_id})
            approve = {"approval_id": approval_id, "decision": "approve"}
            await _refused(b, "another connection", "shadow_approve", approve)
            await _still_waiting(ctx, a, job_id, approval_id, "B's refused get, cancel and approve", problems)
            problems.extend(b.problems)
        await a.ok("shadow_approve", {"approval_id": approval_id, "decision": "deny"})
        status = await a.wait_finished(job_id, WAIT_SECONDS)
        if status not in FINISHED:
            problems.append(f"after A denied its approval the job is {status}, not finished")
        if commands_in(ctx.project, _SLEEP_ARGV):
            problems.append("the denied `sleep 60` ran in the project")
        problems.extend(a.problems)
    return check_result(problems, "approve refused without --allow-approvals and from another connection; deny allowed")


async def _level_of(s: McpSession, arguments: dict[str, Any]) -> tuple[str, list[str]]:
    got = await s.ok("shadow_run", {"prompt": "conformance quick: level", "mode": "build", **arguments})
    given: list[object] = got.get("notes") or []
    notes = [str(n) for n in given]
    job_id = str(got.get("job_id", ""))
    if job_id:
        await s.wait_finished(job_id, WAIT_SECONDS)
    return str(got.get("permission_level")), notes


@check("approval_scope:level_lowered_never_raised", covers=["SRV-10"], timeout_seconds=120)
async def level_lowered_never_raised(ctx: Context) -> CheckResult:
    """``permission_level`` defaults to read_only, lowers the ceiling, never raises it, is not saved (SRV-10)."""
    problem, _ = await configure_model(ctx, "workspace")
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    async with open_session(ctx, "--allow-write") as s:
        level, _ = await _level_of(s, {})
        if level != "read_only":
            problems.append(f"without permission_level the task runs at {level}, not read_only")
        level, notes = await _level_of(s, {"permission_level": "elevated"})
        if level != "workspace":
            problems.append(f"asking for elevated in a project trusted at workspace runs at {level}, not workspace")
        elif not any("lowered" in n for n in notes):
            problems.append(f"the lowered level carries no note: {notes}")
        level, _ = await _level_of(s, {"permission_level": "read_only"})
        if level != "read_only":
            problems.append(f"asking for read_only runs at {level}")
        status = await s.ok("shadow_status", {})
        project: dict[str, Any] = status.get("project") or {}
        configured = str(project.get("level"))
        if configured != "workspace":
            problems.append(f"after the tasks the project's configured level reads {configured}, not workspace")
        problems.extend(s.problems)
    return check_result(problems, "default read_only; elevated lowered to workspace with a note; nothing saved")


_WRITTEN = "notebook/render.py"
"""The file the conformance script's ``conformance write`` task rewrites."""


def _read(path: Any) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


@check("approval_scope:rollback_needs_write_and_confirm", covers=["SRV-18", "SRV-09"], timeout_seconds=150)
async def rollback_needs_write_and_confirm(ctx: Context) -> CheckResult:
    """``shadow_rollback`` needs write access and ``confirm: true``; refused ones change nothing (SRV-18, SRV-09)."""
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    target = ctx.project / _WRITTEN
    original = _read(target)
    problems: list[str] = []
    async with open_session(ctx, "--allow-write") as w:
        job_id = str(
            (await w.ok("shadow_run", {"prompt": "conformance write", "permission_level": "workspace"})).get(
                "job_id", ""
            )
        )
        status = await w.wait_finished(job_id, WAIT_SECONDS)
        written = _read(target)
        if status != "done" or written == original:
            return check_result(
                [*w.problems, f"the write task ended {status} and the file changed: {written != original}"], ""
            )
        async with open_session(ctx) as r:
            await _refused(r, "a read-only server", "shadow_rollback", {"task_id": job_id, "confirm": True})
            problems.extend(r.problems)
        if _read(target) != written:
            problems.append(f"after the read-only server's refused rollback {_WRITTEN} changed")
        await _refused(w, "no confirm", "shadow_rollback", {"task_id": job_id})
        await _refused(w, "confirm false", "shadow_rollback", {"task_id": job_id, "confirm": False})
        if _read(target) != written:
            problems.append(f"after the unconfirmed rollbacks {_WRITTEN} changed")
        await w.ok("shadow_rollback", {"task_id": job_id, "confirm": True})
        if _read(target) != original:
            problems.append(f"the confirmed rollback did not restore {_WRITTEN} to its content before the task")
        problems.extend(w.problems)
    return check_result(
        problems, "rollback refused on a read-only server and without confirm, nothing changed; confirmed one restored"
    )
