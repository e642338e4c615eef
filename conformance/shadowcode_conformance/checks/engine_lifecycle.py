"""The headless engine seen from outside: one per profile, frontends attach, state survives a restart (ENG-03).

Also what the engine holds for everyone: at most eight ownership sockets, with a ninth
refused while control requests still work (SRV-24), and background processes that outlive
their task and connection until ``bg stop`` or the engine's close (SRV-23).

``<target> engine`` is started as a child of the check and stopped with ``<target> engine
stop``; whatever it leaves is killed by process group. State is written and read back only
through ``mcp serve`` (goals, memory, sessions, checkpoints, change history, rollback), so
any implementation of the command line can be checked.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio

from shadowcode_conformance.checks.delegation import (
    McpSession,
    SessionEnded,
    commands_in,
    configure_model,
    kill_commands,
    open_session,
    process_alive,
    wait_for,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.engine import engine_running, headless_engine
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = [
    "OWNER_SOCKETS",
    "background_outlives_owner",
    "frontends_report_attached",
    "owner_socket_limit",
    "restart_keeps_state",
    "second_engine_refused",
]

_COMMAND_TIMEOUT_SECONDS = 30.0
_STOP_WAIT_SECONDS = 20.0
_SECOND_ENGINE_SECONDS = 20.0
_WAIT_SECONDS = 30.0
_GONE_SECONDS = 10.0
_BACKGROUND_ARGV = ["sleep", "120"]
_WRITE_PATH = "notebook/render.py"


def _result(problems: list[str], success: str) -> CheckResult:
    return CheckResult(False, "; ".join(problems)) if problems else CheckResult(True, success)


def _engine_mode(status: dict[str, Any]) -> Any:
    engine = status.get("engine")
    found = json_object(engine)
    return found.get("mode") if found is not None else engine


async def _stop_engine(ctx: Context, engine: Any, problems: list[str]) -> None:
    """``<target> engine stop``; the engine process must exit and ``engine status`` say it is gone."""
    stopped = await ctx.run([*ctx.target, "engine", "stop"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    if stopped.returncode != 0:
        problems.append(f"`engine stop` exited {stopped.returncode}: {tail(stopped.stderr)}")
    with anyio.move_on_after(_STOP_WAIT_SECONDS):
        await engine.wait()
    if engine.returncode is None:
        problems.append(f"the engine still ran {_STOP_WAIT_SECONDS:g} s after `engine stop`")
        return
    if await engine_running(ctx):
        problems.append("`engine status` still reports a running engine after it stopped")


@check(
    "engine_lifecycle:restart_keeps_state", covers=["ENG-03", "ENG-06", "CONF-03"], timeout_seconds=180, own_engine=True
)
async def restart_keeps_state(ctx: Context) -> CheckResult:
    """Goals, memory, sessions, checkpoints and history written through one engine are there after a restart (ENG-03).

    With ``<target> engine`` running, a stdio server attached to it creates a goal, appends
    a project note and runs a Build task that writes a file. The engine is stopped with
    ``engine stop`` and started again; a new server must then find the goal, the note, the
    task's session, its checkpoint and history, and roll the task back to the original file.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    marker = f"restart-note-{uuid.uuid4().hex[:10]}"
    target_file = ctx.project / _WRITE_PATH
    original = target_file.read_text(encoding="utf-8") if target_file.is_file() else None
    if original is None:
        return CheckResult(False, f"the sample project has no {_WRITE_PATH}")
    goal_id = task_id = ""
    checkpoints: set[str] = set()
    try:
        async with headless_engine(ctx, problems) as engine:
            if engine is None:
                return CheckResult(False, "; ".join(problems))
            async with open_session(ctx, "--allow-write") as s:
                created = await s.ok("shadow_goal", {"action": "create", "title": "survive a restart"})
                made: dict[str, Any] = created.get("goal") or {}
                goal_id = str(made.get("id", ""))
                await s.ok("shadow_memory", {"action": "append", "text": marker})
                job = await s.ok("shadow_run", {"prompt": "conformance write", "permission_level": "workspace"})
                task_id = str(job.get("job_id", ""))
                final = await s.wait_finished(task_id)
                if final != "done":
                    s.problems.append(f"the write task ended {final!r}")
                if target_file.read_text(encoding="utf-8") == original:
                    s.problems.append(f"the write task did not change {_WRITE_PATH}")
                listed = json_objects((await s.ok("shadow_checkpoint", {"task_id": task_id})).get("checkpoints"))
                checkpoints = {str(c.get("id")) for c in listed}
                if not checkpoints:
                    s.problems.append("the write task left no checkpoint")
            problems += [f"before the restart: {p}" for p in s.problems]
            await _stop_engine(ctx, engine, problems)
        if problems:
            return CheckResult(False, "; ".join(problems))
        async with headless_engine(ctx, problems) as engine:
            if engine is None:
                return CheckResult(False, "the engine did not start again: " + "; ".join(problems))
            async with open_session(ctx, "--allow-write") as s:
                got = await s.ok("shadow_goal", {"action": "get", "goal_id": goal_id})
                goal: dict[str, Any] = got.get("goal") or {}
                if goal.get("title") != "survive a restart":
                    s.problems.append(f"goal {goal_id} after the restart: {goal}")
                note = await s.ok("shadow_memory", {"action": "read"})
                if marker not in str(note.get("content", "")):
                    s.problems.append("the project note lost the appended text")
                sessions = json_objects((await s.ok("shadow_sessions", {"limit": 50})).get("sessions"))
                if not any(task_id in (str(x.get("id")), str(x.get("task_id"))) for x in sessions):
                    s.problems.append(f"shadow_sessions does not list the task {task_id}")
                shown: list[Any] = (await s.ok("shadow_checkpoint", {"task_id": task_id})).get("checkpoints") or []
                if {str(c.get("id")) for c in json_objects(shown)} != checkpoints:
                    s.problems.append(f"the task's checkpoints changed across the restart: {shown}")
                why = json_objects((await s.ok("shadow_why", {"path": _WRITE_PATH})).get("entries"))
                if not any(e.get("task_id") == task_id for e in why):
                    s.problems.append(f"shadow_why lost the task's write of {_WRITE_PATH}")
                await s.ok("shadow_rollback", {"task_id": task_id, "confirm": True})
                if target_file.read_text(encoding="utf-8") != original:
                    s.problems.append(f"rolling back after the restart did not restore {_WRITE_PATH}")
            problems += [f"after the restart: {p}" for p in s.problems]
            await _stop_engine(ctx, engine, problems)
    finally:
        await anyio.to_thread.run_sync(kill_commands, ctx.project)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, "goal, note, session, checkpoint and history survived the restart; rollback restored")


@check("engine_lifecycle:second_engine_refused", covers=["ENG-03"], timeout_seconds=120, own_engine=True)
async def second_engine_refused(ctx: Context) -> CheckResult:
    """A second ``<target> engine`` for a profile whose engine runs is refused (ENG-03).

    It must exit non-zero with a message on stderr within a bounded time, and the first
    engine must still run and answer ``engine status``; ``engine stop`` then ends it.
    """
    problems: list[str] = []
    if await engine_running(ctx):
        problems.append("`engine status` reports a running engine before any was started")
    async with headless_engine(ctx, problems) as engine:
        if engine is None:
            return CheckResult(False, "; ".join(problems))
        second = await ctx.run([*ctx.target, "engine"], timeout_seconds=_SECOND_ENGINE_SECONDS)
        if second.timed_out:
            problems.append(f"a second `engine` for the profile still ran after {_SECOND_ENGINE_SECONDS:g} s")
        elif second.returncode == 0:
            problems.append("a second `engine` for the profile exited 0")
        elif not second.stderr.strip():
            problems.append(f"a second `engine` exited {second.returncode} without a message on stderr")
        if engine.returncode is not None:
            problems.append(f"the first engine exited ({engine.returncode}) when the second one was started")
        elif not await engine_running(ctx):
            problems.append("`engine status` no longer reports the first engine after the second was refused")
        await _stop_engine(ctx, engine, problems)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, f"the second engine exited {second.returncode}: {tail(second.stderr, 160)}")


@check("engine_lifecycle:frontends_report_attached", covers=["ENG-03", "SRV-07"], timeout_seconds=120, own_engine=True)
async def frontends_report_attached(ctx: Context) -> CheckResult:
    """A server reports its own temporary engine, or ``attached`` while ``<target> engine`` runs (ENG-03, SRV-07).

    ``shadow_status`` gives ``engine.mode``: ``temporary`` without a running engine, and
    ``attached`` for a server started while the profile's engine runs.
    """
    problems: list[str] = []
    async with open_session(ctx) as s:
        mode = _engine_mode(await s.ok("shadow_status"))
        if mode != "temporary":
            s.problems.append(f"without a running engine shadow_status reports engine mode {mode!r}, not temporary")
    problems += s.problems
    async with headless_engine(ctx, problems) as engine:
        if engine is None:
            return CheckResult(False, "; ".join(problems))
        async with open_session(ctx) as s:
            mode = _engine_mode(await s.ok("shadow_status"))
            if mode != "attached":
                s.problems.append(f"with the engine running shadow_status reports engine mode {mode!r}, not attached")
        problems += s.problems
        await _stop_engine(ctx, engine, problems)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, "temporary without an engine, attached while it runs")


# --- owner socket limit (SRV-24) ------------------------------------------------------------

OWNER_SOCKETS = 8
"""Ownership sockets one profile's engine accepts at once (SRV-24)."""


@check("engine_lifecycle:owner_socket_limit", covers=["SRV-24", "ENG-03"], timeout_seconds=150, own_engine=True)
async def owner_socket_limit(ctx: Context) -> CheckResult:
    """Eight connections may own jobs at once; a ninth is refused until one closes (SRV-24).

    With ``<target> engine`` running, eight stdio servers, started one after another, each
    delegate a quick job (which opens their ownership). A ninth server's ``shadow_run`` must be refused while
    ``engine status`` and ``jobs`` still answer; once the first server's stdin closes, the
    ninth must be able to delegate.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    ready = [anyio.Event() for _ in range(OWNER_SOCKETS)]
    release = [anyio.Event() for _ in range(OWNER_SOCKETS)]
    closed = [anyio.Event() for _ in range(OWNER_SOCKETS)]

    async def owner(n: int) -> None:
        try:
            async with open_session(ctx) as s:
                reply = await s.call("shadow_run", {"prompt": f"conformance quick: owner {n + 1}"})
                if reply.is_error:
                    problems.append(f"owner {n + 1} of {OWNER_SOCKETS} was refused: {reply.text[:200]}")
                ready[n].set()
                await release[n].wait()
            problems.extend(s.problems)
        except SessionEnded as exc:
            problems.append(f"owner {n + 1}: {exc}")
        finally:
            ready[n].set()
            closed[n].set()

    async with headless_engine(ctx, problems) as engine:
        if engine is None:
            return CheckResult(False, "; ".join(problems))
        async with anyio.create_task_group() as tg:
            try:
                for n in range(OWNER_SOCKETS):
                    tg.start_soon(owner, n)
                    await ready[n].wait()
                if not problems:
                    await _ninth_owner(ctx, problems, release[0], closed[0])
            finally:
                for event in release:
                    event.set()
    return _result(problems, f"{OWNER_SOCKETS} owners held; a ninth refused, then accepted once one closed")


async def _ninth_owner(
    ctx: Context, problems: list[str], release_first: anyio.Event, first_closed: anyio.Event
) -> None:
    async with open_session(ctx) as ninth:
        extra = await ninth.call("shadow_run", {"prompt": "conformance quick: ninth owner"})
        if not extra.is_error:
            problems.append(f"a ninth connection could delegate while {OWNER_SOCKETS} owners were open")
        if not await engine_running(ctx):
            problems.append(f"`engine status` failed while {OWNER_SOCKETS} owners were open")
        listed = await ctx.run(ctx.target_argv("--json", "jobs"), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if listed.returncode != 0:
            problems.append(f"`jobs` exited {listed.returncode} while {OWNER_SOCKETS} owners were open")
        release_first.set()
        await first_closed.wait()
        accepted = False
        with anyio.move_on_after(_GONE_SECONDS):
            while not accepted:
                accepted = not (await ninth.call("shadow_run", {"prompt": "conformance quick: now"})).is_error
                if not accepted:
                    await anyio.sleep(0.25)
        if not accepted:
            problems.append("the ninth connection still could not delegate after another owner closed")
    problems.extend(ninth.problems)


# --- background processes (SRV-23) ---------------------------------------------------------


async def _start_background(ctx: Context, s: McpSession) -> list[int]:
    """An elevated task starts ``sleep 120`` in the background after approval; its pids ([] on failure)."""
    submitted = await s.ok("shadow_run", {"prompt": "conformance background", "permission_level": "elevated"})
    job_id = str(submitted.get("job_id", ""))
    approval = await s.wait_approval(job_id) if job_id else None
    if approval is None:
        return []
    action = approval.get("action") or approval
    if action.get("argv") != _BACKGROUND_ARGV:
        s.problems.append(f"the background approval names {action}, not {_BACKGROUND_ARGV}")
    await s.ok("shadow_approve", {"approval_id": approval["id"], "decision": "approve"})
    status = await s.wait_finished(job_id)
    if status != "done":
        s.problems.append(f"the background task ended {status!r}")
    if not await wait_for(lambda: bool(commands_in(ctx.project, _BACKGROUND_ARGV)), _WAIT_SECONDS):
        s.problems.append("no background `sleep 120` ran in the project after the approval")
        return []
    return commands_in(ctx.project, _BACKGROUND_ARGV)


async def _gone(pids: list[int]) -> bool:
    return await wait_for(lambda: not any(process_alive(p) for p in pids), _GONE_SECONDS)


async def _background_in_temporary_engine(ctx: Context, problems: list[str]) -> None:
    async with open_session(ctx, "--allow-write", "--allow-approvals") as s:
        pids = await _start_background(ctx, s)
    problems += [f"temporary engine: {p}" for p in s.problems]
    if pids and not await _gone(pids):
        problems.append("temporary engine: the background process outlived the server that started it")


async def _background_in_headless_engine(ctx: Context, problems: list[str]) -> None:
    async with headless_engine(ctx, problems) as engine:
        if engine is None:
            return
        async with open_session(ctx, "--allow-write", "--allow-approvals") as s:
            submitted = await s.ok("shadow_run", {"prompt": "conformance background", "permission_level": "read_only"})
            status = await s.wait_finished(str(submitted.get("job_id", "")))
            if status != "done" or commands_in(ctx.project, _BACKGROUND_ARGV):
                s.problems.append(f"a read_only task started a background process or did not finish ({status!r})")
            pids = await _start_background(ctx, s)
        problems += [f"engine: {p}" for p in s.problems]
        if not pids:
            return
        if not all(process_alive(p) for p in pids):
            problems.append("engine: the background process ended with the connection that started it")
            return
        listed = await ctx.run([*ctx.target, "--json", "bg", "list"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        try:
            found: list[dict[str, Any]] = json.loads(listed.stdout.decode("utf-8")).get("processes") or []
            ident = next(str(p["id"]) for p in found if p.get("pid") in pids or p.get("argv") == _BACKGROUND_ARGV)
        except (UnicodeDecodeError, ValueError, AttributeError, KeyError, StopIteration):
            problems.append(f"engine: `bg list` does not show the background process: {tail(listed.stdout)}")
            return
        stopped = await ctx.run([*ctx.target, "bg", "stop", ident], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if stopped.returncode != 0 or not await _gone(pids):
            problems.append(f"engine: `bg stop {ident}` exited {stopped.returncode} and left {pids} running")
        async with open_session(ctx, "--allow-write", "--allow-approvals") as s:
            pids = await _start_background(ctx, s)
        problems += [f"engine, second start: {p}" for p in s.problems]
        stopped = await ctx.run([*ctx.target, "engine", "stop"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if pids and (stopped.returncode != 0 or not await _gone(pids)):
            problems.append(f"engine: `engine stop` exited {stopped.returncode} and left {pids} running")


@check("engine_lifecycle:background_outlives_owner", covers=["SRV-23", "ENG-04"], timeout_seconds=180, own_engine=True)
async def background_outlives_owner(ctx: Context) -> CheckResult:
    """Approved background processes outlive their task and connection until stopped (SRV-23).

    The project is trusted at ``elevated``. Without a running engine, a background process
    started by a task must stop when the server (and its temporary engine) exits. With
    ``<target> engine`` running, a ``read_only`` task cannot start one; one started by an
    ``elevated`` task survives its connection's EOF, is listed by ``bg list`` and stops on
    ``bg stop ID``; another stops with ``engine stop``.
    """
    problem, _ = await configure_model(ctx, "elevated")
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    try:
        await _background_in_temporary_engine(ctx, problems)
        await _background_in_headless_engine(ctx, problems)
    finally:
        left = await anyio.to_thread.run_sync(kill_commands, ctx.project)
    if left:
        problems.append(f"{len(left)} process(es) were left in the project: {left}")
    return _result(problems, "background processes outlived their owners until bg stop or the engine's close")
