"""External MCP servers called by Build tasks, seen from outside.

Covers CLI-01, CLI-02, CLI-03, CLI-04, CLI-05, CLI-06, CLI-07, CLI-08, CLI-09, CLI-10, CLI-12, CLI-13,
CLI-14, CLI-15, CLI-19.

The target is driven only through its command line: ``mcp add``, ``--json mcp``, ``mcp enable``,
``trust``, ``secret set``, ``models add`` (a ``scripted`` model), ``run`` in the foreground,
``--json approvals`` / ``approve ID`` and ``--json jobs ID``. Every approval is checked to name
the exact server id, tool and arguments before it is given.

* ``everything``: a Build task lists and calls tools of the official
  ``@modelcontextprotocol/server-everything`` (stdio, pinned in ``node_probes/``).
* ``python_sdk``: the same against ``fixtures/servers/python_sdk_server.py`` (the Python
  SDK), with a stored secret given through ``env_refs``: its value comes back redacted, the
  server's environment holds no provider key or ShadowCode variable, it runs in the project,
  tool errors and structured results pass through, and no secret reaches the store.
* ``hostile``: ``fixtures/servers/hostile_server.py`` in twelve modes; each ends in the named
  outcome (a failed connection with its cause, a killed group, a refused sampling request,
  an error without retry for a crash in the middle of a call).
* ``edited_definition``: a project definition edited while its call waits for approval is
  refused after the approval and the call never reaches the server.
* ``definitions``: refused definition files (links leaving the folder, to the project
  around it too; files in a subfolder are not read), the four-server limit, stale hashes,
  removal that revokes grants, and a changed project file left out of the next task until reviewed.

After each task the pids that ``mcp.connected`` events name, their process groups and any
grandchild a fixture reports must be gone; leftovers are killed and reported.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio

from shadowcode_conformance.context import Context
from shadowcode_conformance.polling import Backoff
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["definitions", "edited_definition", "everything", "hostile", "python_sdk"]

_TASK_SECONDS = 120.0
_SECRET = "conformance-secret-5b7e21d9"
_PY = helper_python()


def check_result(problems: list[str], success: str, data: dict[str, Any] | None = None) -> CheckResult:
    if problems:
        return CheckResult(False, "; ".join(problems), data or {})
    return CheckResult(True, success, data or {})


def rpc_result(rid: Any, result: dict[str, Any]) -> bytes:
    """A JSON-RPC answer with ``result`` to request ``rid``, as a scripted HTTP server sends it."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()


def initialize_result(name: str) -> dict[str, Any]:
    """What a scripted 2025-06-18 server with tools answers to ``initialize``, calling itself ``name``."""
    info = {"name": name, "version": "1"}
    return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}


async def cli(ctx: Context, *args: str, workspace: Path | None = None, stdin: bytes = b"") -> tuple[int, str, str]:
    done = await ctx.run(ctx.target_argv(*args, workspace=workspace), stdin=stdin, timeout_seconds=60)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    return (-999 if done.returncode is None else done.returncode), out, err


async def cli_json(ctx: Context, *args: str, workspace: Path | None = None) -> Any:
    code, out, err = await cli(ctx, "--json", *args, workspace=workspace)
    if code != 0:
        raise RuntimeError(f"`{' '.join(args)}` exited {code}: {tail(err)}")
    return json.loads(out)


async def add_model(ctx: Context, tasks: list[dict[str, Any]]) -> None:
    script = ctx.scratch / f"model-{time.monotonic_ns()}.json"
    script.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    code, _, err = await cli(
        ctx, "models", "add", "scripted", "--provider", "scripted", "--script", str(script), "--default"
    )
    if code != 0:
        raise RuntimeError(f"models add exited {code}: {tail(err)}")


def tool_turns(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": name, "arguments": args}]}
        for i, (name, args) in enumerate(calls)
    ]
    return [*turns, {"content": "finished"}]


async def register_server(ctx: Context, definition: dict[str, Any], workspace: Path, problems: list[str]) -> str | None:
    path = ctx.scratch / f"{definition['name']}.json"
    path.write_text(json.dumps(definition), encoding="utf-8")
    try:
        added = await cli_json(ctx, "mcp", "add", str(path), workspace=workspace)
        await enable_server(ctx, str(added["id"]), workspace)
    except RuntimeError as exc:
        problems.append(str(exc))
        return None
    return str(added["id"])


async def enable_server(ctx: Context, server_id: str, workspace: Path) -> None:
    catalog = await cli_json(ctx, "mcp", workspace=workspace)
    digest = next(s["hash"] for s in catalog["servers"] if s["id"] == server_id)
    code, _, err = await cli(ctx, "mcp", "enable", server_id, "--hash", str(digest), workspace=workspace)
    if code != 0:
        raise RuntimeError(f"mcp enable {server_id} exited {code}: {tail(err)}")


async def trust_workspace(ctx: Context, workspace: Path) -> None:
    code, _, err = await cli(ctx, "trust", "--level", "workspace", str(workspace), workspace=workspace)
    if code != 0:
        raise RuntimeError(f"trust exited {code}: {tail(err)}")


async def run_task(
    ctx: Context,
    prompt: str,
    workspace: Path,
    expected: Sequence[dict[str, Any] | tuple[str, dict[str, Any]]],
    problems: list[str],
    on_approval: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a Build task in the foreground, approving exactly ``expected`` actions in order.

    Each expected approval is an MCP call's action, or a ``(kind, action)`` pair for any other
    kind; any other approval is denied and noted. ``on_approval`` runs with each pending
    approval before it is answered.

    Returns:
        The finished job record and its events (empty when the task could not be read).
    """
    out = bytearray()
    approved = 0
    argv = ctx.target_argv("--json", "run", "--level", "workspace", prompt, workspace=workspace)
    with anyio.move_on_after(min(_TASK_SECONDS, ctx.remaining())) as scope:
        async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stdout, out)
            tg.start_soon(drain, proc.stderr, bytearray())
            pause = Backoff()
            while proc.returncode is None:
                pending = (await cli_json(ctx, "approvals", workspace=workspace))["approvals"]
                if pending:
                    pause.reset()
                for approval in pending:
                    want = expected[approved] if approved < len(expected) else None
                    wanted = want if isinstance(want, tuple) else ("mcp_call", want)
                    decision = "approve"
                    if (approval["kind"], approval["action"]) != wanted:
                        problems.append(
                            f"unexpected approval {approval['kind']} {json.dumps(approval['action'])[:200]}"
                        )
                        decision = "deny"
                    else:
                        approved += 1
                    if on_approval is not None:
                        on_approval(approval)
                    await cli(ctx, decision, approval["id"], workspace=workspace)
                with anyio.move_on_after(pause.next()):
                    await proc.wait()
            await proc.wait()
    if scope.cancelled_caught:
        problems.append(f"the task {prompt!r} did not finish within {_TASK_SECONDS:.0f} s")
    if approved != len(expected):
        problems.append(f"{approved} of {len(expected)} expected approvals were asked for")
    try:
        job = json.loads(bytes(out).decode("utf-8") or "null")
        shown = await cli_json(ctx, "jobs", str(job["id"]), workspace=workspace)
    except (ValueError, TypeError, KeyError, RuntimeError) as exc:
        problems.append(f"cannot read the task's outcome: {type(exc).__name__}: {tail(bytes(out))}")
        return {}, []
    return shown["job"], shown["events"]


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _group_members(pgid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                raw = (entry / "stat").read_bytes()
                fields = raw[raw.rfind(b")") + 2 :].split()
                if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                    found.append(int(entry.name))
    return found


def kill_leftovers(events: list[dict[str, Any]], extra_pids: list[int], problems: list[str]) -> None:
    """Report (and kill) any server process, group member or grandchild still alive."""
    pids = [int(e["data"]["pid"]) for e in events if e["kind"] == "mcp.connected" and e["data"].get("pid")]
    left = sorted({p for pid in pids for p in _group_members(pid)} | {p for p in extra_pids if _alive(p)})
    if left:
        problems.append(f"server processes left behind: {left}")
        for pid in left:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["kind"] == "tool.result"]


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


def _check_lifecycle(job: dict[str, Any], events: list[dict[str, Any]], connections: int, problems: list[str]) -> None:
    if job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    kinds = _kinds(events)
    opened, closed = kinds.count("mcp.connected"), kinds.count("mcp.closed")
    if opened != connections or closed != connections:
        problems.append(f"expected {connections} mcp.connected/mcp.closed events, got {opened}/{closed}")
    last_closed = max((i for i, k in enumerate(kinds) if k == "mcp.closed"), default=-1)
    if "task.done" in kinds and last_closed > kinds.index("task.done"):
        problems.append("the task reported done before its MCP connection was cleaned up")


@check(
    "external_servers:everything",
    covers=["CLI-01", "CLI-05", "CLI-07", "CLI-08", "CLI-09", "CLI-12", "CLI-14", "CLI-19"],
    timeout_seconds=240,
)
async def everything(ctx: Context) -> CheckResult:
    """A Build task lists and calls tools of the real server-everything after exact approvals."""
    problems: list[str] = []
    entry = ctx.repo_root / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    if not entry.is_file():
        return CheckResult(
            False, f"server-everything is not installed ({entry.relative_to(ctx.repo_root)}); run npm ci"
        )
    try:
        await trust_workspace(ctx, ctx.project)
        server_id = await register_server(
            ctx, {"name": "everything", "command": ["node", str(entry), "stdio"]}, ctx.project, problems
        )
        calls: list[tuple[str, dict[str, Any]]] = [
            ("mcp_tools", {}),
            ("mcp_tools", {"server": "everything", "tool": "get-sum"}),
            ("mcp__everything__echo", {"message": "conformance"}),
            ("mcp_call", {"server": "everything", "tool": "get-sum", "arguments": {"a": 2, "b": 3}}),
        ]
        await add_model(ctx, [{"match": "everything", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if server_id is None:
        return check_result(problems, "")
    expected = [
        {"server": server_id, "tool": "echo", "arguments": {"message": "conformance"}},
        {"server": server_id, "tool": "get-sum", "arguments": {"a": 2, "b": 3}},
    ]
    job, events = await run_task(ctx, "call everything", ctx.project, expected, problems)
    _check_lifecycle(job, events, 1, problems)
    results = _results(events)
    if len(results) != 4 or not all(r["ok"] for r in results):
        problems.append(f"tool results: {[(r['name'], r['ok'], r['summary'][:120]) for r in results]}")
    else:
        if '"input_schema"' not in results[1]["summary"] or "get-sum" not in results[1]["summary"]:
            problems.append(f"mcp_tools did not return get-sum's schema: {results[1]['summary'][:160]}")
        if "Echo: conformance" not in results[2]["summary"]:
            problems.append(f"echo returned {results[2]['summary'][:160]}")
        if "5" not in results[3]["summary"]:
            problems.append(f"get-sum returned {results[3]['summary'][:160]}")
    kill_leftovers(events, [], problems)
    return check_result(problems, "listed tools, called echo and get-sum after exact approvals, cleaned up before done")


@check(
    "external_servers:python_sdk",
    covers=["CLI-04", "CLI-07", "CLI-09", "CLI-12", "CLI-14", "CLI-19"],
    timeout_seconds=240,
)
async def python_sdk(ctx: Context) -> CheckResult:
    """A Build task calls a Python SDK server with a stored secret that never shows or leaks."""
    problems: list[str] = []
    server = ctx.repo_root / "fixtures/servers/python_sdk_server.py"
    try:
        await trust_workspace(ctx, ctx.project)
        code, _, err = await cli(ctx, "secret", "set", "CONFORMANCE_TOKEN", stdin=_SECRET.encode() + b"\n")
        if code != 0:
            raise RuntimeError(f"secret set exited {code}: {tail(err)}")
        definition = {
            "name": "pysdk",
            "command": [_PY, str(server)],
            "env_refs": {"FIXTURE_TOKEN": "CONFORMANCE_TOKEN"},
        }
        server_id = await register_server(ctx, definition, ctx.project, problems)
        probes = ["FIXTURE_TOKEN", "OPENAI_API_KEY", "SHADOWCODE_HOME", "LD_LIBRARY_PATH"]
        calls = [("mcp__pysdk__env_value", {"name": n}) for n in probes] + [
            ("mcp__pysdk__add", {"a": 20, "b": 22}),
            ("mcp__pysdk__fail", {"message": "expected failure"}),
            ("mcp__pysdk__record", {"text": "in the project"}),
        ]
        await add_model(ctx, [{"match": "pysdk", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if server_id is None:
        return check_result(problems, "")
    expected = [
        {"server": server_id, "tool": name.removeprefix("mcp__pysdk__"), "arguments": args} for name, args in calls
    ]
    ctx.env["OPENAI_API_KEY"] = "provider-key-must-not-pass"
    ctx.env["LD_LIBRARY_PATH"] = str(ctx.scratch)
    try:
        job, events = await run_task(ctx, "use pysdk", ctx.project, expected, problems)
    finally:
        ctx.env.pop("OPENAI_API_KEY", None)
        ctx.env.pop("LD_LIBRARY_PATH", None)
    _check_lifecycle(job, events, 1, problems)
    results = [r["summary"] for r in _results(events)]
    if len(results) != len(calls):
        problems.append(f"{len(results)} tool results for {len(calls)} calls")
    else:
        if "[redacted]" not in results[0]:
            problems.append(f"the secret's value was not redacted: {results[0][:160]}")
        for name, text in zip(probes[1:], results[1:4], strict=True):
            if "<unset>" not in text:
                problems.append(f"the server inherited {name}")
        if '"structured_content": {"total": 42}' not in results[4]:
            problems.append(f"structured content not preserved: {results[4][:160]}")
        if '"is_error": true' not in results[5] or "expected failure" not in results[5]:
            problems.append(f"tool error not preserved: {results[5][:160]}")
    if not (ctx.project / "calls.log").is_file():
        problems.append("the server did not run in the project directory")
    for path in ctx.home.rglob("*"):
        if path.is_file() and path.name != "secrets.json" and _SECRET.encode() in path.read_bytes():
            problems.append(f"the secret value is stored in {path.name}")
    kill_leftovers(events, [], problems)
    return check_result(problems, "secret redacted, environment scrubbed, errors and structured results kept, no leak")


_HOSTILE_BATCHES: tuple[tuple[tuple[str, str, str], ...], ...] = (
    (
        ("banner", "", "not a JSON-RPC message"),
        ("huge_line", "", "longer than 1048576 bytes"),
        ("blank_flood", "", "frames in one second"),
        ("no_init", "", "did not finish initialization"),
    ),
    (
        ("many_tools", "129", "more than 128 tools"),
        ("dup_tool", "", "twice"),
        ("cursor_loop", "", "repeated a pagination cursor"),
        ("ignore_term", "", ""),
    ),
    (
        ("grandchild", "", ""),
        ("stderr_flood", "", ""),
        ("sampling", "", ""),
        ("plain", "", ""),
    ),
)


@check("external_servers:hostile", covers=["CLI-13", "CLI-14", "CLI-15", "CLI-19"], timeout_seconds=300)
async def hostile(ctx: Context) -> CheckResult:
    """Each hostile fixture server ends in its named outcome and leaves no process behind."""
    problems: list[str] = []
    fixture = ctx.repo_root / "fixtures/servers/hostile_server.py"
    outcomes: dict[str, str] = {}
    for index, batch in enumerate(_HOSTILE_BATCHES):
        workspace = ctx.scratch / f"hostile-{index}"
        folder = workspace / ".shadowcode/mcp"
        folder.mkdir(parents=True)
        try:
            await trust_workspace(ctx, workspace)
            for mode, arg, _ in batch:
                argv = [_PY, str(fixture), mode, *([arg] if arg else [])]
                name = mode.replace("_", "-")
                (folder / f"{name}.json").write_text(
                    json.dumps({"name": name, "command": argv, "timeout_sec": 3}), encoding="utf-8"
                )
                await enable_server(ctx, f"project:.shadowcode/mcp/{name}.json", workspace)
            calls: list[tuple[str, dict[str, Any]]] = [("mcp_tools", {})]
            expected: list[dict[str, Any]] = []
            if index == 2:
                calls += [
                    ("mcp__sampling__echo", {"text": "s"}),
                    ("mcp__plain__crash", {}),
                    ("mcp__plain__echo", {"text": "e"}),
                ]
                expected = [
                    {"server": "project:.shadowcode/mcp/sampling.json", "tool": "echo", "arguments": {"text": "s"}},
                    {"server": "project:.shadowcode/mcp/plain.json", "tool": "crash", "arguments": {}},
                ]
            # Ask for each server's tools last: the task waits for each start it began at boot (CW-10),
            # so every failure is seen before the task ends.
            calls += [("mcp_tools", {"server": mode.replace("_", "-")}) for mode, _, _ in batch]
            await add_model(ctx, [{"match": f"hostile batch {index}", "turns": tool_turns(*calls)}])
        except RuntimeError as exc:
            return CheckResult(False, f"set-up failed: {exc}")
        job, events = await run_task(ctx, f"hostile batch {index}", workspace, expected, problems)
        if job.get("status") != "done":
            problems.append(f"batch {index}: task ended {job.get('status')!r}: {job.get('error')}")
        notes = " ".join(str(e["data"].get("note")) for e in events if e["kind"] == "task.note")
        closed = {e["data"]["server"]: e["data"] for e in events if e["kind"] == "mcp.closed"}
        for mode, _, message in batch:
            server_id = f"project:.shadowcode/mcp/{mode.replace('_', '-')}.json"
            if message and (message not in notes or server_id not in notes):
                problems.append(f"{mode}: expected a failed connection with {message!r}")
            if server_id not in closed:
                problems.append(f"{mode}: no mcp.closed event")
            outcomes[mode] = str(closed[server_id].get("cleanup") if server_id in closed else None)
        if index == 1 and outcomes.get("ignore_term") != "killed":
            problems.append(f"ignore_term: cleanup was {outcomes.get('ignore_term')!r}, expected 'killed'")
        grandchildren: list[int] = []
        if index == 2:
            note = workspace / "grandchild.pid"
            if note.is_file():
                grandchildren.append(int(note.read_text(encoding="utf-8")))
            else:
                problems.append("grandchild: the fixture wrote no grandchild pid")
            results = [r["summary"] for r in _results(events)]
            if len(results) != 4 + len(batch):
                problems.append(f"batch 2: {len(results)} tool results, expected {4 + len(batch)}")
            else:
                if "not offered" not in results[1]:
                    problems.append(f"sampling was not refused: {results[1][:160]}")
                if "not retried" not in results[2]:
                    problems.append(f"a crash mid-call did not fail the call plainly: {results[2][:160]}")
                if "start a new task" not in results[3]:
                    problems.append(f"a failed connection was used again: {results[3][:160]}")
            if "eeee" in json.dumps(events):
                problems.append("server stderr reached the task's events")
        kill_leftovers(events, grandchildren, problems)
    return check_result(
        problems, f"every hostile server ended as named; cleanup outcomes {outcomes}", {"cleanup": outcomes}
    )


@check("external_servers:definitions", covers=["CLI-02", "CLI-03", "CLI-05", "CLI-06"], timeout_seconds=240)
async def definitions(ctx: Context) -> CheckResult:
    """Refused definitions, the four-server limit, stale hashes, revocation, and review of changes."""
    problems: list[str] = []
    folder = ctx.project / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    fixture = ctx.repo_root / "fixtures/servers/hostile_server.py"
    outside = ctx.scratch / "outside.json"
    outside.write_text(json.dumps({"name": "outside", "command": [_PY, str(fixture)]}), encoding="utf-8")
    (folder / "shell.json").write_text(json.dumps({"name": "shell", "command": "server --stdio"}), encoding="utf-8")
    (folder / "http-env.json").write_text(
        json.dumps({"name": "web", "url": "https://example.com/mcp", "env": {"A": "b"}}), encoding="utf-8"
    )
    (folder / "link.json").symlink_to(outside)
    elsewhere = ctx.project / "elsewhere.json"
    elsewhere.write_text(json.dumps({"name": "elsewhere", "command": [_PY, str(fixture)]}), encoding="utf-8")
    (folder / "project-link.json").symlink_to(elsewhere)
    (folder / "nested").mkdir()
    (folder / "nested" / "deep.json").write_text(json.dumps({"name": "deep", "command": [_PY]}), encoding="utf-8")
    for i in range(5):
        (folder / f"s{i}.yaml").write_text(
            f"name: s{i}\ncommand: [{json.dumps(_PY)}, {json.dumps(str(fixture))}]\n", encoding="utf-8"
        )
    try:
        await trust_workspace(ctx, ctx.project)
        catalog = await cli_json(ctx, "mcp")
        errors = {s["id"]: s.get("error") or "" for s in catalog["servers"]}
        for def_id, needle in (
            ("project:.shadowcode/mcp/shell.json", "field 'command'"),
            ("project:.shadowcode/mcp/http-env.json", "field 'env'"),
            ("project:.shadowcode/mcp/link.json", "outside"),
            ("project:.shadowcode/mcp/project-link.json", "outside"),
        ):
            if needle not in errors.get(def_id, ""):
                problems.append(f"{def_id} was not refused naming {needle!r}: {errors.get(def_id)!r}")
        if any("nested" in def_id for def_id in errors):
            problems.append(f"a definition in a subfolder was read (no recursion): {sorted(errors)}")
        stale = await cli(ctx, "mcp", "enable", "project:.shadowcode/mcp/s0.yaml", "--hash", "0" * 64)
        if stale[0] == 0:
            problems.append("enable with a stale hash succeeded")
        for i in range(4):
            await enable_server(ctx, f"project:.shadowcode/mcp/s{i}.yaml", ctx.project)
        try:
            await enable_server(ctx, "project:.shadowcode/mcp/s4.yaml", ctx.project)
            problems.append("a fifth server was enabled")
        except RuntimeError:
            pass
        (folder / "s0.yaml").write_text(
            (folder / "s0.yaml").read_text(encoding="utf-8") + "description: edited\n", encoding="utf-8"
        )
        catalog = await cli_json(ctx, "mcp")
        state = {s["id"]: s["grant"]["state"] for s in catalog["servers"]}
        if state.get("project:.shadowcode/mcp/s0.yaml") != "changed":
            problems.append(
                f"an edited project file is {state.get('project:.shadowcode/mcp/s0.yaml')!r}, not 'changed'"
            )
        await add_model(ctx, [{"match": "review", "turns": [{"content": "nothing"}]}])
        _, events = await run_task(ctx, "review check", ctx.project, [], problems)
        notes = " ".join(str(e["data"].get("note")) for e in events if e["kind"] == "task.note")
        if "s0.yaml changed" not in notes:
            problems.append("a new task was not told that a changed definition was left out")
        connected = {e["data"]["server"] for e in events if e["kind"] == "mcp.connected"}
        if "project:.shadowcode/mcp/s0.yaml" in connected:
            problems.append("a changed definition was started by a new task")
        kill_leftovers(events, [], problems)
        global_file = ctx.scratch / "g.json"
        global_file.write_text(json.dumps({"name": "g", "command": [_PY, str(fixture)]}), encoding="utf-8")
        code, _, _ = await cli(ctx, "mcp", "disable", "project:.shadowcode/mcp/s1.yaml")
        added = await cli_json(ctx, "mcp", "add", str(global_file))
        await enable_server(ctx, "config:g", ctx.project)
        removed = await cli(ctx, "mcp", "remove", "config:g", "--hash", str(added["hash"]))
        await cli_json(ctx, "mcp", "add", str(global_file))
        state = {s["id"]: s["grant"]["state"] for s in (await cli_json(ctx, "mcp"))["servers"]}
        if code != 0 or removed[0] != 0 or state.get("config:g") != "disabled":
            problems.append(f"disable/remove/re-add: exits {code}, {removed[0]}; config:g is {state.get('config:g')!r}")
    except RuntimeError as exc:
        problems.append(str(exc))
    return check_result(problems, "bad definitions refused, four-server limit and hashes enforced, changes need review")


@check("external_servers:edited_definition", covers=["CLI-06", "CLI-09", "CLI-10"], timeout_seconds=180)
async def edited_definition(ctx: Context) -> CheckResult:
    """A definition edited while its call waits for approval: the approved call is refused, nothing is sent."""
    problems: list[str] = []
    fixture = ctx.repo_root / "fixtures/servers/hostile_server.py"
    folder = ctx.project / ".shadowcode/mcp"
    folder.mkdir(parents=True)
    target = folder / "rec.json"
    target.write_text(json.dumps({"name": "rec", "command": [_PY, str(fixture), "plain"]}), encoding="utf-8")
    try:
        await trust_workspace(ctx, ctx.project)
        await enable_server(ctx, "project:.shadowcode/mcp/rec.json", ctx.project)
        await add_model(ctx, [{"match": "record", "turns": tool_turns(("mcp__rec__record", {"text": "sent"}))}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")

    def edit(_approval: dict[str, Any]) -> None:
        target.write_text(json.dumps({"name": "rec", "command": [_PY, str(fixture), "ignore_term"]}), encoding="utf-8")

    expected = [{"server": "project:.shadowcode/mcp/rec.json", "tool": "record", "arguments": {"text": "sent"}}]
    job, events = await run_task(ctx, "record it", ctx.project, expected, problems, on_approval=edit)
    if job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    results = [r["summary"] for r in _results(events)]
    if len(results) != 1 or "changed since this task started" not in results[0]:
        problems.append(f"the approved call was not refused after the edit: {results}")
    if "mcp.call" in _kinds(events) or (ctx.project / "calls.log").exists():
        problems.append("the call reached the server after its definition changed")
    kill_leftovers(events, [], problems)
    return check_result(problems, "the approved call was refused after the edit and nothing reached the server")
