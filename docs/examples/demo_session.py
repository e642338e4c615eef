"""Drive a ShadowCode server with the official MCP Python SDK client and print a transcript.

Usage: ``python docs/examples/demo_session.py [--target "python3 dist/shadowcode.pyz"]``

It makes the sample project of ``shadowcode_conformance/fixtures/`` in a temporary folder (with a SQLite database in
WAL mode whose newest rows are still in the WAL file), uses a temporary profile, trusts the
project at level ``workspace`` and makes a ``scripted`` model (replaying
``conformance/shadowcode_conformance/fixtures/scripts/demo_delegation.yaml``) the default, then serves the project with
``mcp serve --allow-write --allow-approvals`` and, over stdio, shows:

1. inspection: the negotiated protocol revision, the tools, a project map, a memory note
   written and read back, and a SQL answer that only the WAL file holds;
2. delegation: ``shadow_run`` starts a Build task at ``workspace`` level; the task edits
   ``notebook/__init__.py`` and asks to run one command; ``shadow_jobs`` shows the pending
   approval; ``shadow_approve`` approves it; ``shadow_jobs`` follows the job until it is done;
   the edited file is shown from disk; ``shadow_checkpoint`` shows what was saved before the
   write; ``shadow_rollback`` (``confirm: true``) restores the file, shown again;
3. the sample project's tree and every file's bytes, compared with how they were just before
   ``shadow_run``: any difference fails the demo. Compared with how they were before the
   server started, the only difference allowed is ``data/app.db-shm``, the shared-memory
   index SQLite may create when ``shadow_sqlite`` reads rows still in the WAL file (as
   docs/mcp-server.md says); it is named in the transcript when it appears.

Only the MCP tools' inputs and outputs (docs/mcp-server.md) and the command line are used.
Everything it made is removed at the end. Exit status 0 when every step did what it shows,
1 otherwise (one line on stderr says which step failed).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "conformance/shadowcode_conformance/fixtures" / "scripts" / "demo_delegation.yaml"
PROMPT = "Give the notebook package a version number and check that it imports."
EDITED = "notebook/__init__.py"
VERSION_LINE = '__version__ = "0.2.0"'
SESSION_SECONDS = 90.0
WAIT_SECONDS = 30.0
COMMAND_SECONDS = 30.0
POLL_SECONDS = 0.1
EVENT_PAGES_MAX = 20
SQLITE_SIDECAR = "data/app.db-shm"
FINISHED = frozenset({"done", "failed", "cancelled", "interrupted"})

Call = Callable[..., Awaitable[dict[str, Any]]]
Tree = dict[str, bytes | None]


class DemoFailed(Exception):
    """A step did not do what the transcript says; the message names the step."""


def _load_fixture() -> Any:
    spec = importlib.util.spec_from_file_location("sample_project", SCRIPT.parents[1] / "sample_project.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def snapshot(root: Path) -> Tree:
    """Every path under ``root`` (relative, "/"-separated): a file's bytes, None for a folder.

    A symlink is recorded as ``b"-> target"`` and not followed.
    """
    tree: Tree = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            tree[rel] = b"-> " + os.readlink(path).encode("utf-8", "surrogateescape")
        elif path.is_dir():
            tree[rel] = None
        else:
            tree[rel] = path.read_bytes()
    return tree


def show_file(text: str, original: str) -> None:
    """Print ``text`` indented, marking lines added to ``original`` with ``+``."""
    for line in difflib.ndiff(original.splitlines(), text.splitlines()):
        if line.startswith(("  ", "+ ")):
            say(f"  {'+' if line[0] == '+' else '|'} {line[2:]}")
        elif line.startswith("- "):
            say(f"  - {line[2:]}")


def _short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show_events(events: list[dict[str, Any]]) -> None:
    """Print the readable part of a job's events (model text, tool calls, approvals, results).

    The model's last reply (no tool calls) is left out: it is the job's answer, shown apart.
    """
    for event in events:
        kind, data = event.get("kind"), event.get("data") or {}
        if kind == "model.reply" and data.get("content") and data.get("tool_calls"):
            say(f"  model: {data['content']}")
        elif kind == "tool.call":
            args = data.get("arguments") or {}
            shown = shlex.join(args["argv"]) if isinstance(args.get("argv"), list) else args.get("path", "")
            say(f"    {data.get('name')} {_short(shown)}")
        elif kind == "tool.result" and not data.get("ok", True):
            say(f"    refused: {_short(data.get('summary', ''))}")
        elif kind == "file.write":
            say(f"    wrote {data.get('path')} (its previous content was checkpointed first)")
        elif kind == "approval.resolved":
            say(f"    approval {data.get('approval_id')}: {data.get('status')}")
        elif kind == "command.result":
            say(f"    exit {data.get('exit_code')}, output: {_short(str(data.get('output', '')).strip())}")


class Job:
    """One delegated job followed through ``shadow_jobs get`` (events paged, shown once each)."""

    def __init__(self, call: Call, job_id: str) -> None:
        self.call = call
        self.id = job_id
        self.state: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.shown = 0
        self.polls = 0

    async def refresh(self) -> None:
        """Read the job, its pending approvals and all its events (at most EVENT_PAGES_MAX pages)."""
        self.polls += 1
        first = await self.call("shadow_jobs", action="get", job_id=self.id)
        events = list(first.get("events") or [])
        cursor = first.get("next_cursor")
        for _ in range(EVENT_PAGES_MAX):
            if cursor is None:
                break
            page = await self.call("shadow_jobs", action="get", job_id=self.id, cursor=str(cursor))
            events += page.get("events") or []
            cursor = page.get("next_cursor")
        self.state, self.events = first, events

    @property
    def status(self) -> str:
        return str((self.state.get("job") or {}).get("status", "?"))

    @property
    def pending(self) -> list[dict[str, Any]]:
        return list(self.state.get("pending_approvals") or [])

    async def wait(self, what: str, done: Callable[[Job], bool]) -> None:
        """Poll until ``done(self)`` holds; DemoFailed after WAIT_SECONDS or when the job ends first."""
        with anyio.move_on_after(WAIT_SECONDS):
            while True:
                await self.refresh()
                if done(self):
                    return
                if self.status in FINISHED:
                    error = (self.state.get("job") or {}).get("error")
                    raise DemoFailed(f"job {self.id} ended {self.status} before {what}: {error}")
                await anyio.sleep(POLL_SECONDS)
        raise DemoFailed(f"job {self.id}: {what} did not happen within {WAIT_SECONDS:g} s (status {self.status})")

    def show_new_events(self) -> None:
        show_events(self.events[self.shown :])
        self.shown = len(self.events)


async def inspect(client: Client, call: Call) -> None:
    """The read side: tools, status, map, a memory note, a SQL answer from the WAL."""
    tools = (await client.list_tools()).tools
    read_only = [t.name for t in tools if t.annotations and t.annotations.read_only_hint]
    changing = [t.name for t in tools if t.name not in read_only]
    say(f"\n== {len(tools)} tools")
    say(f"  read-only:     {', '.join(read_only)}")
    say(f"  changes state: {', '.join(changing)}")
    status = await call("shadow_status")
    say(f"\n== project {status['project']['path']} (trusted: {status['project']['level']})")
    understood = await call("shadow_understand")
    say(f"\n== shadow_understand: project map ({understood['files']} files)")
    for line in str(understood["map"]).splitlines():
        if line.startswith("## README"):
            break
        say(f"  {line}")
    note = await call("shadow_memory", action="append", text="The notebook store keeps notes in data/app.db.")
    read = await call("shadow_memory", action="read")
    say(f"== shadow_memory: note appended (hash {str(note['hash'])[:12]}...) and read back\n  {read['content']}")
    tables = await call("shadow_sqlite", action="tables", path="data/app.db")
    say("\n== shadow_sqlite: tables in data/app.db: " + ", ".join(t["name"] for t in tables["tables"]))
    answer = await call(
        "shadow_sqlite",
        action="query",
        path="data/app.db",
        sql="SELECT id, title FROM notes WHERE title = ?",
        params=["from-wal"],
    )
    say(f"  SELECT id, title FROM notes WHERE title = 'from-wal' -> {json.dumps(answer['rows'])}")
    say("  (that row exists only in the WAL file: the query sees live data)")


async def delegate(call: Call, project: Path, before: Tree) -> None:
    """The point of the product: a Build task, its approval, its write, the rollback.

    ``before`` is filled with the project's snapshot taken just before ``shadow_run``.
    """
    before.update(snapshot(project))
    edited = project / EDITED
    original = edited.read_text(encoding="utf-8")

    say("\n== shadow_run: delegate a Build task at permission level workspace")
    say(f"  prompt: {PROMPT}")
    started = await call("shadow_run", prompt=PROMPT, mode="build", permission_level="workspace")
    job = Job(call, str(started["job_id"]))
    say(f"  -> job {job.id}: {started['status']} at {started['permission_level']}, model {started.get('model')}")
    say("  (the answer comes at once; the job id is not a claim that the work is done)")
    if started["permission_level"] != "workspace":
        raise DemoFailed(f"shadow_run: the job runs at {started['permission_level']}, not workspace")

    await job.wait("asking for an approval", lambda j: bool(j.pending))
    say(f"\n== shadow_jobs get: the job is {job.status}")
    job.show_new_events()
    approval = job.pending[0]
    action = approval.get("action") or {}
    say(f"  pending approval {approval['id']} ({approval.get('kind')}): run exactly")
    say(f"    {shlex.join(action.get('argv') or [])}")
    say(f"    in {action.get('cwd')}")
    if VERSION_LINE not in edited.read_text(encoding="utf-8"):
        raise DemoFailed(f"shadow_jobs: the job waits for approval but {EDITED} does not hold its edit")
    say(f"  ({EDITED} on disk already holds the edit; the command waits)")

    say(f"\n== shadow_approve {approval['id']}")
    say(f"  In normal use the person approves, at the terminal: shadowcode approve {approval['id']}")
    say("  (or reviews the list with `shadowcode approvals`). This demo's server was started with")
    say("  --allow-write --allow-approvals, so the client approves and the demo stays self-contained.")
    resolved = await call("shadow_approve", approval_id=approval["id"], decision="approve")
    status = (resolved.get("approval") or {}).get("status")
    say(f"  -> {status}")
    if status != "approved":
        raise DemoFailed(f"shadow_approve: the approval is {status}, not approved")

    polls = job.polls
    await job.wait("finishing", lambda j: j.status in FINISHED)
    say(f"\n== shadow_jobs get, followed until the job finished ({job.polls - polls} polls): {job.status}")
    job.show_new_events()
    answer = (job.state.get("job") or {}).get("answer")
    say(f"  answer: {answer}")
    if job.status != "done":
        raise DemoFailed(f"shadow_jobs: the job ended {job.status}: {(job.state.get('job') or {}).get('error')}")
    ran = [d for d in (e.get("data") or {} for e in job.events) if d.get("argv") == action.get("argv")]
    failed = [d for d in ran if isinstance(d.get("exit_code"), int) and d["exit_code"] != 0]
    if failed:
        raise DemoFailed(f"the approved command exited {failed[0]['exit_code']}: {failed[0].get('output')}")

    written = edited.read_text(encoding="utf-8")
    say(f"\n== the file the task wrote, {EDITED}, read from disk ('+' marks the task's lines)")
    show_file(written, original)
    if VERSION_LINE not in written:
        raise DemoFailed(f"after the job, {EDITED} does not hold {VERSION_LINE}")

    listed = await call("shadow_checkpoint", task_id=job.id)
    checkpoints = listed.get("checkpoints") or []
    if not checkpoints:
        raise DemoFailed(f"shadow_checkpoint: no checkpoint of job {job.id}")
    say(f"\n== shadow_checkpoint: {len(checkpoints)} checkpoint(s) of job {job.id}")
    original_sha = hashlib.sha256(original.encode("utf-8")).hexdigest()
    for entry in checkpoints:
        detail = (await call("shadow_checkpoint", checkpoint_id=entry["id"])).get("checkpoint") or {}
        say(f"  {entry['id']}: {', '.join(entry.get('paths') or [])}")
        for change in detail.get("changes") or []:
            before, after = str(change.get("before_sha256")), str(change.get("after_sha256"))
            same = " (the original's hash)" if before == original_sha else ""
            say(f"    {change.get('path')}: {change.get('kind')}, sha256 {before[:12]}{same} -> {after[:12]}")

    say(f"\n== shadow_rollback {job.id} (confirm: true)")
    rolled = await call("shadow_rollback", task_id=job.id, confirm=True)
    restored_paths = ", ".join(rolled.get("restored") or []) or "-"
    say(f"  restored: {restored_paths}; removed: {', '.join(rolled.get('removed') or []) or '-'}")
    restored = edited.read_text(encoding="utf-8")
    say(f"\n== {EDITED} after the rollback, read from disk")
    show_file(restored, original)
    if restored != original:
        raise DemoFailed(f"shadow_rollback: {EDITED} does not hold its original content")
    say("  (byte for byte the original)")


async def session(target: list[str], project: Path, env: dict[str, str], before: Tree) -> None:
    flags = ["--allow-write", "--allow-approvals"]
    params = StdioServerParameters(
        command=target[0], args=[*target[1:], "--workspace", str(project), "mcp", "serve", *flags], env=env
    )
    say(f"\n$ {shlex.join([*target, '--workspace', str(project), 'mcp', 'serve', *flags])}")
    async with Client(params) as client:
        say(f"connected with the official MCP Python SDK client: protocol revision {client.protocol_version}")

        async def call(name: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                text = " ".join(getattr(c, "text", "") for c in result.content)
                raise DemoFailed(f"{name}: {text}")
            return dict(result.structured_content or {})

        await inspect(client, call)
        await delegate(call, project, before)


async def _bounded(target: list[str], project: Path, env: dict[str, str], before: Tree) -> None:
    try:
        with anyio.fail_after(SESSION_SECONDS):
            await session(target, project, env, before)
    except TimeoutError as exc:
        raise DemoFailed(f"the session took longer than {SESSION_SECONDS:g} s") from exc


def _setup(argv: list[str], env: dict[str, str]) -> None:
    """Run one set-up command of the target, shown as ``$ shadowcode ...``."""
    say(f"$ {shlex.join(argv)}")
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, encoding="utf-8", timeout=COMMAND_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DemoFailed(f"{shlex.join(argv)}: {exc}") from exc
    if done.returncode != 0:
        raise DemoFailed(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    for line in done.stdout.strip().splitlines():
        say(f"  {line}")


def _differences(before: Tree, after: Tree) -> list[str]:
    """Paths added, removed or changed from ``before`` to ``after``, one phrase each."""
    return (
        [f"added {p}" for p in sorted(set(after) - set(before))]
        + [f"removed {p}" for p in sorted(set(before) - set(after))]
        + [f"changed {p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    )


def _compare(initial: Tree, before_run: Tree, after: Tree) -> None:
    """Fail unless ``after`` equals ``before_run`` and differs from ``initial`` only by the sidecar."""
    if not before_run:
        raise DemoFailed("the delegation never started, so there is nothing to compare")
    delegation = _differences(before_run, after)
    if delegation:
        raise DemoFailed(f"the sample project differs from before shadow_run: {', '.join(delegation)}")
    whole = _differences(initial, after)
    if [d for d in whole if d != f"added {SQLITE_SIDECAR}"]:
        raise DemoFailed(f"the sample project differs from before the server started: {', '.join(whole)}")
    files = sum(1 for v in after.values() if v is not None)
    say(f"\n== the sample project after the session: {files} files in {len(after) - files} folders")
    say("  the same paths with the same bytes as just before shadow_run: the project is as it was")
    if whole:
        say(f"  (since the server started, {SQLITE_SIDECAR} appeared: SQLite's shared-memory index for")
        say("  the WAL file, made when shadow_sqlite read live rows read-only; nothing else changed)")


def run(target: list[str], tmp: Path) -> None:
    project = _load_fixture().make_sample_project(tmp / "sample project")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    env["SHADOWCODE_HOME"] = str(tmp / "home")
    say("A temporary profile and a copy of the sample project; a scripted model stands in for a real one.")
    _setup([*target, "--workspace", str(project), "trust", "--level", "workspace"], env)
    _setup([*target, "models", "add", "demo", "--provider", "scripted", "--script", str(SCRIPT), "--default"], env)
    initial = snapshot(project)
    before_run: Tree = {}
    anyio.run(_bounded, target, project, env, before_run)
    _compare(initial, before_run, snapshot(project))


def _reason(exc: BaseException) -> str:
    """The message of the first exception inside ``exc`` (task groups wrap what they raise)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=f"{sys.executable} -m shadowcode", help="server command (shell words)")
    args = parser.parse_args()
    target = shlex.split(args.target)
    try:
        with tempfile.TemporaryDirectory(prefix="shadowcode-demo ") as tmp:
            run(target, Path(tmp))
    except Exception as exc:  # noqa: BLE001 - a demo reports and exits 1
        sys.stderr.write(f"demo failed: {_reason(exc)}\n")
        return 1
    say("\ndone: the server exited with its client, and the temporary project and profile are gone.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
