"""Profiles, projects and write access, seen from outside (ENG-01, ENG-02, SRV-07, SRV-08, SRV-09).

Each check sets up two profiles or two projects with the target's own ``trust`` command and
then talks to ``mcp serve`` with the official Python SDK client. What a profile or project
knows is read back only through MCP (``shadow_status``, ``shadow_goal``, ``shadow_memory``),
never from the target's files, so any implementation of the command line can be checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from shadowcode_conformance.checks.packaging import frame, response_to
from shadowcode_conformance.context import LEGACY_REVISIONS, Context
from shadowcode_conformance.json_values import json_member, json_object, json_objects
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "canonical_project",
    "fixed_project",
    "profiles_are_separate",
    "read_only_by_default",
    "server_leaves_nothing_behind",
]

_CALL_TIMEOUT_SECONDS = 30.0
_COMMAND_TIMEOUT_SECONDS = 30.0
_EXIT_WAIT_SECONDS = 10.0
_STRAGGLER_WAIT_SECONDS = 5.0
_SWITCH_PROPERTIES = frozenset({"workspace", "project", "project_path", "profile", "trust", "trust_level", "cwd"})
"""Tool input properties that would let a client move the server to another project or profile (SRV-08)."""


# --- helpers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply:
    """One tool result: its error flag, structured content (``{}`` when absent) and text."""

    is_error: bool
    data: dict[str, Any]
    text: str


@dataclass
class _Server:
    """A connected client plus a place to note what went wrong."""

    client: Client
    label: str
    problems: list[str] = field(default_factory=list[str])

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> _Reply:
        result = await self.client.call_tool(tool, dict(arguments or {}), read_timeout_seconds=_CALL_TIMEOUT_SECONDS)
        text = " ".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")
        data = json_object(result.structured_content) or {}
        return _Reply(bool(result.is_error), data, text)

    async def ok(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; a failure is noted and ``{}`` returned."""
        reply = await self.call(tool, arguments)
        if reply.is_error:
            self.problems.append(f"{self.label}: {tool} {dict(arguments or {})} failed: {reply.text[:200]}")
            return {}
        return reply.data

    async def refused(self, tool: str, arguments: Mapping[str, Any], why: str) -> None:
        """Call a tool that must answer ``isError``; a success is noted."""
        reply = await self.call(tool, arguments)
        if not reply.is_error:
            self.problems.append(f"{self.label}: {tool} {dict(arguments)} succeeded although {why}")

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            self.problems.append(f"{self.label}: {message}")


@asynccontextmanager
async def _serve(
    ctx: Context,
    project: Path,
    *flags: str,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    label: str,
) -> AsyncGenerator[_Server, None]:
    """``<target> [--profile P] --workspace DIR mcp serve FLAGS`` behind the Python SDK client.

    The session's problems are copied into the check's list by the caller; the server's
    stderr goes to a file in the scratch folder, quoted when the session breaks.
    """
    argv = [*ctx.target, *(["--profile", profile] if profile else []), "--workspace", str(project), "mcp", "serve"]
    argv += list(flags)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(env or ctx.env), cwd=ctx.cwd)
    log = ctx.scratch / f"stderr-{uuid.uuid4().hex[:8]}.log"
    with log.open("w", encoding="utf-8") as errlog:
        try:
            async with Client(
                stdio_client(params, errlog=errlog), cache=None, read_timeout_seconds=_CALL_TIMEOUT_SECONDS
            ) as client:
                yield _Server(client, label)
        except Exception as exc:  # a broken session is a finding; quote the server's stderr
            raise _SessionBroken(
                f"{label}: session failed: {_describe(exc)} "
                f"(stderr: {tail(log.read_text(encoding='utf-8', errors='replace'))})"
            ) from exc


def _describe(exc: BaseException) -> str:
    """``Type: message``; exception groups are flattened to their leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in cast("BaseExceptionGroup[BaseException]", exc).exceptions)
    return f"{type(exc).__name__}: {exc}"


class _SessionBroken(Exception):
    """An MCP session ended in an exception; the message says where."""


async def _trust(ctx: Context, directory: Path, level: str, *, profile: str | None = None) -> str:
    """Run ``<target> [--profile P] --workspace D trust --level L D``; a problem sentence or ``""``."""
    argv = [*ctx.target, *(["--profile", profile] if profile else [])]
    argv += ["--workspace", str(directory), "trust", "--level", level, str(directory)]
    done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    if done.timed_out or done.returncode != 0:
        return f"`trust --level {level} {directory}` exited {done.returncode} (stderr: {tail(done.stderr)})"
    return ""


def _copy_project(ctx: Context, name: str) -> Path:
    """A second copy of the sample project in the scratch folder, canonical path."""
    dest = ctx.scratch / name
    shutil.copytree(ctx.project, dest, symlinks=True)
    return dest.resolve()


def _profile_name(status: Mapping[str, Any]) -> Any:
    """``shadow_status.profile`` as a name, whether given as a string or as ``{"name": ...}``."""
    profile = status.get("profile")
    return found.get("name") if (found := json_object(profile)) is not None else profile


def _project(status: Mapping[str, Any]) -> dict[str, Any]:
    return json_member(status, "project")


def _goal_id(data: Mapping[str, Any]) -> str:
    goal = json_member(data, "goal")
    return str(goal.get("id")) if goal.get("id") else ""


def _goal_ids(data: Mapping[str, Any]) -> set[str]:
    return {str(g.get("id")) for g in json_objects(data.get("goals"))}


def _tree_digest(root: Path) -> str:
    """SHA-256 over every path, link target and file content under ``root``, in sorted order."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            h.update(f"F {rel} ".encode() + hashlib.sha256(path.read_bytes()).digest() + b"\n")
        elif path.is_dir():
            h.update(f"D {rel}\n".encode())
    return h.hexdigest()


def _result(problems: list[str], success: str, subresults: list[SubResult] | None = None) -> CheckResult:
    if problems:
        return CheckResult(False, "; ".join(problems), subresults=subresults or [])
    return CheckResult(True, success, subresults=subresults or [])


# --- ENG-01 -----------------------------------------------------------------------------


@check("project_isolation:profiles_are_separate", covers=["ENG-01"], timeout_seconds=150)
async def profiles_are_separate(ctx: Context) -> CheckResult:
    """Trust and goals given in profile ``alpha`` are invisible to ``beta``, the default profile and another root.

    Profile ``alpha`` trusts the project and records a goal; ``beta``, the default profile
    and ``alpha`` under a different ``SHADOWCODE_HOME`` must all see an untrusted project
    without that goal, and ``alpha`` must still have both afterwards (ENG-01).
    """
    problems: list[str] = []
    elsewhere = ctx.scratch / "another home"
    elsewhere.mkdir()
    try:
        if problem := await _trust(ctx, ctx.project, "workspace", profile="alpha"):
            return CheckResult(False, problem)
        async with _serve(ctx, ctx.project, "--allow-write", profile="alpha", label="alpha") as s:
            status = await s.ok("shadow_status")
            s.expect(_profile_name(status) == "alpha", f"profile is {_profile_name(status)!r}, expected 'alpha'")
            s.expect(_project(status).get("trusted") is True, f"project not trusted in alpha: {_project(status)}")
            goal = _goal_id(await s.ok("shadow_goal", {"action": "create", "title": "only in alpha"}))
            s.expect(bool(goal), "shadow_goal create returned no goal id")
        problems += s.problems
        views: tuple[tuple[str, str | None, dict[str, str] | None], ...] = (
            ("beta", "beta", None),
            ("default profile", None, None),
            ("alpha under another SHADOWCODE_HOME", "alpha", {**ctx.env, "SHADOWCODE_HOME": str(elsewhere)}),
        )
        for label, profile, env in views:
            async with _serve(ctx, ctx.project, label=label, profile=profile, env=env) as s:
                status = await s.ok("shadow_status")
                s.expect(_project(status).get("trusted") is False, f"sees alpha's trust: {_project(status)}")
                s.expect(goal not in _goal_ids(await s.ok("shadow_goal", {"action": "list"})), "lists alpha's goal")
                if label == "beta":
                    s.expect(_profile_name(status) == "beta", f"profile is {_profile_name(status)!r}, expected 'beta'")
            problems += s.problems
        async with _serve(ctx, ctx.project, profile="alpha", label="alpha again") as s:
            status = await s.ok("shadow_status")
            s.expect(_project(status).get("level") == "workspace", f"alpha lost its trust: {_project(status)}")
            s.expect(goal in _goal_ids(await s.ok("shadow_goal", {"action": "list"})), "alpha lost its goal")
        problems += s.problems
    except _SessionBroken as exc:
        problems.append(str(exc))
    return _result(problems, "alpha's trust and goal stayed in alpha; beta, default and another root saw neither")


# --- ENG-02 -----------------------------------------------------------------------------


@check("project_isolation:canonical_project", covers=["ENG-02"], timeout_seconds=120)
async def canonical_project(ctx: Context) -> CheckResult:
    """A project is untrusted until trusted, is known by its resolved path, and keeps the level given (ENG-02).

    The project starts untrusted; trusting it through a symbolic link at ``read_only`` shows
    up when serving the real path, and serving through the link names the real path;
    re-trusting at ``elevated`` replaces the level; an unknown level is refused and changes
    nothing.
    """
    problems: list[str] = []
    link = ctx.scratch / "link to project"
    link.symlink_to(ctx.project)
    canonical = str(ctx.project)
    try:
        async with _serve(ctx, ctx.project, label="fresh project") as s:
            project = _project(await s.ok("shadow_status"))
            s.expect(project.get("trusted") is False, f"a fresh project is not untrusted: {project}")
            s.expect(project.get("level") is None, f"a fresh project has level {project.get('level')!r}")
        problems += s.problems
        if problem := await _trust(ctx, link, "read_only"):
            return CheckResult(False, problem)
        async with _serve(ctx, link, label="served through the link") as s:
            project = _project(await s.ok("shadow_status"))
            s.expect(project.get("path") == canonical, f"path is {project.get('path')!r}, expected {canonical!r}")
            s.expect(project.get("trusted") is True, f"trust given through the link is missing: {project}")
            s.expect(project.get("level") == "read_only", f"level is {project.get('level')!r}, expected 'read_only'")
        problems += s.problems
        if problem := await _trust(ctx, ctx.project, "elevated"):
            return CheckResult(False, problem)
        bad = await ctx.run(
            ctx.target_argv("trust", "--level", "root", canonical), timeout_seconds=_COMMAND_TIMEOUT_SECONDS
        )
        if bad.returncode == 0:
            problems.append("`trust --level root` was accepted")
        async with _serve(ctx, ctx.project, label="after re-trust") as s:
            project = _project(await s.ok("shadow_status"))
            s.expect(project.get("level") == "elevated", f"level is {project.get('level')!r}, expected 'elevated'")
        problems += s.problems
    except _SessionBroken as exc:
        problems.append(str(exc))
    return _result(
        problems, "untrusted at first; trust via a link landed on the real path; levels replaced, bad refused"
    )


# --- SRV-08 -----------------------------------------------------------------------------


@check("project_isolation:fixed_project", covers=["SRV-08"], timeout_seconds=150)
async def fixed_project(ctx: Context) -> CheckResult:
    """A server fixed on project B can neither see nor change project A's goals and notes (SRV-08).

    Both projects are trusted in one profile. No tool takes a project, profile or trust
    argument. A's goal is absent from B's list and refused by id (get, advance, abandon);
    A's note is absent from B's memory; B cannot open A's database by a relative or
    absolute path. A then finds its goal untouched and its note intact.
    """
    problems: list[str] = []
    a, b = ctx.project, _copy_project(ctx, "other project")
    marker = f"note-from-a-{uuid.uuid4().hex[:12]}"
    for p in (a, b):
        if problem := await _trust(ctx, p, "workspace"):
            return CheckResult(False, problem)
    try:
        async with _serve(ctx, a, "--allow-write", label="project A") as s:
            tools = (await s.client.list_tools()).tools
            for t in tools:
                properties = json_member(t.input_schema, "properties")
                switches = sorted(_SWITCH_PROPERTIES & set(properties))
                s.expect(not switches, f"{t.name} takes {switches}, which could switch project or profile")
            goal = _goal_id(await s.ok("shadow_goal", {"action": "create", "title": "belongs to A"}))
            s.expect(bool(goal), "shadow_goal create returned no goal id")
            await s.ok("shadow_memory", {"action": "append", "text": marker})
        problems += s.problems
        async with _serve(ctx, b, "--allow-write", label="project B") as s:
            s.expect(_project(await s.ok("shadow_status")).get("path") == str(b), "B's status names another project")
            s.expect(goal not in _goal_ids(await s.ok("shadow_goal", {"action": "list"})), "B lists A's goal")
            await s.refused("shadow_goal", {"action": "get", "goal_id": goal}, "the goal belongs to A")
            await s.refused("shadow_goal", {"action": "advance", "goal_id": goal, "note": "from B"}, "it is A's")
            await s.refused("shadow_goal", {"action": "abandon", "goal_id": goal, "note": "from B"}, "it is A's")
            memory = await s.ok("shadow_memory", {"action": "read"})
            s.expect(marker not in json.dumps(memory), "B's project memory shows A's note")
            for path in (f"../{a.name}/data/app.db", str(a / "data" / "app.db")):
                await s.refused("shadow_sqlite", {"action": "tables", "path": path}, "the file is in A")
        problems += s.problems
        async with _serve(ctx, a, label="project A again") as s:
            got = json_member(await s.ok("shadow_goal", {"action": "get", "goal_id": goal}), "goal")
            s.expect(got.get("status") == "active", f"A's goal is {got.get('status')!r} after B's attempts")
            s.expect(not got.get("progress"), f"A's goal gained progress from B: {got.get('progress')!r}")
            s.expect(marker in json.dumps(await s.ok("shadow_memory", {"action": "read"})), "A's note is gone")
        problems += s.problems
    except _SessionBroken as exc:
        problems.append(str(exc))
    return _result(problems, "no switching arguments; B saw and changed nothing of A's goals, notes or files")


# --- SRV-09 -----------------------------------------------------------------------------


async def _no_write_flag(ctx: Context, project: Path) -> list[str]:
    before = _tree_digest(project)
    async with _serve(ctx, project, label="trusted, no --allow-write") as s:
        server = json_member(await s.ok("shadow_status"), "server")
        s.expect(server.get("allow_write") is False, f"status says allow_write={server.get('allow_write')!r}")
        await s.ok("shadow_memory", {"action": "read"})
        await s.refused("shadow_memory", {"action": "append", "text": "x"}, "the server is read-only")
        await s.refused("shadow_goal", {"action": "create", "title": "x"}, "the server is read-only")
        await s.refused("shadow_understand", {"save": True}, "the server is read-only")
        await s.ok("shadow_understand", {})
        await s.ok("shadow_doctor", {})
        await s.ok("shadow_review", {})
    if _tree_digest(project) != before:
        s.problems.append("trusted, no --allow-write: the project's files changed during a read-only session")
    return s.problems


async def _refuses_writes(ctx: Context, project: Path, label: str, why: str) -> list[str]:
    async with _serve(ctx, project, "--allow-write", label=label) as s:
        await s.refused("shadow_memory", {"action": "append", "text": "x"}, why)
        await s.refused("shadow_goal", {"action": "create", "title": "x"}, why)
        await s.refused("shadow_understand", {"save": True}, why)
    return s.problems


async def _allows_writes(ctx: Context, project: Path) -> list[str]:
    text = f"allowed-{uuid.uuid4().hex[:8]}"
    async with _serve(ctx, project, "--allow-write", label="trusted at workspace, --allow-write") as s:
        note = await s.ok("shadow_memory", {"action": "append", "text": text})
        s.expect(text in str(note.get("content", "")), "the appended note is not in the returned content")
        s.expect(bool(_goal_id(await s.ok("shadow_goal", {"action": "create", "title": "allowed"}))), "no goal id")
    return s.problems


@check("project_isolation:read_only_by_default", covers=["SRV-09"], timeout_seconds=150)
async def read_only_by_default(ctx: Context) -> CheckResult:
    """Writes need ``--allow-write`` and a project trusted above ``read_only`` (SRV-09).

    Four servers: trusted without the flag (read tools work, writes refused, files
    untouched); untrusted with the flag; trusted at ``read_only`` with the flag (all writes
    refused); trusted at ``workspace`` with the flag (a note and a goal are written, so the
    refusals above are policy, not breakage). Each is reported as its own sub-check.
    """
    untrusted = _copy_project(ctx, "untrusted project")
    read_only = _copy_project(ctx, "read-only project")
    for p, level in ((ctx.project, "workspace"), (read_only, "read_only")):
        if problem := await _trust(ctx, p, level):
            return CheckResult(False, problem)
    scenarios = (
        ("no_write_flag", lambda: _no_write_flag(ctx, ctx.project)),
        ("untrusted", lambda: _refuses_writes(ctx, untrusted, "untrusted, --allow-write", "it is untrusted")),
        (
            "read_only_level",
            lambda: _refuses_writes(ctx, read_only, "read_only level, --allow-write", "its level is read_only"),
        ),
        ("workspace_level", lambda: _allows_writes(ctx, ctx.project)),
    )
    subs: list[SubResult] = []
    for name, run in scenarios:
        try:
            problems = await run()
        except _SessionBroken as exc:
            problems = [str(exc)]
        detail = "; ".join(problems) if problems else "as required"
        subs.append(SubResult(f"project_isolation:read_only_by_default:{name}", ("SRV-09",), not problems, detail))
    failed = [s.name.rsplit(":", 1)[-1] for s in subs if not s.ok]
    detail = f"{len(subs) - len(failed)}/{len(subs)} scenarios held" + (
        f"; failed: {', '.join(failed)}" if failed else ""
    )
    return CheckResult(not failed, detail, subresults=subs)


# --- SRV-07 -----------------------------------------------------------------------------


def _processes_with(marker: str) -> list[int]:
    """Pids of this user's processes whose environment holds ``marker`` (Linux ``/proc``)."""
    needle = marker.encode("utf-8")
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def _raw_session(ctx: Context, problems: list[str]) -> None:
    """One handshake-era session: initialize, shadow_status, then stdin EOF; the server must exit 0."""
    stderr = bytearray()
    async with ctx.spawn(ctx.serve_argv()) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        assert proc.stdin is not None and proc.stdout is not None
        buffer = bytearray()
        try:
            with anyio.fail_after(min(_CALL_TIMEOUT_SECONDS, ctx.remaining())):
                init: dict[str, Any] = {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}}
                init["clientInfo"] = {"name": "conformance-isolation", "version": "1"}
                await proc.stdin.send(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
                await response_to(proc.stdout, buffer, 1)
                await proc.stdin.send(frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                call: dict[str, Any] = {"name": "shadow_status", "arguments": {}}
                await proc.stdin.send(frame({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
                answer = await response_to(proc.stdout, buffer, 2)
                status = json_member(json_member(answer, "result"), "structuredContent")
                if _project(status).get("path") != str(ctx.project):
                    problems.append(f"shadow_status names {_project(status).get('path')!r}, not the project")
            await proc.stdin.aclose()
            with anyio.fail_after(_EXIT_WAIT_SECONDS):
                await proc.wait()
            if proc.returncode != 0:
                problems.append(f"the server exited {proc.returncode} at end of input, expected 0")
        except TimeoutError:
            problems.append(f"the server did not answer or exit in time (stderr: {tail(stderr)})")
        except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError) as exc:
            problems.append(f"the session broke: {type(exc).__name__} (stderr: {tail(stderr)})")
        tg.cancel_scope.cancel()


@check("project_isolation:server_leaves_nothing_behind", covers=["SRV-07"], timeout_seconds=120, own_engine=True)
async def server_leaves_nothing_behind(ctx: Context) -> CheckResult:
    """A server with no running engine opens its own, which ends with it; other projects stay as they were (SRV-07).

    The project is trusted at ``read_only`` and a second project is left untrusted. After
    one stdio session on the first project ends at stdin EOF, the server must have exited
    with status 0 and no process of the profile may remain; the trust of both projects is
    then read back unchanged.
    """
    problems: list[str] = []
    other = _copy_project(ctx, "bystander project")
    if problem := await _trust(ctx, ctx.project, "read_only"):
        return CheckResult(False, problem)
    await _raw_session(ctx, problems)
    marker = f"SHADOWCODE_HOME={ctx.home}"
    left: list[int] = []
    with anyio.move_on_after(_STRAGGLER_WAIT_SECONDS):
        while left := await anyio.to_thread.run_sync(_processes_with, marker):
            await anyio.sleep(0.1)
    if left:
        problems.append(f"{len(left)} process(es) of the profile still ran after the server exited: {left}")
    try:
        for project, expected in ((ctx.project, (True, "read_only")), (other, (False, None))):
            async with _serve(ctx, project, label=project.name) as s:
                got = _project(await s.ok("shadow_status"))
                s.expect((got.get("trusted"), got.get("level")) == expected, f"trust is now {got}")
            problems += s.problems
    except _SessionBroken as exc:
        problems.append(str(exc))
    return _result(problems, "the server exited 0 at EOF, left no process behind, and changed no project's trust")
