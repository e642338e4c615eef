"""Catalog freshness and the resource and prompt helpers of Build tasks, seen from outside.

Covers CW-05, CW-06.

The target is driven only through its command line, as in :mod:`shadowcode_conformance.checks.external_servers`:
every approval must name exactly the expected kind and action (``mcp_call``,
``mcp_read_resource`` or ``mcp_get_prompt``), and listings must ask for none.

* ``everything``: server-everything (stdio): ``mcp_resources`` lists its resources, templates
  and prompts without approval; a static resource is read and ``args-prompt`` got after exact
  approvals; a prompt missing its required argument is refused before any approval; a tool
  that adds a session resource makes the server send ``notifications/resources/list_changed``
  and the next ``mcp_resources`` lists the new resource (revalidated in place).
* ``python_sdk``: ``fixtures/servers/python_sdk_server.py --changing --legacy`` (stdio, the
  2025-11-25 wire, whose change notices arrive on the connection): a tool added by the server
  is offered as a first-class tool in the next request and runs; once removed, a call naming it
  is refused unsent; ``mcp.tools_changed`` records each change; a resource
  holding a configured value comes back redacted; undeclared prompt arguments are refused.
* ``ttl``: the same fixture over Streamable HTTP (2026-07-28) with ``--ttl-ms 0`` and then a
  year's worth: the task's ``mcp.connected`` event shows the freshness held at 60 s and 24 h.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from shadowcode_conformance.checks.external_servers import (
    add_model,
    cli,
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

__all__ = ["everything", "python_sdk", "ttl"]

_TASK_SECONDS = 150.0
_PY = helper_python()
_LITERAL = "conformance-literal-8c2e61f0"


def outcome(problems: list[str], success: str) -> CheckResult:
    return CheckResult(False, "; ".join(problems)) if problems else CheckResult(True, success)


async def run_project_task(
    ctx: Context, prompt: str, expected: list[tuple[str, dict[str, Any]]], problems: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a Build task in the foreground approving exactly ``expected`` (kind, action) pairs; it must end done."""
    job, events = await run_task(ctx, prompt, ctx.project, expected, problems)
    if job and job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    kill_leftovers(events, [], problems)
    return job, events


def tool_results(events: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    return [(bool(e["data"]["ok"]), str(e["data"]["summary"])) for e in events if e["kind"] == "tool.result"]


def expect_results(results: list[tuple[bool, str]], wanted: list[tuple[bool, str]], problems: list[str]) -> None:
    """Each result's ok flag and a text its summary must hold, in order."""
    if len(results) != len(wanted):
        problems.append(f"{len(results)} tool results for {len(wanted)} calls: {[r[1][:80] for r in results]}")
        return
    for i, ((ok, summary), (want_ok, text)) in enumerate(zip(results, wanted, strict=True)):
        if ok != want_ok or text not in summary:
            problems.append(f"result {i}: expected ok={want_ok} with {text!r}, got ok={ok}: {summary[:200]}")


@check("external_helpers:everything", covers=["CW-05", "CW-06"], timeout_seconds=300)
async def everything(ctx: Context) -> CheckResult:
    """server-everything's resources, templates and prompts through a Build task, and a resource list change."""
    problems: list[str] = []
    entry = ctx.repo_root / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    if not entry.is_file():
        return CheckResult(False, f"server-everything is not installed ({entry.relative_to(ctx.repo_root)})")
    doc = "demo://resource/static/document/architecture.md"
    gzip = {"name": "conformance.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}
    calls = [
        ("mcp_resources", {"server": "every"}),
        ("mcp_read_resource", {"server": "every", "uri": doc}),
        ("mcp_get_prompt", {"server": "every", "prompt": "args-prompt", "arguments": {"state": "none"}}),
        ("mcp_get_prompt", {"server": "every", "prompt": "args-prompt", "arguments": {"city": "Lisbon"}}),
        ("mcp_call", {"server": "every", "tool": "gzip-file-as-resource", "arguments": gzip}),
        ("mcp_resources", {"server": "every", "page": 0}),
    ]
    try:
        await trust_workspace(ctx, ctx.project)
        server_id = await register_server(
            ctx, {"name": "every", "command": ["node", str(entry), "stdio"]}, ctx.project, problems
        )
        await add_model(ctx, [{"match": "every", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if server_id is None:
        return outcome(problems, "")
    expected = [
        ("mcp_read_resource", {"server": server_id, "uri": doc}),
        ("mcp_get_prompt", {"server": server_id, "prompt": "args-prompt", "arguments": {"city": "Lisbon"}}),
        ("mcp_call", {"server": server_id, "tool": "gzip-file-as-resource", "arguments": gzip}),
    ]
    _, events = await run_project_task(ctx, "use every helper", expected, problems)
    expect_results(
        tool_results(events),
        [
            (True, "demo://resource/static/document/"),
            (True, "Architecture"),
            (False, "requires 'city'"),
            (True, "Lisbon"),
            (True, "demo://resource/session/conformance.gz"),
            (True, '"resources": [{"uri": "demo://resource/'),
        ],
        problems,
    )
    # The summaries are cut at 500 characters; the connection's own count shows the in-place relisting.
    closed = [e["data"] for e in events if e["kind"] == "mcp.closed"]
    if not closed or not closed[0].get("revalidations"):
        problems.append(f"the resources/list_changed notice was not revalidated in place: {closed}")
    return outcome(problems, "listed, read and got server-everything's resources and prompts; saw its new resource")


@check("external_helpers:python_sdk", covers=["CW-05", "CW-06"], timeout_seconds=300)
async def python_sdk(ctx: Context) -> CheckResult:
    """A Python SDK server changes its tools during a Build task; its resources and prompts are used."""
    problems: list[str] = []
    server = ctx.repo_root / "fixtures/servers/python_sdk_server.py"
    calls = [
        ("mcp_call", {"server": "py", "tool": "grow", "arguments": {"name": "later"}}),
        ("mcp__py__later", {"text": "offered next"}),
        ("mcp_call", {"server": "py", "tool": "shrink", "arguments": {"name": "later"}}),
        ("mcp_call", {"server": "py", "tool": "later", "arguments": {"text": "gone"}}),
        ("mcp_read_resource", {"server": "py", "uri": "fixture://secret/FIXTURE_LITERAL"}),
        ("mcp_get_prompt", {"server": "py", "prompt": "review", "arguments": {"code": "x", "colour": "red"}}),
    ]
    try:
        await trust_workspace(ctx, ctx.project)
        definition = {
            "name": "py",
            "command": [_PY, str(server), "--changing", "--legacy"],
            "env": {"FIXTURE_LITERAL": _LITERAL},
        }
        server_id = await register_server(ctx, definition, ctx.project, problems)
        await add_model(ctx, [{"match": "change", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if server_id is None:
        return outcome(problems, "")
    expected = [
        ("mcp_call", {"server": server_id, "tool": "grow", "arguments": {"name": "later"}}),
        ("mcp_call", {"server": server_id, "tool": "later", "arguments": {"text": "offered next"}}),
        ("mcp_call", {"server": server_id, "tool": "shrink", "arguments": {"name": "later"}}),
        ("mcp_read_resource", {"server": server_id, "uri": "fixture://secret/FIXTURE_LITERAL"}),
    ]
    _, events = await run_project_task(ctx, "change the tools", expected, problems)
    expect_results(
        tool_results(events),
        [
            (True, "added later"),
            (True, "offered next"),
            (True, "removed later"),
            (False, "has no tool 'later'"),
            (True, "[redacted]"),
            (False, "declares no argument 'colour'"),
        ],
        problems,
    )
    if _LITERAL in json.dumps(events):
        problems.append("the configured value reached the task's events")
    changes = [e["data"].get("generation") for e in events if e["kind"] == "mcp.tools_changed"]
    closed = [e["data"] for e in events if e["kind"] == "mcp.closed"]
    if not closed or (closed[0].get("revalidations") or 0) < 2:
        problems.append(f"expected at least two in-place revalidations: {closed}")
    if changes != [1, 2]:
        problems.append(f"expected mcp.tools_changed generations [1, 2], got {changes}")
    return outcome(problems, "saw a tool added and removed in place; read a redacted resource; refused bad prompt args")


@check("external_helpers:ttl", covers=["CW-05"], timeout_seconds=300)
async def ttl(ctx: Context) -> CheckResult:
    """A server's ttlMs of 0 and of a year are held at 60 s and 24 h."""
    problems: list[str] = []
    server = ctx.repo_root / "fixtures/servers/python_sdk_server.py"
    await trust_workspace(ctx, ctx.project)
    for i, (ttl_ms, held) in enumerate(((0, 60.0), (365 * 24 * 3600 * 1000, 86400.0))):
        out = bytearray()
        async with ctx.spawn([_PY, str(server), "http", "--ttl-ms", str(ttl_ms)]) as proc:
            async with anyio.create_task_group() as tg:
                port = await announced_port(proc, tg, out)
                if port is None:
                    tg.cancel_scope.cancel()
                    return CheckResult(False, f"the Python SDK server did not start: {tail(out)}")
                name = f"ttl{i}"
                url = f"http://127.0.0.1:{port}/mcp"
                try:
                    server_id = await register_server(ctx, {"name": name, "url": url}, ctx.project, problems)
                    await add_model(ctx, [{"match": name, "turns": tool_turns(("mcp_tools", {"server": name}))}])
                except RuntimeError as exc:
                    tg.cancel_scope.cancel()
                    return CheckResult(False, f"set-up failed: {exc}")
                if server_id is not None:
                    _, events = await run_project_task(ctx, f"list {name}", [], problems)
                    connected = [
                        e["data"] for e in events if e["kind"] == "mcp.connected" and e["data"]["server"] == server_id
                    ]
                    seen = connected[0].get("ttl_seconds") if connected else None
                    if seen != held:
                        problems.append(f"ttlMs {ttl_ms} was held at {seen!r} s, expected {held} s")
                    await cli(ctx, "mcp", "disable", server_id, workspace=ctx.project)
                tg.cancel_scope.cancel()
    return outcome(problems, "ttlMs 0 was held at 60 s and a year at 24 h")
