"""Delegated work seen from outside: owned jobs, exact approvals, EOF cancellation, limits.

The target is driven only through its command line and ``mcp serve``. Every check trusts
the sample project at ``workspace`` and configures a ``scripted`` model replaying
``fixtures/scripts/conformance_jobs.yaml`` (``<target> models add``), with its request log
in the check's scratch folder so model requests can be counted.

* ``jobs_sdk1`` / ``jobs_sdk2`` run the TypeScript SDK job probes (``node_probes/probes/
  jobs_sdk*.mjs``): a Build task that reads, writes, runs a command approved through
  ``shadow_approve`` and a verification approved through ``<target> approve ID``, then
  rollback, an approved ``shadow_test`` job with no model request, and the permission
  ceiling of ``shadow_run`` (CONF-02).
* ``stdin_eof_cancels_task``: closing the client's stdin while its task sits in an approved
  ``sleep 60`` ends the task and the child, checked by pid and process group (SRV-21).
* ``detached_task_survives_owner_eof``: the same against a running ``<target> engine``,
  while a detached ``run --detach`` task, parked on an approval, is left alone and then
  finishes once approved from the CLI (ENG-08, SRV-22).
* ``owner_job_limit``: 64 jobs on one connection are accepted, the 65th is refused and the
  connection stays usable (SRV-24, SRV-25).

Command children are found by their working directory (the check's private project) in
``/proc``; any that a failing target leaves behind are killed and reported. The set-up,
session and engine helpers here are shared with :mod:`shadowcode_conformance.checks.engine_lifecycle`.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from shadowcode_conformance.checks.node_stdio import find_probe, probe_document, probe_verdict
from shadowcode_conformance.context import LEGACY_REVISIONS, Context, EngineMode
from shadowcode_conformance.engine import engine_running, headless_engine
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.polling import Backoff
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "McpSession",
    "SessionEnded",
    "commands_in",
    "commands_reaped",
    "configure_model",
    "detached_task_survives_owner_eof",
    "job_status",
    "jobs_sdk1",
    "jobs_sdk2",
    "kill_commands",
    "model_and_engine",
    "open_session",
    "owner_job_limit",
    "pending_approval",
    "process_alive",
    "settled_status",
    "sigkill_cancels_task",
    "stdin_eof_cancels_task",
    "wait_for",
]

SCRIPT = Path("fixtures") / "scripts" / "conformance_jobs.yaml"
"""The model script, relative to the repository root."""

OWNER_JOBS = 64
"""Jobs one owner may delegate over its lifetime (SRV-24, SRV-25)."""

_SLEEP_ARGV = ["sleep", "60"]
_CALL_TIMEOUT_SECONDS = 30.0
_COMMAND_TIMEOUT_SECONDS = 30.0
_EXIT_WAIT_SECONDS = 15.0
_GONE_WAIT_SECONDS = 10.0
WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.1
_PROBE_MARGIN_SECONDS = 10.0
FINISHED = frozenset({"done", "failed", "cancelled", "interrupted"})


# --- set-up -----------------------------------------------------------------------------


async def configure_model(ctx: Context, level: str = "workspace") -> tuple[str, Path]:
    """Trust the project at ``level`` and make the conformance script the default model.

    The model is added with ``<target> models add scripted --provider scripted --script F
    --default``; its request log is then pointed at ``<scratch>/model-requests.jsonl`` in
    the profile's ``settings.json`` (ENG-05).

    Returns:
        ``(problem sentence or "", request log path)``.
    """
    log = ctx.scratch / "model-requests.jsonl"
    trusted = await ctx.trust(level)
    if trusted.returncode != 0:
        return f"`trust --level {level}` exited {trusted.returncode}: {tail(trusted.stderr)}", log
    script = ctx.repo_root / SCRIPT
    argv = [*ctx.target, "models", "add", "scripted", "--provider", "scripted", "--script", str(script), "--default"]
    added = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    if added.returncode != 0:
        return f"`models add scripted` exited {added.returncode}: {tail(added.stderr)}", log
    settings = ctx.home / "profiles" / "default" / "settings.json"
    try:
        doc = json.loads(settings.read_text(encoding="utf-8"))
        for entry in doc.get("models", []):
            if entry.get("name") == "scripted":
                entry["request_log"] = str(log)
        settings.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    except (OSError, ValueError, AttributeError) as exc:
        return f"could not point the model's request_log at the scratch folder in {settings}: {exc}", log
    return "", log


# --- a raw JSON-RPC session over stdio ----------------------------------------------------


class SessionEnded(Exception):
    """The server closed stdout or stdin in the middle of an exchange; the message says how."""


@dataclass(frozen=True)
class Reply:
    """One tool result: error flag, structured content (``{}`` when absent) and text."""

    is_error: bool
    data: dict[str, Any]
    text: str


@dataclass
class McpSession:
    """``mcp serve`` spoken to line by line, so the check decides when stdin closes.

    Attributes:
        proc: the server process.
        stderr: what the server wrote on stderr so far.
        problems: findings, each one sentence.
    """

    proc: anyio.abc.Process
    stderr: bytearray
    problems: list[str] = field(default_factory=list[str])
    _buffer: bytearray = field(default_factory=bytearray)
    _next_id: int = 1

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and read lines until its response (bounded)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        ident = self._next_id
        self._next_id += 1
        frame = {"jsonrpc": "2.0", "id": ident, "method": method, "params": dict(params or {})}
        try:
            with anyio.fail_after(_CALL_TIMEOUT_SECONDS):
                await self.proc.stdin.send(json.dumps(frame).encode("utf-8") + b"\n")
                while True:
                    while (cut := self._buffer.find(b"\n")) >= 0:
                        line = bytes(self._buffer[:cut])
                        del self._buffer[: cut + 1]
                        message = json.loads(line)
                        reply = json_object(message)
                        if reply is not None and reply.get("id") == ident:
                            return reply
                    self._buffer.extend(await self.proc.stdout.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            with anyio.move_on_after(1.0):
                await self.proc.wait()
            raise SessionEnded(
                f"the server ended the session during {method} (exit {self.proc.returncode}; "
                f"stderr: {tail(self.stderr)})"
            ) from exc

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Reply:
        """``tools/call``; a JSON-RPC error counts as an error result."""
        answer = await self.request("tools/call", {"name": tool, "arguments": dict(arguments or {})})
        if "error" in answer:
            return Reply(True, {}, str(answer["error"].get("message", answer["error"])))
        result: dict[str, Any] = answer.get("result") or {}
        content: list[dict[str, Any]] = result.get("content", [])
        text = " ".join(c.get("text", "") for c in content if c.get("type") == "text")
        data = result.get("structuredContent")
        return Reply(result.get("isError") is True, json_object(data) or {}, text)

    async def ok(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A call that must succeed; a failure is noted and ``{}`` returned."""
        reply = await self.call(tool, arguments)
        if reply.is_error:
            self.problems.append(f"{tool} {dict(arguments or {})} failed: {reply.text[:200]}")
            return {}
        return reply.data

    async def job(self, job_id: str) -> dict[str, Any]:
        """``shadow_jobs get`` (first page of events)."""
        return await self.ok("shadow_jobs", {"action": "get", "job_id": job_id})

    async def wait_approval(self, job_id: str) -> dict[str, Any] | None:
        """The job's first pending approval, polled for at most ``WAIT_SECONDS``; None if none came."""
        with anyio.move_on_after(WAIT_SECONDS):
            while True:
                got = await self.job(job_id)
                pending: list[dict[str, Any]] = got.get("pending_approvals") or []
                if pending:
                    return dict(pending[0])
                row: dict[str, Any] = got.get("job") or {}
                if row.get("status") in FINISHED or not got:
                    self.problems.append(f"job {job_id} ended {got.get('job')} before asking for approval")
                    return None
                await anyio.sleep(_POLL_SECONDS)
        self.problems.append(f"job {job_id} asked for no approval within {WAIT_SECONDS:g} s")
        return None

    async def wait_finished(self, job_id: str, seconds: float = WAIT_SECONDS) -> str:
        """The job's status once finished, polled for at most ``seconds`` ("?" when unknown)."""
        status = "?"
        if not job_id:
            return status
        with anyio.move_on_after(seconds):
            while status not in FINISHED:
                row: dict[str, Any] = (await self.job(job_id)).get("job") or {}
                status = str(row.get("status", "?"))
                if status not in FINISHED:
                    await anyio.sleep(_POLL_SECONDS)
        return status

    async def close_stdin(self) -> None:
        """End the client side: close the server's stdin."""
        if self.proc.stdin is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.proc.stdin.aclose()

    async def wait_exit(self, seconds: float = _EXIT_WAIT_SECONDS) -> int | None:
        """The server's exit status, or None when it is still running after ``seconds``."""
        with anyio.move_on_after(seconds):
            return await self.proc.wait()
        return None


@asynccontextmanager
async def open_session(
    ctx: Context, *flags: str, workspace: Path | None = None
) -> AsyncGenerator[McpSession, None]:
    """``<target> --workspace W mcp serve FLAGS`` after an ``initialize`` handshake (SRV-03).

    Args:
        ctx: the run's context.
        flags: ``mcp serve`` flags.
        workspace: the project to serve (default: the sample project).

    Raises:
        TimeoutError: the server did not answer the handshake in time.
    """
    stderr = bytearray()
    argv = ctx.target_argv("mcp", "serve", *flags, workspace=workspace)
    async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        session = McpSession(proc, stderr)
        info = {"name": "conformance-delegation", "version": "1"}
        init = {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}, "clientInfo": info}
        try:
            await session.request("initialize", init)
            assert proc.stdin is not None
            await proc.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            yield session
        finally:
            await session.close_stdin()
            await session.wait_exit(5.0)
            tg.cancel_scope.cancel()


# --- processes --------------------------------------------------------------------------


def commands_in(root: Path, argv: list[str] | None = None) -> list[int]:
    """Pids of this user's processes whose cwd is ``root`` or inside it (Linux ``/proc``).

    Args:
        root: a directory private to the check (its project).
        argv: when given, only processes whose command line is exactly this.
    """
    found: list[int] = []
    proc = Path("/proc")
    base = str(root)
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            if cwd != base and not cwd.startswith(base + os.sep):
                continue
            if (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if argv is not None and (entry / "cmdline").read_bytes().split(b"\0")[:-1] != [a.encode() for a in argv]:
                continue
        except (OSError, IndexError):
            continue
        found.append(int(entry.name))
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_commands(root: Path) -> list[int]:
    """Kill (SIGKILL) every process working inside ``root``; returns their pids."""
    pids = commands_in(root)
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return pids


@asynccontextmanager
async def commands_reaped(ctx: Context, problems: list[str]) -> AsyncGenerator[None, None]:
    """When the block ends, kill the command processes left in the project (:func:`kill_commands`).

    Any found are noted in ``problems`` as one sentence: the target should have stopped them.
    """
    try:
        yield
    finally:
        left = await anyio.to_thread.run_sync(kill_commands, ctx.project)
        if left:
            problems.append(f"{len(left)} command process(es) were left in the project: {left}")


@asynccontextmanager
async def model_and_engine(ctx: Context, problems: list[str]) -> AsyncGenerator[Path | None, None]:
    """The scripted model configured (:func:`configure_model`) and ``<target> engine`` running
    (:func:`~shadowcode_conformance.engine.headless_engine`) until the block ends, then the
    command processes left in the project reaped (:func:`commands_reaped`) (ENG-03).

    Yields:
        The model's request log, or None when the model or the engine could not be set up
        (``problems`` says why).
    """
    problem, log = await configure_model(ctx)
    if problem:
        problems.append(problem)
        yield None
        return
    async with commands_reaped(ctx, problems), headless_engine(ctx, problems) as engine:
        yield None if engine is None else log


async def wait_for(predicate: Any, seconds: float) -> bool:
    """Poll ``predicate()`` (run in a thread) until true or ``seconds`` pass; whether it became true."""
    with anyio.move_on_after(seconds):
        while not await anyio.to_thread.run_sync(predicate):
            await anyio.sleep(_POLL_SECONDS)
        return True
    return False


async def job_status(ctx: Context, job_id: str) -> str:
    """A job's status read through ``<target> --json jobs ID`` ("?" when unreadable)."""
    done = await ctx.run(ctx.target_argv("--json", "jobs", job_id), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    try:
        doc = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "?"
    found = json_object(doc)
    job = json_object(found.get("job", found)) if found is not None else {}
    return str(job.get("status", "?")) if job is not None else "?"


async def settled_status(ctx: Context, job_id: str, seconds: float = WAIT_SECONDS) -> str:
    """A job's status through ``<target> --json jobs ID`` once it is finished, polled for at most
    ``seconds`` (bounded further by the check's time left); the last status read when it never was.

    A cancelled job's row changes after its children are gone (the engine records the end of
    its cleanup), so a status read at once may still say ``running``.
    """
    status, pause = await job_status(ctx, job_id), Backoff()
    with anyio.move_on_after(min(seconds, ctx.remaining())):
        while status not in FINISHED:
            await pause.sleep()
            status = await job_status(ctx, job_id)
    return status


def check_result(problems: list[str], success: str, subresults: list[SubResult] | None = None) -> CheckResult:
    if problems:
        return CheckResult(False, "; ".join(problems), subresults=subresults or [])
    return CheckResult(True, success, subresults=subresults or [])


# --- the TypeScript SDK job probes (CONF-02) ----------------------------------------------


async def _run_jobs_probe(ctx: Context, probe: str) -> CheckResult:
    found = find_probe(ctx, probe)
    if isinstance(found, CheckResult):
        return found
    node, script = found
    problem, log = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    budget = max(5.0, ctx.remaining() - _PROBE_MARGIN_SECONDS)
    argv = [node, str(script), "--timeout-ms", str(int(budget * 1000)), "--request-log", str(log), "--"]
    argv += ctx.serve_argv("--allow-write", "--allow-approvals")
    try:
        done = await ctx.run(argv, timeout_seconds=budget + _PROBE_MARGIN_SECONDS / 2)
    finally:
        left = await anyio.to_thread.run_sync(kill_commands, ctx.project)
    read = probe_document(ctx, done, probe)
    if isinstance(read, CheckResult):
        return read
    doc, subs = read
    subs.append(
        SubResult(
            f"{probe}:no_command_child_left",
            ("SRV-21", "ENG-04"),
            not left,
            f"{len(left)} command process(es) still ran in the project: {left}" if left else "none left",
        )
    )
    sdk = f"{doc.get('sdk', '?')} {doc.get('sdk_version', '?')}"
    return probe_verdict(doc, subs, done, f"{sdk} at {doc.get('protocol_version') or '?'}")


@check("delegation:jobs_sdk1", covers=["CONF-02", "CONF-03"], timeout_seconds=150)
async def jobs_sdk1(ctx: Context) -> CheckResult:
    """Delegated work through the TypeScript SDK 1.x client (CONF-02, CONF-03)."""
    return await _run_jobs_probe(ctx, "jobs_sdk1")


@check("delegation:jobs_sdk2", covers=["CONF-02", "CONF-03"], timeout_seconds=150)
async def jobs_sdk2(ctx: Context) -> CheckResult:
    """Delegated work through the TypeScript SDK 2.x client (CONF-02, CONF-03)."""
    return await _run_jobs_probe(ctx, "jobs_sdk2")


# --- stdin EOF cancels the owner's work (SRV-21, SRV-22) --------------------------------------


async def _approved_sleep(ctx: Context, s: McpSession) -> tuple[str, list[int]]:
    """Delegate a task that blocks in an approved ``sleep 60`` in the project.

    Returns:
        ``(job id, pids of the running sleep)``; the pids are empty (with a problem noted on
        ``s``) when the task never asked for the approval or the child never ran.
    """
    submitted = await s.ok("shadow_run", {"prompt": "conformance sleep", "permission_level": "workspace"})
    job_id = str(submitted.get("job_id", ""))
    approval = await s.wait_approval(job_id) if job_id else None
    if approval is None:
        return job_id, []
    action = approval.get("action") or approval
    if action.get("argv") != _SLEEP_ARGV or action.get("cwd") != str(ctx.project):
        s.problems.append(f"the approval names {action}, not {_SLEEP_ARGV} in the project")
    await s.ok("shadow_approve", {"approval_id": approval["id"], "decision": "approve"})
    if await wait_for(lambda: bool(commands_in(ctx.project, _SLEEP_ARGV)), WAIT_SECONDS):
        return job_id, commands_in(ctx.project, _SLEEP_ARGV)
    s.problems.append(f"no `sleep 60` ran in the project within {WAIT_SECONDS:g} s of the approval")
    return job_id, []


def _groups_of(pids: list[int]) -> set[int]:
    """The process groups of ``pids`` that still exist; read them before anything is signalled."""
    return {g for pid in pids if (g := _pgid(pid)) is not None}


async def _sleeper_gone(sleeper: list[int], groups: set[int]) -> bool:
    """Whether the sleep's processes and ``groups`` all end within ``_GONE_WAIT_SECONDS``."""
    return await wait_for(
        lambda: not any(process_alive(p) for p in sleeper) and not any(_group_alive(g) for g in groups),
        _GONE_WAIT_SECONDS,
    )


async def _sleep_task_then_eof(ctx: Context, problems: list[str], label: str) -> str:
    """Start a task blocked in an approved ``sleep 60``, close stdin, and check both are gone.

    Returns:
        The sleeping task's job id ("" when it never got that far).
    """
    async with open_session(ctx, "--allow-write", "--allow-approvals") as s:
        job_id, sleeper = await _approved_sleep(ctx, s)
        if sleeper:
            groups = _groups_of(sleeper)
            await s.close_stdin()
            code = await s.wait_exit()
            if code is None:
                s.problems.append(f"the server still ran {_EXIT_WAIT_SECONDS:g} s after its stdin closed")
            elif code != 0:
                s.problems.append(f"the server exited {code} at end of input, expected 0")
            if not await _sleeper_gone(sleeper, groups):
                s.problems.append(f"the approved `sleep 60` (pid {sleeper}) outlived the connection's EOF")
    problems.extend(f"{label}: {p}" for p in s.problems)
    if sleeper and not s.problems:
        status = await settled_status(ctx, job_id)
        if status != "cancelled":
            problems.append(f"{label}: the owner's job {job_id} is {status!r} after EOF, expected 'cancelled'")
    return job_id


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def process_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (Linux ``/proc``)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@check(
    "delegation:stdin_eof_cancels_task", covers=["SRV-21", "SRV-22", "CONF-03"], timeout_seconds=120, own_engine=True
)
async def stdin_eof_cancels_task(ctx: Context) -> CheckResult:
    """EOF on the server's stdin cancels its task and stops the task's command child (SRV-21, SRV-22).

    The server (with its own temporary engine) runs a task that waits in an approved
    ``sleep 60``. Once that child runs, stdin is closed: the server must exit 0, the child
    and its process group must be gone within a bounded wait, and the job must read
    ``cancelled`` through ``<target> jobs ID``.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    async with commands_reaped(ctx, problems):
        await _sleep_task_then_eof(ctx, problems, "temporary engine")
    return check_result(
        problems, "the server exited 0 at EOF; the sleeping child and its group were gone; job cancelled"
    )


@check("delegation:sigkill_cancels_task", covers=["SRV-21", "SRV-22", "CONF-03"], timeout_seconds=120)
async def sigkill_cancels_task(ctx: Context) -> CheckResult:
    """SIGKILL of a stdio server cancels its task and stops the task's command child (SRV-21, SRV-22, CONF-03).

    The server runs a task that waits in an approved ``sleep 60``; once that child runs,
    the server process alone gets SIGKILL. The child and its process group must be gone
    within a bounded wait and ``<target> jobs ID`` must report the job finished within
    another (:func:`settled_status`). In an ``--attached`` run the server is the relay into
    the runner's engine: the engine must outlive it and the job must read ``cancelled``.
    Otherwise the server's temporary engine dies with it, and ``cancelled`` or
    ``interrupted`` are both accepted.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    attached = ctx.engine is EngineMode.ATTACHED
    accepted = ("cancelled",) if attached else ("cancelled", "interrupted")
    problems: list[str] = []
    job_id, sleeper, status = "", list[int](), "?"
    async with commands_reaped(ctx, problems):
        async with open_session(ctx, "--allow-write", "--allow-approvals") as s:
            job_id, sleeper = await _approved_sleep(ctx, s)
            if sleeper:
                groups = _groups_of(sleeper)
                s.proc.send_signal(signal.SIGKILL)
                if await s.wait_exit() is None:
                    s.problems.append(f"the server still ran {_EXIT_WAIT_SECONDS:g} s after SIGKILL")
                if not await _sleeper_gone(sleeper, groups):
                    s.problems.append(f"the approved `sleep 60` (pid {sleeper}) outlived the server's SIGKILL")
        problems += s.problems
        if sleeper and not problems:
            if attached and not await engine_running(ctx):
                problems.append("the headless engine did not outlive the killed relay")
            status = await settled_status(ctx, job_id)
            if status not in accepted:
                expected = " or ".join(repr(a) for a in accepted)
                problems.append(f"the owner's job {job_id} is {status!r} after the SIGKILL, expected {expected}")
    where = "the relay into the headless engine" if attached else "the server with its temporary engine"
    return check_result(problems, f"SIGKILL of {where}: the sleeping child and its group were gone; job {status}")


async def pending_approval(ctx: Context, job_id: str) -> str:
    """The id of ``job_id``'s pending approval from ``<target> --json approvals`` ("" when none)."""
    done = await ctx.run(ctx.target_argv("--json", "approvals"), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    try:
        found = json_objects(json.loads(done.stdout.decode("utf-8")).get("approvals"))
    except (UnicodeDecodeError, ValueError, AttributeError):
        return ""
    return next((str(a["id"]) for a in found if a.get("task_id") == job_id), "")


async def detached_task(
    ctx: Context, goal: str, problems: list[str], seconds: float = WAIT_SECONDS
) -> tuple[str, str]:
    """``run --detach GOAL`` and wait until the task asks for approval.

    Args:
        ctx: the run's context.
        goal: the task's goal (the scripted model picks its script by it).
        problems: receives what went wrong.
        seconds: how long to wait for the approval.

    Returns:
        ``(job id, approval id)``; either is "" when it did not come (a problem says why).
    """
    detached = await ctx.run(
        ctx.target_argv("--json", "run", "--detach", goal), timeout_seconds=_COMMAND_TIMEOUT_SECONDS
    )
    try:
        job_id = str(json.loads(detached.stdout.decode("utf-8"))["job_id"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        said = f"{tail(detached.stdout)} {tail(detached.stderr)}"
        problems.append(f"`run --detach` exited {detached.returncode}: {said}")
        return "", ""
    approval = ""
    pause = Backoff()
    with anyio.move_on_after(seconds):
        while not (approval := await pending_approval(ctx, job_id)):
            await pause.sleep()
    if not approval:
        problems.append(f"the detached job {job_id} did not ask for approval within {seconds:g} s")
    return job_id, approval


@check(
    "delegation:detached_task_survives_owner_eof",
    covers=["ENG-08", "ENG-07", "ENG-03", "SRV-21", "SRV-22", "CONF-03"],
    timeout_seconds=150,
    own_engine=True,
)
async def detached_task_survives_owner_eof(ctx: Context) -> CheckResult:
    """A detached CLI task runs on through another owner's EOF and finishes (ENG-08, SRV-21, SRV-22).

    With ``<target> engine`` running, ``run --detach`` starts a task that spends a moment
    on the model and then waits for approval of a command. A stdio server attached to the
    engine then runs a task blocked in an approved ``sleep 60`` and its stdin is closed:
    the sleeping child must be gone and its job cancelled, while the detached task still
    waits with its approval pending; approved with ``<target> approve ID`` it finishes ``done``.
    """
    problems: list[str] = []
    async with model_and_engine(ctx, problems) as log:
        if log is None:
            return check_result(problems, "")
        job_id, approval = await detached_task(
            ctx, "conformance detached: look around, then run a command", problems
        )
        if not approval:
            return check_result(problems, "")
        await _sleep_task_then_eof(ctx, problems, "attached to the engine")
        during = await job_status(ctx, job_id)
        if during in FINISHED or await pending_approval(ctx, job_id) != approval:
            problems.append(f"after the other owner's EOF the detached job is {during!r} without its approval")
        else:
            approved = await ctx.run(ctx.target_argv("approve", approval), timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
            if approved.returncode != 0:
                problems.append(f"`approve {approval}` exited {approved.returncode}: {tail(approved.stderr)}")
            final = await settled_status(ctx, job_id)
            if final != "done":
                problems.append(f"the detached job {job_id} ended {final!r}, expected 'done'")
        stopped = await ctx.run([*ctx.target, "engine", "stop"], timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if stopped.returncode != 0:
            problems.append(f"`engine stop` exited {stopped.returncode}: {tail(stopped.stderr)}")
    return check_result(problems, "EOF cancelled the owner's sleeping task; the detached task waited on and finished")


# --- owner job limit (SRV-24, SRV-25) ----------------------------------------------------------


@check("delegation:owner_job_limit", covers=["SRV-24", "SRV-25"], timeout_seconds=150)
async def owner_job_limit(ctx: Context) -> CheckResult:
    """One connection may delegate 64 jobs; the 65th is refused and the connection stays usable (SRV-24).

    The jobs are Plan tasks whose scripted model answers at once. After the refusal the
    connection must still list its 64 jobs.
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    async with open_session(ctx, "--allow-write") as s:
        accepted: list[str] = []
        for n in range(1, OWNER_JOBS + 1):
            reply = await s.call("shadow_run", {"prompt": f"conformance quick: job {n}", "mode": "plan"})
            if reply.is_error or not reply.data.get("job_id"):
                s.problems.append(f"job {n} of {OWNER_JOBS} was refused: {reply.text[:200]}")
                break
            accepted.append(str(reply.data["job_id"]))
        if len(accepted) == OWNER_JOBS:
            extra = await s.call("shadow_run", {"prompt": "conformance quick: one too many", "mode": "plan"})
            if not extra.is_error:
                s.problems.append(f"job {OWNER_JOBS + 1} was accepted: {extra.data}")
            jobs: list[dict[str, Any]] = (await s.ok("shadow_jobs", {"action": "list"})).get("jobs") or []
            listed = {str(j.get("id")) for j in jobs}
            if listed != set(accepted):
                s.problems.append(f"after the refusal the connection lists {len(listed)} jobs, not its {OWNER_JOBS}")
            status = await s.call("shadow_status")
            if status.is_error:
                s.problems.append("shadow_status failed after the refused submission")
    return check_result(
        s.problems, f"{OWNER_JOBS} jobs accepted, job {OWNER_JOBS + 1} refused; the connection stayed usable"
    )
