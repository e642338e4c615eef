"""The terminal can do what an MCP client can, and a killed engine leaves nothing that looks alive.

``terminal:build_rollback_why`` delegates a scripted Build task with ``<target> run``, rolls
it back with ``<target> rollback`` and reads the history with ``<target> why`` (ENG-06,
SRV-18, SRV-19). ``terminal:sigkill_waiting_approval`` kills ``<target> engine`` with SIGKILL
while a detached task waits for an approval; after a restart the task reads ``interrupted``,
``approvals`` no longer lists the approval, and ``approve`` of it exits 3 (ENG-03, ENG-07,
ENG-08). Only the command line is used, so any implementation of it can be checked.
"""

from __future__ import annotations

import json
from typing import Any, cast

import anyio

from shadowcode_conformance.checks.delegation import configure_model, kill_commands
from shadowcode_conformance.context import Context
from shadowcode_conformance.engine import headless_engine
from shadowcode_conformance.json_values import json_objects
from shadowcode_conformance.polling import Backoff
from shadowcode_conformance.processes import Completed, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["build_rollback_why", "sigkill_waiting_approval"]

_COMMAND_TIMEOUT_SECONDS = 60.0
_WAIT_SECONDS = 30.0
_WRITE_PATH = "notebook/render.py"


def _json(done: Completed) -> dict[str, Any] | None:
    """The command's stdout as a JSON object, or None when it is not one JSON object."""
    try:
        doc = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return cast("dict[str, Any]", doc) if isinstance(doc, dict) else None


@check("terminal:build_rollback_why", covers=["ENG-06", "SRV-18", "SRV-19"], timeout_seconds=180)
async def build_rollback_why(ctx: Context) -> CheckResult:
    """A Build task run from the terminal is rolled back from the terminal; ``why`` shows both.

    ``run "conformance write"`` must change ``notebook/render.py`` and exit 0; ``rollback
    TASK`` with stdin closed (not a terminal) must exit 2 naming ``--yes`` and change nothing;
    ``rollback TASK --yes`` must restore the file; ``--json why PATH`` must list the task's
    rollback and its write, newest first.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    target_file = ctx.project / _WRITE_PATH
    if not target_file.is_file():
        return CheckResult(False, f"the sample project has no {_WRITE_PATH}")
    original = target_file.read_text(encoding="utf-8")
    problems: list[str] = []
    try:
        ran = await ctx.run(
            ctx.target_argv("--json", "run", "--level", "workspace", "conformance write"),
            timeout_seconds=_COMMAND_TIMEOUT_SECONDS,
        )
        doc = _json(ran)
        task_id = str(doc.get("id", "")) if doc is not None else ""
        if ran.returncode != 0 or not task_id:
            return CheckResult(False, f"`run` exited {ran.returncode} without a job: {tail(ran.stderr)}")
        if target_file.read_text(encoding="utf-8") == original:
            return CheckResult(False, f"the Build task did not change {_WRITE_PATH}")

        asked = await ctx.run(ctx.target_argv("rollback", task_id), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if asked.returncode != 2 or b"--yes" not in asked.stderr:
            problems.append(f"`rollback` with stdin not a terminal exited {asked.returncode}: {tail(asked.stderr)}")
        if target_file.read_text(encoding="utf-8") == original:
            problems.append("`rollback` without --yes changed the file")

        rolled = await ctx.run(
            ctx.target_argv("--json", "rollback", task_id, "--yes"),
            timeout_seconds=_COMMAND_TIMEOUT_SECONDS,
        )
        if rolled.returncode != 0:
            problems.append(f"`rollback --yes` exited {rolled.returncode}: {tail(rolled.stderr)}")
        if target_file.read_text(encoding="utf-8") != original:
            problems.append(f"`rollback --yes` did not restore {_WRITE_PATH}")

        why = await ctx.run(
            ctx.target_argv("--json", "why", _WRITE_PATH),
            timeout_seconds=_COMMAND_TIMEOUT_SECONDS,
        )
        listed = _json(why)
        entries = json_objects(listed.get("entries")) if listed is not None else []
        kinds = [e.get("kind") for e in entries if e.get("task_id") == task_id]
        if kinds[:2] != ["rollback", "write"]:
            problems.append(f"`why {_WRITE_PATH}` does not show the rollback then the write of {task_id}: {kinds}")
    finally:
        await anyio.to_thread.run_sync(kill_commands, ctx.project)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, f"{task_id} changed {_WRITE_PATH}, was rolled back from the terminal; why shows both")


async def _wait_approval(ctx: Context, task_id: str) -> dict[str, Any] | None:
    """The first pending approval of ``task_id`` as ``--json approvals`` lists it, or None in time."""
    pause = Backoff()
    with anyio.move_on_after(_WAIT_SECONDS):
        while True:
            listed = _json(
                await ctx.run([*ctx.target, "--json", "approvals"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
            )
            found = [a for a in json_objects((listed or {}).get("approvals", [])) if a.get("task_id") == task_id]
            if found:
                return found[0]
            await pause.sleep()
    return None


@check(
    "terminal:sigkill_waiting_approval",
    covers=["ENG-03", "ENG-07", "ENG-08"],
    timeout_seconds=240,
    own_engine=True,
)
async def sigkill_waiting_approval(ctx: Context) -> CheckResult:
    """SIGKILL of ``<target> engine`` while a detached task waits for approval leaves no live approval.

    After a restart: ``jobs TASK`` says ``interrupted``, ``approvals`` does not list the
    task's approval, and ``approve ID`` exits 3 with a message on stderr and nothing on stdout.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    first: list[str] = []
    task_id = approval_id = ""
    try:
        async with headless_engine(ctx, first) as engine:
            if engine is None:
                return CheckResult(False, "; ".join(first))
            submitted = await ctx.run(
                ctx.target_argv("--json", "run", "--detach", "--level", "workspace", "conformance sleep"),
                timeout_seconds=_COMMAND_TIMEOUT_SECONDS,
            )
            doc = _json(submitted)
            task_id = str(doc.get("job_id", "")) if doc is not None else ""
            if submitted.returncode != 0 or not task_id:
                return CheckResult(False, f"`run --detach` exited {submitted.returncode}: {tail(submitted.stderr)}")
            approval = await _wait_approval(ctx, task_id)
            if approval is None:
                return CheckResult(False, f"no approval of {task_id} was listed within {_WAIT_SECONDS:g} s")
            approval_id = str(approval.get("id"))
            engine.kill()
            with anyio.move_on_after(_WAIT_SECONDS):
                await engine.wait()
        # The killed engine's own non-zero exit is the point, not a finding.
        problems += [p for p in first if not p.startswith("the engine failed with exit")]
        async with headless_engine(ctx, problems) as engine:
            if engine is None:
                return CheckResult(False, "the engine did not start again: " + "; ".join(problems))
            shown = _json(
                await ctx.run([*ctx.target, "--json", "jobs", task_id], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
            )
            job: dict[str, Any] = (shown.get("job") or {}) if shown is not None else {}
            status = job.get("status") if shown is not None else None
            if status != "interrupted":
                problems.append(f"after the restart `jobs {task_id}` says {status!r}, not 'interrupted'")
            listed = _json(
                await ctx.run([*ctx.target, "--json", "approvals"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
            )
            ids = [a.get("id") for a in json_objects((listed or {}).get("approvals", []))]
            if approval_id in ids:
                problems.append(f"after the restart `approvals` still lists {approval_id}")
            approved = await ctx.run([*ctx.target, "approve", approval_id], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
            if approved.returncode != 3 or approved.stdout or not approved.stderr.strip():
                problems.append(
                    f"`approve {approval_id}` after the restart exited {approved.returncode} "
                    f"(stdout {tail(approved.stdout, 80)!r}, stderr {tail(approved.stderr, 120)!r}); expected 3"
                )
    finally:
        await anyio.to_thread.run_sync(kill_commands, ctx.project)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, f"{task_id} interrupted, {approval_id} expired; approve exits 3")
