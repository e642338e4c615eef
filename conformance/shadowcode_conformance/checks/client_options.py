"""Per-server options of external MCP servers, seen from outside: tool filters, timeouts, required.

Covers CW-02, CW-07.

The target is driven only through its command line, as in :mod:`shadowcode_conformance.checks.external_servers`
(whose helpers this module uses):

* ``filters``: the real ``@modelcontextprotocol/server-everything`` (stdio) registered with
  ``enabled_tools`` (``echo``, ``get-sum`` and a name it does not have) and ``disabled_tools``
  (``get-sum``). ``mcp tools`` lists ``echo`` only, ``mcp validate`` passes with a warning for
  the unknown name, and in a Build task ``mcp_tools`` shows ``echo`` only, a call of ``get-sum``
  is refused without an approval being asked, and ``echo`` is called after its approval.
* ``timeouts``: ``mcp add`` refuses ``call_timeout`` 1,801 and ``read_timeout`` 0 naming the
  allowed range. ``fixtures/servers/slow_sdk_server.py`` (the Python SDK), over stdio and over
  Streamable HTTP, with ``call_timeout: 2``: a Build task's ``sleep(60)`` fails naming the
  call timeout, the server notes the cancellation, and the next call (``echo``) answers on the
  same connection.
* ``required``: a Build task whose enabled, ``required`` server cannot start fails with the
  server named and the reason, before any model request; the same definition without
  ``required`` lets the task finish.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from shadowcode_conformance.checks.external_servers import (
    add_model,
    check_result,
    cli,
    cli_json,
    kill_leftovers,
    register_server,
    run_task,
    tool_turns,
    trust_workspace,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import announced_port, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["filters", "required", "timeouts"]

_PY = helper_python()


def _results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["kind"] == "tool.result"]


@check("client_options:filters", covers=["CW-02"], timeout_seconds=360)
async def filters(ctx: Context) -> CheckResult:
    """Filtered tools of server-everything reach neither reports nor the model, and a call of one sends nothing."""
    problems: list[str] = []
    entry = ctx.repo_root / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    if not entry.is_file():
        return CheckResult(False, f"server-everything is not installed ({entry.relative_to(ctx.repo_root)})")
    definition = {
        "name": "everything",
        "command": ["node", str(entry), "stdio"],
        "enabled_tools": ["echo", "get-sum", "no-such-tool"],
        "disabled_tools": ["get-sum"],
    }
    try:
        await trust_workspace(ctx, ctx.project)
        server_id = await register_server(ctx, definition, ctx.project, problems)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("mcp_tools", {"server": "everything"}),  # waits for the server the task started at boot (CW-10)
            ("mcp_tools", {}),
            ("mcp_call", {"server": "everything", "tool": "get-sum", "arguments": {"a": 2, "b": 3}}),
            ("mcp__everything__echo", {"message": "filtered"}),
        ]
        await add_model(ctx, [{"match": "filters", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if server_id is None:
        return check_result(problems, "")
    code, out, err = await cli(ctx, "--json", "mcp", "tools", "everything")
    names = [t.get("name") for t in json.loads(out).get("tools", [])] if code == 0 and out.strip() else None
    if names != ["echo"]:
        problems.append(f"mcp tools listed {names!r} (exit {code}: {tail(err)}), expected ['echo']")
    code, out, err = await cli(ctx, "--json", "mcp", "validate")
    report: dict[str, Any]
    try:
        (report,) = json.loads(out)["servers"]
    except (ValueError, KeyError, TypeError) as exc:
        report = {}
        problems.append(f"mcp validate: unreadable report ({type(exc).__name__}, exit {code}: {tail(err)})")
    if code != 0 or not report.get("connected") or report.get("tools") != 1:
        problems.append(f"mcp validate exited {code} with {json.dumps(report)[:300]}")
    warnings: list[str] = report.get("warnings") or []
    if not any("'no-such-tool'" in w for w in warnings):
        problems.append(f"mcp validate gave no warning for the unknown enabled_tools name: {report.get('warnings')}")
    expected = [{"server": server_id, "tool": "echo", "arguments": {"message": "filtered"}}]
    job, events = await run_task(ctx, "filters", ctx.project, expected, problems)
    if job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    results = _results(events)
    if len(results) != 4:
        problems.append(f"{len(results)} tool results for 4 calls")
    else:
        names_page, listing, refused, echo = results
        if '"tools": 1' not in listing["summary"]:
            problems.append(f"mcp_tools counted the hidden tools: {listing['summary'][:200]}")
        if json.loads(names_page["summary"]).get("tools") != ["echo"]:
            problems.append(f"mcp_tools listed {names_page['summary'][:200]}")
        if refused["ok"] or "hidden" not in refused["summary"] or "nothing was sent" not in refused["summary"]:
            problems.append(f"the call of a disabled tool was not refused before sending: {refused['summary'][:200]}")
        if not echo["ok"] or "Echo: filtered" not in echo["summary"]:
            problems.append(f"echo returned {echo['summary'][:200]}")
    kill_leftovers(events, [], problems)
    return check_result(
        problems, "mcp tools, validate (with a warning) and the task saw echo only; get-sum was refused unsent"
    )


async def _refused_field(ctx: Context, field: str, value: float, needle: str, problems: list[str]) -> None:
    path = ctx.scratch / f"bad-{field}.json"
    path.write_text(json.dumps({"name": "bad", "command": [_PY, "-V"], field: value}), encoding="utf-8")
    code, out, err = await cli(ctx, "mcp", "add", str(path))
    if code == 0 or needle not in err:
        problems.append(f"mcp add with {field} {value} exited {code}, stderr {tail(err)!r}, stdout {tail(out)!r}")


async def _slow_task(
    ctx: Context, label: str, definition: dict[str, Any], log: Path, problems: list[str]
) -> list[dict[str, Any]]:
    """One Build task against the slow server: ``sleep(60)`` past its call timeout, then ``echo``."""
    name = str(definition["name"])
    workspace = ctx.scratch / label
    workspace.mkdir()
    await trust_workspace(ctx, workspace)
    server_id = await register_server(ctx, definition, workspace, problems)
    if server_id is None:
        return []
    calls = [(f"mcp__{name}__sleep", {"seconds": 60}), (f"mcp__{name}__echo", {"text": "kept"})]
    await add_model(ctx, [{"match": label, "turns": tool_turns(*calls)}])
    expected = [{"server": server_id, "tool": t.rsplit("__", 1)[1], "arguments": a} for t, a in calls]
    job, events = await run_task(ctx, label, workspace, expected, problems)
    results = _results(events)
    if job.get("status") != "done" or len(results) != 2:
        problems.append(f"{label}: task ended {job.get('status')!r} with {len(results)} results: {job.get('error')}")
        return events
    slept, echo = results
    if slept["ok"] or "within 2.0 s" not in slept["summary"] or "call_timeout" not in slept["summary"]:
        problems.append(f"{label}: the sleeping call did not time out by call_timeout: {slept['summary'][:200]}")
    if not echo["ok"] or '"kept"' not in echo["summary"]:
        problems.append(f"{label}: the next call did not answer: {echo['summary'][:200]}")
    kinds = [e["kind"] for e in events]
    if kinds.count("mcp.connected") != 1:
        problems.append(f"{label}: {kinds.count('mcp.connected')} connections, expected the same one kept")
    with anyio.move_on_after(20):
        while "sleep cancelled" not in (log.read_text(encoding="utf-8") if log.is_file() else ""):
            await anyio.sleep(0.2)
    if "sleep cancelled" not in (log.read_text(encoding="utf-8") if log.is_file() else ""):
        problems.append(f"{label}: the server never saw the call cancelled")
    return events


@check("client_options:timeouts", covers=["CW-07"], timeout_seconds=480)
async def timeouts(ctx: Context) -> CheckResult:
    """Out-of-range timeouts are refused; a call past call_timeout is cancelled and the connection kept."""
    problems: list[str] = []
    await _refused_field(ctx, "call_timeout", 1801, "from 0.1 to 1800", problems)
    await _refused_field(ctx, "read_timeout", 0, "from 0.1 to 120", problems)
    server = ctx.repo_root / "fixtures/servers/slow_sdk_server.py"
    try:
        definition = {"name": "slow", "command": [_PY, str(server)], "call_timeout": 2, "timeout_sec": 60}
        events = await _slow_task(ctx, "stdio", definition, ctx.scratch / "stdio" / "calls.log", problems)
        kill_leftovers(events, [], problems)
        out = bytearray()
        async with ctx.spawn([_PY, str(server), "http", str(ctx.scratch)]) as proc, anyio.create_task_group() as tg:
            port = await announced_port(proc, tg, out)
            if port is None:
                problems.append(f"the HTTP slow server did not start: {tail(out)}")
            else:
                url = f"http://127.0.0.1:{port}/mcp"
                definition = {"name": "slowweb", "url": url, "call_timeout": 2, "timeout_sec": 60}
                await _slow_task(ctx, "http", definition, ctx.scratch / "calls.log", problems)
            tg.cancel_scope.cancel()
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    return check_result(
        problems,
        "1801 s and 0 s refused with their ranges; over stdio and HTTP a call past call_timeout was cancelled "
        "and the next one answered on the same connection",
    )


@check("client_options:required", covers=["CW-07"], timeout_seconds=240)
async def required(ctx: Context) -> CheckResult:
    """A required server that cannot start fails the Build task before any model request."""
    problems: list[str] = []
    missing = str(ctx.scratch / "no-such-server")
    try:
        await trust_workspace(ctx, ctx.project)
        folder = ctx.project / ".shadowcode/mcp"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "needed.json"
        target.write_text(json.dumps({"name": "needed", "command": [missing], "required": True}), encoding="utf-8")
        server_id = "project:.shadowcode/mcp/needed.json"
        catalog = await cli_json(ctx, "mcp")
        digest = next(s["hash"] for s in catalog["servers"] if s["id"] == server_id)
        code, _, err = await cli(ctx, "mcp", "enable", server_id, "--hash", str(digest))
        if code != 0:
            raise RuntimeError(f"mcp enable exited {code}: {tail(err)}")
        await add_model(ctx, [{"match": "required", "turns": [{"content": "finished"}]}])
    except (RuntimeError, StopIteration) as exc:
        return CheckResult(False, f"set-up failed: {exc!r}")
    job, events = await run_task(ctx, "required", ctx.project, [], problems)
    error = str(job.get("error") or "")
    if job.get("status") != "failed" or f"the required MCP server {server_id} could not connect" not in error:
        problems.append(f"task ended {job.get('status')!r} with error {error[:300]!r}")
    if "no-such-server" not in error:
        problems.append(f"the failure does not give the server's reason: {error[:300]!r}")
    kinds = [e["kind"] for e in events]
    if "model.request" in kinds:
        problems.append("the model was asked before the required server's failure stopped the task")
    try:
        target.write_text(json.dumps({"name": "needed", "command": [missing]}), encoding="utf-8")
        catalog = await cli_json(ctx, "mcp")
        digest = next(s["hash"] for s in catalog["servers"] if s["id"] == server_id)
        code, _, err = await cli(ctx, "mcp", "enable", server_id, "--hash", str(digest))
        if code != 0:
            raise RuntimeError(f"mcp enable exited {code}: {tail(err)}")
    except (RuntimeError, StopIteration) as exc:
        return CheckResult(False, f"set-up failed: {exc!r}")
    job, events = await run_task(ctx, "required", ctx.project, [], problems)
    if job.get("status") != "done":
        problems.append(f"without required the task ended {job.get('status')!r}: {job.get('error')}")
    return check_result(
        problems, "the task failed at start naming the required server and why; without required it ran"
    )
