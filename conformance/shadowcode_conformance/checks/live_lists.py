"""Live lists and progress seen from outside: ``subscriptions/listen`` and ``notifications/progress`` (SRV-27, SRV-28).

Driven through ``mcp serve`` (raw frames over stdio, raw requests to the gateway) and the
target's command line, with ``shadow_test`` jobs that wait for an exact approval:

* ``live_lists:stdio``: ``resources/templates/list`` answers a list with ``ttlMs`` and
  ``cacheScope``; a listen stream's first frame is the acknowledgement and every frame
  carries the listen request's id as ``subscriptionId``; with ``resourcesListChanged`` asked,
  ``notifications/resources/list_changed`` comes when a job appears and when it ends and
  nothing else comes; with ``taskIds`` (the Tasks extension declared), ``notifications/tasks``
  carries the task exactly as ``tasks/get`` answers it, up to ``completed``; ``taskIds``
  without the extension declared is -32021; a listen on a legacy connection does not exist.
* ``live_lists:gateway``: the same stream over HTTP is an event stream whose frames arrive as
  they happen (the acknowledgement at once), and which ends with its final result within the
  gateway's request deadline (GW-07), after GATEWAY_LISTEN_SECONDS (50 s).
* ``live_lists:progress``: ``shadow_sqlite`` running a query that only its 5 s bound stops,
  called with a progress token, sends ``notifications/progress`` with that token, at most one
  a second, before its answer: over stdio (legacy and 2026-07-28) and over the gateway (as an
  event stream, for a client that accepts one); without a token it sends none.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from typing import Any

import anyio
import httpx2

from shadowcode_conformance.checks.tasks import (
    approval_of,
    approve,
    error_code,
    gateway_client,
    missing_capability_problems,
    modern_meta,
    sse_messages,
    stdio_client,
    test_call,
    trust_problem,
)
from shadowcode_conformance.context import LEGACY_REVISIONS, Context
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["listen_gateway", "listen_stdio", "progress"]

_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
_WAIT_SECONDS = 30.0
_LISTEN_SECONDS = 50.0
"""How long a gateway listen stream lives (GATEWAY_LISTEN_SECONDS)."""
_REQUEST_DEADLINE_SECONDS = 60.0
"""GW-07: a request's answer is complete within this."""
_ENDLESS_QUERY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
"""A query only shadow_sqlite's own 5 s bound stops (SRV-13)."""


def _result(problems: list[str], good: str) -> CheckResult:
    return CheckResult(not problems, "; ".join(problems) if problems else good)


def _stripped(task: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in task.items() if k not in ("_meta", "resultType")}


async def _next_notification(client: Any, method: str, seconds: float = _WAIT_SECONDS) -> dict[str, Any] | None:
    with anyio.move_on_after(seconds):
        while True:
            frame = await client.frame(seconds)
            if frame.get("method") == method:
                return frame
    return None


@check("live_lists:stdio", covers=["SRV-27", "SRV-26", "SRV-05"], timeout_seconds=240)
async def listen_stdio(ctx: Context) -> CheckResult:
    """Listen streams over stdio: acknowledged first, stamped, filtered; tasks as tasks/get reads them."""
    problems: list[str] = []
    if problem := await trust_problem(ctx):
        return CheckResult(False, problem)
    async with stdio_client(ctx, "--allow-write") as client:
        templates: dict[str, Any] = (
            await client.call("resources/templates/list", {"_meta": modern_meta()})
        ).get("result") or {}
        if templates.get("resourceTemplates") != [] or not isinstance(templates.get("ttlMs"), int):
            problems.append(f"resources/templates/list answered {str(templates)[:200]}, expected a list with ttlMs")
        if templates.get("cacheScope") not in ("public", "private"):
            problems.append(f"resources/templates/list has cacheScope {templates.get('cacheScope')!r}")
        undeclared = await client.call(
            "subscriptions/listen", {"notifications": {"taskIds": ["task_1"]}, "_meta": modern_meta(tasks=False)}
        )
        problems += missing_capability_problems(undeclared, "subscriptions/listen with taskIds")
        listen_id = await client.send(
            "subscriptions/listen", {"notifications": {"resourcesListChanged": True}, "_meta": modern_meta()}
        )
        ack = await client.frame()
        if ack.get("method") != "notifications/subscriptions/acknowledged":
            problems.append(f"the listen stream's first frame is {str(ack)[:200]}, not the acknowledgement")
        called: dict[str, Any] = (await client.call("tools/call", test_call())).get("result") or {}
        task_id = str(called.get("taskId"))
        appeared = await _next_notification(client, "notifications/resources/list_changed")
        approval = await approval_of(ctx, task_id)
        tasks_listen = await client.send(
            "subscriptions/listen", {"notifications": {"taskIds": [task_id]}, "_meta": modern_meta()}
        )
        ack_tasks = await _next_notification(client, "notifications/subscriptions/acknowledged")
        ack_params: dict[str, Any] = ack_tasks.get("params", {}) if ack_tasks else {}
        if ack_params.get("notifications") != {"taskIds": [task_id]}:
            problems.append(f"the taskIds listen was acknowledged as {ack_tasks}")
        first_task = await _next_notification(client, "notifications/tasks")
        polled: dict[str, Any] = (
            await client.call("tasks/get", {"taskId": task_id, "_meta": modern_meta()})
        ).get("result") or {}
        if first_task is None or _stripped(first_task["params"]) != _stripped(polled):
            problems.append(f"notifications/tasks {first_task} differs from tasks/get {polled}")
        problems += [p for p in [await approve(ctx, approval)] if p] if approval else ["the job asked no approval"]
        completed = None
        with anyio.move_on_after(_WAIT_SECONDS):
            while completed is None:
                note = await _next_notification(client, "notifications/tasks")
                if note is not None and note["params"].get("status") == "completed":
                    completed = note
        final: dict[str, Any] = (
            await client.call("tasks/get", {"taskId": task_id, "_meta": modern_meta()})
        ).get("result") or {}
        if completed is None or _stripped(completed["params"]) != _stripped(final):
            problems.append(f"no notifications/tasks equal to the completed task ({str(completed)[:200]})")

        def changes() -> int:
            return sum(f.get("method") == "notifications/resources/list_changed" for f in client.frames)

        with anyio.move_on_after(5.0):
            while changes() < 2:
                await client.frame(5.0)
        if appeared is None:
            problems.append("no notifications/resources/list_changed after the job appeared")
        elif changes() != 2:
            problems.append(
                f"{changes()} notifications/resources/list_changed for one job, expected 2 (it appeared, it ended)"
            )
        for frame in client.frames:
            if "id" in frame or frame.get("method") == "notifications/progress":
                continue
            expected = tasks_listen if frame.get("method") == "notifications/tasks" else listen_id
            params: dict[str, Any] = frame.get("params") or {}
            meta: dict[str, Any] = params.get("_meta", {})
            if meta.get(_SUBSCRIPTION) not in (listen_id, tasks_listen):
                problems.append(f"a listen frame lacks its subscription id: {str(frame)[:200]}")
            elif frame.get("method") == "notifications/tasks" and frame["params"]["_meta"][_SUBSCRIPTION] != expected:
                problems.append("notifications/tasks came on the stream that did not ask for task ids")
            elif frame.get("method") not in (
                "notifications/subscriptions/acknowledged",
                "notifications/resources/list_changed",
                "notifications/tasks",
            ):
                problems.append(f"a listen stream sent a kind nobody asked for: {frame.get('method')}")
    async with stdio_client(ctx) as legacy:
        info = {"name": "conformance-live", "version": "1"}
        await legacy.call(
            "initialize", {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}, "clientInfo": info}
        )
        await legacy.send("notifications/initialized", notify=True)
        refused = await legacy.call("subscriptions/listen", {"notifications": {"resourcesListChanged": True}})
        if error_code(refused) != -32601:
            problems.append(f"subscriptions/listen on a legacy connection answered {str(refused)[:200]}")
    return _result(problems, "acknowledged first, stamped, only what was asked; tasks as tasks/get reads them")


@check("live_lists:gateway", covers=["SRV-27", "GW-05", "GW-07"], timeout_seconds=240)
async def listen_gateway(ctx: Context) -> CheckResult:
    """A listen stream over the gateway: an event stream that ends gracefully inside the request deadline."""
    problems: list[str] = []
    if problem := await trust_problem(ctx):
        return CheckResult(False, problem)
    try:
        async with gateway_client(ctx, "--allow-write") as (client, _):
            params = {"notifications": {"resourcesListChanged": True}, "_meta": modern_meta()}
            started = time.monotonic()
            async with client.stream("subscriptions/listen", params) as reply:
                kind = reply.headers.get("content-type", "")
                if reply.status_code != 200 or not kind.startswith("text/event-stream"):
                    problems.append(f"a listen request got {reply.status_code} {kind!r}, expected an event stream")
                messages: list[tuple[float, dict[str, Any]]] = []
                buffer = ""
                delegated = False
                async for chunk in reply.aiter_text():
                    buffer += chunk
                    *blocks, buffer = buffer.replace("\r\n", "\n").split("\n\n")
                    for block in blocks:
                        for message in sse_messages(block + "\n\n"):
                            messages.append((time.monotonic() - started, message))
                    if messages and not delegated:
                        delegated = True
                        await client.call("tools/call", test_call())
            lived = time.monotonic() - started
        if not messages or messages[0][1].get("method") != "notifications/subscriptions/acknowledged":
            problems.append(f"the stream did not open with its acknowledgement: {messages[:1]}")
        elif messages[0][0] > 10.0:
            problems.append(f"the acknowledgement came only after {messages[0][0]:.1f} s: the stream was held back")
        changed = [m for _, m in messages if m.get("method") == "notifications/resources/list_changed"]
        if not changed:
            problems.append("no notifications/resources/list_changed arrived on the stream when a job appeared")
        final: dict[str, Any] = messages[-1][1] if messages else {}
        result: dict[str, Any] = final.get("result") or {}
        if _SUBSCRIPTION not in (result.get("_meta") or {}):
            problems.append(f"the stream did not end with its final result: {str(final)[:200]}")
        if not _LISTEN_SECONDS - 5 <= lived <= _REQUEST_DEADLINE_SECONDS:
            problems.append(f"the stream lived {lived:.1f} s, expected about {_LISTEN_SECONDS:g} s (under 60 s)")
    except (AssertionError, httpx2.HTTPError, ValueError) as exc:
        problems.append(f"the gateway exchange failed: {exc}")
    return _result(problems, "an event stream, acknowledged at once, ended with its final result inside 60 s")


def _progress_problems(frames: list[dict[str, Any]], token: Any, where: str) -> list[str]:
    notes = [f for f in frames if f.get("method") == "notifications/progress"]
    answer = [i for i, f in enumerate(frames) if "result" in f or "error" in f]
    if not notes:
        last = str(frames[-1])[:200] if frames else "nothing"
        return [f"{where}: no notifications/progress for a call that ran about 5 s with a token (answer: {last})"]
    problems: list[str] = []
    if any(n["params"].get("progressToken") != token for n in notes):
        problems.append(f"{where}: a progress notification does not carry the token {token!r}")
    values = [n["params"].get("progress") for n in notes]
    if values != sorted(values) or len(set(values)) != len(values):
        problems.append(f"{where}: progress values do not grow: {values}")
    if len(notes) > 6:
        problems.append(f"{where}: {len(notes)} progress notifications for a 5 s call: more than one a second")
    if answer and frames.index(notes[-1]) > answer[0]:
        problems.append(f"{where}: progress came after the answer")
    return problems


@check("live_lists:progress", covers=["SRV-28", "SRV-13", "GW-05"], timeout_seconds=240)
async def progress(ctx: Context) -> CheckResult:
    """A slow call with a progress token reports progress on its own stream, stdio and HTTP."""
    problems: list[str] = []
    with closing(sqlite3.connect(ctx.project / "slow.db")) as db:
        db.execute("CREATE TABLE t (x)")
        db.commit()
    arguments = {"action": "query", "path": "slow.db", "sql": _ENDLESS_QUERY}
    async with stdio_client(ctx) as client:
        info = {"name": "conformance-progress", "version": "1"}
        await client.call(
            "initialize", {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}, "clientInfo": info}
        )
        await client.send("notifications/initialized", notify=True)
        start = len(client.frames)
        await client.call(
            "tools/call", {"name": "shadow_sqlite", "arguments": arguments, "_meta": {"progressToken": 7}}
        )
        problems += _progress_problems(client.frames[start:], 7, "stdio (legacy)")
        before = len(client.frames)
        await client.call("tools/call", {"name": "shadow_sqlite", "arguments": arguments})
        if any(f.get("method") == "notifications/progress" for f in client.frames[before:]):
            problems.append("stdio: progress was sent for a call without a progress token")
    async with stdio_client(ctx) as modern:
        meta = modern_meta(progressToken="m-1")
        await modern.call("tools/call", {"name": "shadow_sqlite", "arguments": arguments, "_meta": meta})
        problems += _progress_problems(modern.frames, "m-1", "stdio (2026-07-28)")
    try:
        async with gateway_client(ctx) as (client, _):
            params = {"name": "shadow_sqlite", "arguments": arguments, "_meta": modern_meta(progressToken="h-1")}
            async with client.stream("tools/call", params) as reply:
                kind = reply.headers.get("content-type", "")
                body = (await reply.aread()).decode("utf-8")
            frames = sse_messages(body) if kind.startswith("text/event-stream") else [json.loads(body)]
            problems += _progress_problems(frames, "h-1", "gateway")
    except (AssertionError, httpx2.HTTPError, ValueError) as exc:
        problems.append(f"the gateway exchange failed: {exc}")
    return _result(problems, "progress with the token, at most one a second, before the answer: stdio and HTTP")
