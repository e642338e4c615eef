"""External Streamable HTTP servers called by Build tasks, seen from outside.

Covers CLI-04, CLI-11, CLI-16, CLI-17, CLI-18.

The target is driven only through its command line, as in :mod:`shadowcode_conformance.checks.external_servers`
(whose helpers this module uses). The servers run on 127.0.0.1, started by the check:

* ``python_sdk``: ``fixtures/servers/python_sdk_server.py http-stateless`` (the Python SDK,
  stateless with JSON replies). A Build task calls ``add`` and ``region`` (an ``x-mcp-header``
  parameter with non-ASCII text) after exact approvals; structured content and the 2026-07-28
  revision must come back, and the connection must be closed before the task is done.
* ``refusals``: a small hostile legacy server in this process. One task's call gets a JSON
  body of 1 MiB + 1 byte, another's a 404 for its session: each call fails with the cause
  named and reaches the server exactly once, never repeated. A bearer definition for plain
  ``http://`` off loopback is refused by ``mcp add``, and an enabled server on a network host
  without the network permission is left out of the task with the reason noted, contacted never.
* ``gateway_bearer``: ShadowCode's own authenticated gateway (``mcp serve --http`` in a second
  profile, its token a stored secret there) called by two Build tasks as an HTTP MCP server
  whose bearer comes from ``api_key_env``: once resolved from the protected secret store, once
  from the environment of the task's process (CLI-04). The calls must succeed (the gateway
  refuses any request without its token), and the token must appear nowhere in what the run
  printed, the task's history and events, the approvals, or any profile file but the secret
  stores.
"""

from __future__ import annotations

import json
import re
from contextlib import suppress
from typing import Any

import anyio
import anyio.abc

from shadowcode_conformance.checks.external_servers import (
    add_model,
    check_result,
    cli,
    cli_json,
    initialize_result,
    register_server,
    rpc_result,
    run_task,
    tool_turns,
    trust_workspace,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.loopback_http import read_request
from shadowcode_conformance.processes import announced_port, drain, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["gateway_bearer", "python_sdk", "refusals"]

_BODY_MAX_BYTES = 1024 * 1024
_ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def _events_text(events: list[dict[str, Any]]) -> str:
    return json.dumps([e["data"] for e in events], ensure_ascii=False)


@check("external_http:python_sdk", covers=["CLI-11", "CLI-16"], timeout_seconds=240)
async def python_sdk(ctx: Context) -> CheckResult:
    """A Build task calls a stateless Python SDK server over Streamable HTTP after exact approvals."""
    problems: list[str] = []
    server = ctx.repo_root / "fixtures/servers/python_sdk_server.py"
    out = bytearray()
    async with ctx.spawn([helper_python(), str(server), "http-stateless"]) as proc:
        async with anyio.create_task_group() as tg:
            port = await announced_port(proc, tg, out)
            if port is None:
                tg.cancel_scope.cancel()
                return CheckResult(False, f"the Python SDK server did not start: {tail(out)}")
            url = f"http://127.0.0.1:{port}/mcp"
            try:
                await trust_workspace(ctx, ctx.project)
                server_id = await register_server(ctx, {"name": "web", "url": url}, ctx.project, problems)
                calls = [("add", {"a": 20, "b": 22}), ("region", {"region": "Zürich Süd", "note": "conformance"})]
                turns = tool_turns(*[("mcp_call", {"server": "web", "tool": t, "arguments": a}) for t, a in calls])
                await add_model(ctx, [{"match": "web", "turns": turns}])
            except RuntimeError as exc:
                tg.cancel_scope.cancel()
                return CheckResult(False, f"set-up failed: {exc}")
            if server_id is not None:
                expected = [{"server": server_id, "tool": t, "arguments": a} for t, a in calls]
                job, events = await run_task(ctx, "use web", ctx.project, expected, problems)
                _check_http_task(job, events, problems)
                text = _events_text(events)
                if '\\"total\\": 42' not in text and '"total": 42' not in text:
                    problems.append("structured content of add did not come back")
                if "Zürich Süd|conformance" not in text:
                    problems.append("the x-mcp-header call did not return its region")
                connected = [e["data"] for e in events if e["kind"] == "mcp.connected"]
                if connected and connected[0].get("protocol_version") != "2026-07-28":
                    problems.append(f"negotiated {connected[0].get('protocol_version')!r}, not 2026-07-28")
                if connected:
                    ctx.record_revision("external_http:python_sdk", str(connected[0].get("protocol_version")))
            tg.cancel_scope.cancel()
    return check_result(problems, "called add and region over Streamable HTTP (2026-07-28) after exact approvals")


def _check_http_task(job: dict[str, Any], events: list[dict[str, Any]], problems: list[str]) -> None:
    if job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    kinds = [e["kind"] for e in events]
    if kinds.count("mcp.connected") != 1 or kinds.count("mcp.closed") != 1:
        problems.append(f"expected one mcp.connected and one mcp.closed event, got {kinds}")
    elif "task.done" in kinds and kinds.index("mcp.closed") > kinds.index("task.done"):
        problems.append("the task reported done before its HTTP connection was closed")


class _Hostile:
    """A legacy Streamable HTTP server whose tools misbehave: ``big`` and ``expire``."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.initializes = 0
        self.port = 0

    def reply(self, method: str, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        rpc, rid = message.get("method"), message.get("id")
        if method != "POST":
            return 405, {}, b""
        if rid is None:
            return 202, {}, b""
        if rpc == "initialize":
            self.initializes += 1
            info = initialize_result("h")
            return 200, {"mcp-session-id": "conformance-session"}, rpc_result(rid, info)
        if rpc == "tools/list":
            tools = [_ECHO | {"name": "big"}, _ECHO | {"name": "expire"}]
            return 200, {}, rpc_result(rid, {"tools": tools})
        if rpc == "tools/call":
            name = str(message["params"]["name"])
            self.calls.append(name)
            if name == "expire":
                return 404, {}, b""
            base = len(rpc_result(rid, {"content": [{"type": "text", "text": ""}]}))
            return 200, {}, rpc_result(rid, {"content": [{"type": "text", "text": "x" * (_BODY_MAX_BYTES + 1 - base)}]})
        return (
            400,
            {"content-type": "application/json"},
            json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}).encode(),
        )

    async def serve_one(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                if (request := await read_request(stream)) is None:
                    return
                head, message = request
                status, headers, payload = self.reply(head.method.decode(), message)
                if payload:
                    headers = {"content-type": "application/json", **headers}
                lines = [f"HTTP/1.1 {status} X", *(f"{k}: {v}" for k, v in headers.items())]
                lines += [f"content-length: {len(payload)}", "connection: close"]
                await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)


@check("external_http:refusals", covers=["CLI-11", "CLI-17", "CLI-18"], timeout_seconds=300)
async def refusals(ctx: Context) -> CheckResult:
    """Oversized and expired replies fail their call once; plain-http bearers and unpermitted hosts are refused."""
    problems: list[str] = []
    hostile = _Hostile()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    hostile.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hostile.serve_one)
        try:
            await trust_workspace(ctx, ctx.project)
            bearer = ctx.scratch / "plain.json"
            bearer.write_text(
                json.dumps({"name": "plain", "url": "http://mcp.example.invalid/mcp", "api_key_env": "T"}),
                encoding="utf-8",
            )
            code, _, err = await cli(ctx, "mcp", "add", str(bearer))
            if code == 0 or "plain http" not in err:
                problems.append(f"a bearer over plain http off loopback was not refused: exit {code}, {tail(err)}")
            url = f"http://127.0.0.1:{hostile.port}/mcp"
            server_id = await register_server(ctx, {"name": "hostile", "url": url}, ctx.project, problems)
            remote_id = await register_server(
                ctx, {"name": "remote", "url": "https://mcp.example.invalid/mcp"}, ctx.project, problems
            )
            tasks = [
                {
                    "match": f"call {tool}",
                    "turns": tool_turns(("mcp_call", {"server": "hostile", "tool": tool, "arguments": {"text": "a"}})),
                }
                for tool in ("big", "expire")
            ]
            await add_model(ctx, tasks)
        except RuntimeError as exc:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"set-up failed: {exc}")
        if server_id is not None and remote_id is not None:
            for tool, cause in (("big", "longer than 1048576 bytes"), ("expire", "ended the session (HTTP 404)")):
                expected = [{"server": server_id, "tool": tool, "arguments": {"text": "a"}}]
                _, events = await run_task(ctx, f"call {tool}", ctx.project, expected, problems)
                text = _events_text(events)
                if cause not in text:
                    problems.append(f"the {tool} call did not fail with {cause!r}: {text[-300:]}")
                if "network permission" not in text or remote_id not in text:
                    problems.append("the server without the network permission was not noted as unavailable")
            if hostile.calls != ["big", "expire"]:
                problems.append(f"the server received calls {hostile.calls}; each must arrive exactly once")
            if hostile.initializes != 2:
                problems.append(f"{hostile.initializes} initializations for two tasks: a session was re-initialized")
        tg.cancel_scope.cancel()
    return check_result(
        problems, "oversized and expired replies failed their call once; plain-http bearer and network host refused"
    )


_GATEWAY_TOKEN = "gw-conformance-bearer-3c9e58a1d4f27b60"


async def _gateway_url(ctx: Context, proc: Any, err: bytearray) -> str | None:
    """Wait for the gateway's ready line on stderr; its URL, or None when it never came."""
    with anyio.move_on_after(min(60.0, ctx.remaining())):
        while proc.returncode is None:
            found = re.search(rb"gateway ready: (http://127\.0\.0\.1:\d+/mcp)", err)
            if found:
                return found.group(1).decode()
            await anyio.sleep(0.05)
    return None


def _summaries(events: list[dict[str, Any]]) -> list[Any]:
    """``is_error`` of each tool result in ``events`` (None when a summary is not a JSON object)."""
    found: list[Any] = []
    for event in events:
        if event["kind"] == "tool.result":
            try:
                found.append(json.loads(event["data"]["summary"]).get("is_error"))
            except (ValueError, TypeError, KeyError, AttributeError):
                found.append(None)
    return found


def _leaks(ctx: Context, printed: list[str]) -> list[str]:
    """Where the gateway token shows up: printed output, or a profile file other than a secret store."""
    found = [f"printed output {i}" for i, text in enumerate(printed) if _GATEWAY_TOKEN in text]
    for path in sorted(ctx.home.rglob("*")):
        if path.is_file() and path.name != "secrets.json" and _GATEWAY_TOKEN.encode() in path.read_bytes():
            found.append(str(path.relative_to(ctx.home)))
    return found


@check("external_http:gateway_bearer", covers=["CLI-04", "CLI-16"], timeout_seconds=300, own_engine=True)
async def gateway_bearer(ctx: Context) -> CheckResult:
    """Build tasks call the authenticated gateway with its bearer from api_key_env; the token never leaks."""
    problems: list[str] = []
    served = ctx.scratch / "served"
    served.mkdir()
    token_line = _GATEWAY_TOKEN.encode() + b"\n"
    code, _, err_text = await cli(ctx, "--profile", "gateway", "secret", "set", "GW_TOKEN", stdin=token_line)
    if code != 0:
        return CheckResult(False, f"secret set in the gateway profile exited {code}: {tail(err_text)}")
    argv = ctx.target_argv("--profile", "gateway", "mcp", "serve", "--http", "127.0.0.1:0", "--token-env", "GW_TOKEN")
    argv[argv.index("--workspace") + 1] = str(served)
    err = bytearray()
    async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stdout, bytearray())
        tg.start_soon(drain, proc.stderr, err)
        url = await _gateway_url(ctx, proc, err)
        if url is None:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"the gateway did not get ready: {tail(err)}")
        printed: list[str] = []
        try:
            await trust_workspace(ctx, ctx.project)
            code, _, err_text = await cli(ctx, "secret", "set", "GW_STORED", stdin=token_line)
            if code != 0:
                raise RuntimeError(f"secret set exited {code}: {tail(err_text)}")
            ctx.env.pop("GW_STORED", None)
            ids = {
                # lazy (CW-10): each task starts only the server it calls
                name: await register_server(
                    ctx, {"name": name, "url": url, "api_key_env": env, "lazy": True}, ctx.project, problems
                )
                for name, env in (("gwstored", "GW_STORED"), ("gwenv", "GW_FROM_ENV"))
            }
            tasks = [
                {
                    "match": f"use {name}",
                    "turns": tool_turns(
                        ("mcp_call", {"server": name, "tool": "shadow_jobs", "arguments": {"action": "list"}})
                    ),
                }
                for name in ids
            ]
            await add_model(ctx, tasks)
        except RuntimeError as exc:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"set-up failed: {exc}")
        for name, server_id in ids.items():
            if server_id is None:
                continue
            if name == "gwenv":
                ctx.env["GW_FROM_ENV"] = _GATEWAY_TOKEN
            expected = [{"server": server_id, "tool": "shadow_jobs", "arguments": {"action": "list"}}]
            job, events = await run_task(ctx, f"use {name}", ctx.project, expected, problems)
            ctx.env.pop("GW_FROM_ENV", None)
            printed.append(json.dumps({"job": job, "events": events}, ensure_ascii=False))
            _check_http_task(job, events, problems)
            if _summaries(events) != [False]:
                problems.append(f"{name}: the gateway call did not succeed: {_events_text(events)[-400:]}")
        with suppress(RuntimeError):
            printed.append(json.dumps(await cli_json(ctx, "jobs", workspace=ctx.project)))
            printed.append(json.dumps(await cli_json(ctx, "approvals", workspace=ctx.project)))
        leaks = _leaks(ctx, printed)
        if leaks:
            problems.append(f"the gateway token leaked into: {', '.join(leaks)}")
        tg.cancel_scope.cancel()
    return check_result(
        problems, "the gateway answered with the bearer from the secret store and from the environment; no leak"
    )
