"""Approvals asked in the host on the 2026-07-28 revision, seen from outside (SRV-29).

Set-up as in :mod:`shadowcode_conformance.checks.host_approvals` (the conformance script as the engine's
model, ``mcp serve --allow-write --approve-in-host``), with raw 2026-07-28 frames over stdio or
the gateway (:mod:`shadowcode_conformance.checks.tasks`' clients):

* ``state_refused_stdio`` / ``state_refused_gateway``: a 2026-07-28 client declaring the Tasks
  extension and elicitation: the task reads ``input_required`` (no ``requestState`` field);
  ``tasks/update`` with an altered key, an unknown key and, after the first approval was
  answered, the first key again (a replay) is refused with -32602 while the approval stays
  pending; only the answered command runs.
* ``asked_within_shadow_jobs_gateway``: over HTTP without the Tasks extension, ``shadow_jobs
  get`` of the waiting job answers ``input_required`` with the question and the engine's
  ``requestState``; a bent state is refused (-32602) and the approval stays pending; the
  repeated call with the answer runs the command.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import anyio

from shadowcode_conformance.checks.delegation import configure_model
from shadowcode_conformance.checks.host_approvals import (
    ARGV,
    CALL_SECONDS,
    ONCE,
    OUTPUT,
    POLL_SECONDS,
    WAIT_SECONDS,
    result,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_member, json_objects
from shadowcode_conformance.registry import CheckResult, check

if TYPE_CHECKING:
    from shadowcode_conformance.checks.tasks import Call

__all__ = ["asked_within_shadow_jobs_gateway", "state_refused_gateway", "state_refused_stdio"]

_TWICE = "conformance hostask twice"
_FIRST = ["python3", "-c", "print('first host command')"]

# --- tasks: the engine-signed state over stdio and HTTP ----------------------------------------


def _task_caps(*, tasks: bool = True) -> dict[str, Any]:
    from shadowcode_conformance.checks.tasks import modern_meta

    meta = modern_meta(tasks=tasks)
    meta["io.modelcontextprotocol/clientCapabilities"] = {
        **meta["io.modelcontextprotocol/clientCapabilities"],
        "elicitation": {"form": {}},
    }
    return meta


async def _input_required(call: Call, task_id: str, known: set[str]) -> dict[str, Any]:
    """``tasks/get`` until the task asks for input under a key not in ``known`` (or the bound passes)."""
    seen: dict[str, Any] = {}
    with anyio.move_on_after(WAIT_SECONDS):
        while True:
            seen = json_member(await call("tasks/get", {"taskId": task_id, "_meta": _task_caps()}), "result")
            requests = json_member(seen, "inputRequests")
            if seen.get("status") == "input_required" and set(requests) - known:
                return seen
            if seen.get("status") in ("completed", "failed", "cancelled"):
                return seen
            await anyio.sleep(POLL_SECONDS)
    return seen


def _bent(key: str) -> str:
    return key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")


async def _state_round(ctx: Context, call: Call, problems: list[str]) -> None:
    """Two approvals of one task: bent, unknown and replayed keys are refused; the approval stays pending."""
    from shadowcode_conformance.checks.tasks import approval_of

    run = {
        "name": "shadow_run",
        "arguments": {"prompt": _TWICE, "permission_level": "workspace"},
        "_meta": _task_caps(),
    }
    created = json_member(await call("tools/call", run), "result")
    task_id = str(created.get("taskId", ""))
    if created.get("resultType") != "task" or not task_id.startswith("task_"):
        problems.append(f"a declaring shadow_run answered {str(created)[:200]}, expected a task")
        return
    first = await _input_required(call, task_id, set())
    if "requestState" in first:
        problems.append("the task carries a requestState field")
    requests = json_member(first, "inputRequests")
    if first.get("status") != "input_required" or len(requests) != 1:
        problems.append(f"the waiting task read {str(first)[:300]}, expected input_required with one request")
        return
    [(key, request)] = requests.items()
    message = str(json_member(request, "params").get("message", ""))
    if request.get("method") != "elicitation/create" or json.dumps(_FIRST) not in message:
        problems.append(f"the input request does not name the exact argv {json.dumps(_FIRST)}: {message[:200]!r}")
    pending = await approval_of(ctx, task_id)
    accept = {"action": "accept", "content": {"approve": True}}
    for why, responses in (("an altered key", {_bent(key): accept}), ("an unknown key", {"not-a-state": accept})):
        refused = await call("tasks/update", {"taskId": task_id, "inputResponses": responses, "_meta": _task_caps()})
        if json_member(refused, "error").get("code") != -32602:
            problems.append(f"tasks/update with {why} answered {str(refused)[:200]}, expected -32602")
        if await approval_of(ctx, task_id) != pending:
            problems.append(f"after tasks/update with {why} the approval {pending} is no longer pending")
    ack = await call("tasks/update", {"taskId": task_id, "inputResponses": {key: accept}, "_meta": _task_caps()})
    if "error" in ack:
        problems.append(f"tasks/update with the task's own key answered {str(ack)[:200]}")
        return
    second = await _input_required(call, task_id, {key})
    second_keys = set(json_member(second, "inputRequests")) - {key}
    if second.get("status") != "input_required" or len(second_keys) != 1:
        problems.append(f"the second approval was not asked: {str(second)[:300]}")
        return
    waiting = await approval_of(ctx, task_id)
    replayed = await call("tasks/update", {"taskId": task_id, "inputResponses": {key: accept}, "_meta": _task_caps()})
    if json_member(replayed, "error").get("code") != -32602:
        problems.append(f"a replayed key answered {str(replayed)[:200]}, expected -32602")
    if await approval_of(ctx, task_id) != waiting or waiting == pending:
        problems.append("after the replayed key the second approval is no longer pending")
    [other] = second_keys
    decline = {"action": "decline"}
    await call("tasks/update", {"taskId": task_id, "inputResponses": {other: decline}, "_meta": _task_caps()})
    done: dict[str, Any] = {}
    with anyio.move_on_after(WAIT_SECONDS):
        while done.get("status") not in ("completed", "failed", "cancelled"):
            await anyio.sleep(POLL_SECONDS)
            done = json_member(await call("tasks/get", {"taskId": task_id, "_meta": _task_caps()}), "result")
    shown = await ctx.run(ctx.target_argv("--json", "jobs", task_id), timeout_seconds=CALL_SECONDS)
    try:
        events = json_objects(json.loads(shown.stdout).get("events"))
    except (ValueError, AttributeError):
        events = []
    ran = [str(json_member(e, "data").get("output", "")).strip() for e in events if e.get("kind") == "command.result"]
    if done.get("status") != "completed" or ran != ["first host command"]:
        problems.append(f"the task read {done.get('status')!r} with command output {ran}; only the first should run")


@check("host_approvals_modern:state_refused_stdio", covers=["SRV-29", "SRV-26"], timeout_seconds=180)
async def state_refused_stdio(ctx: Context) -> CheckResult:
    """Over stdio, 2026-07-28 tasks: bent, unknown and replayed keys are refused; the approval stays pending."""
    from shadowcode_conformance.checks.tasks import stdio_client

    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    async with stdio_client(ctx, "--allow-write", "--approve-in-host") as client:
        await _state_round(ctx, client.call, problems)
    return result(problems, "altered, unknown, replayed keys refused (-32602); the approval stayed pending each time")


@check("host_approvals_modern:state_refused_gateway", covers=["SRV-29", "SRV-26", "GW-05"], timeout_seconds=180)
async def state_refused_gateway(ctx: Context) -> CheckResult:
    """The same over the HTTP gateway."""
    from shadowcode_conformance.checks.tasks import gateway_client

    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    try:
        async with gateway_client(ctx, "--allow-write", "--approve-in-host") as (client, _):
            await _state_round(ctx, client.call, problems)
    except (AssertionError, OSError, ValueError) as exc:
        problems.append(f"the gateway exchange failed: {exc}")
    return result(problems, "over HTTP: altered, unknown and replayed keys refused, the approval still pending")


@check("host_approvals_modern:asked_within_shadow_jobs_gateway", covers=["SRV-29", "GW-05"], timeout_seconds=180)
async def asked_within_shadow_jobs_gateway(ctx: Context) -> CheckResult:
    """Over HTTP without the Tasks extension: ``shadow_jobs get`` asks (``input_required``); a bent state is refused."""
    from shadowcode_conformance.checks.tasks import approval_of, gateway_client, modern_meta

    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    meta = modern_meta(tasks=False)
    meta["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {"form": {}}}
    try:
        async with gateway_client(ctx, "--allow-write", "--approve-in-host") as (client, _):
            arguments = {"prompt": ONCE, "permission_level": "workspace"}
            run = await client.call("tools/call", {"name": "shadow_run", "arguments": arguments, "_meta": meta})
            job = str(json_member(json_member(run, "result"), "structuredContent").get("job_id", ""))
            pending = await approval_of(ctx, job) if job else None
            get = {"name": "shadow_jobs", "arguments": {"action": "get", "job_id": job}, "_meta": meta}
            asked = json_member(await client.call("tools/call", get), "result")
            requests = json_member(asked, "inputRequests")
            if pending is None or asked.get("resultType") != "input_required" or list(requests) != [pending]:
                return result([f"shadow_jobs get of a waiting job answered {str(asked)[:300]}"], "")
            message = str(json_member(requests[pending], "params").get("message", ""))
            if json.dumps(ARGV) not in message or str(ctx.project) not in message:
                problems.append(f"the question does not name the exact argv and folder: {message[:200]!r}")
            accept = {pending: {"action": "accept", "content": {"approve": True}}}
            state = str(asked.get("requestState", ""))
            bent = await client.call("tools/call", {**get, "inputResponses": accept, "requestState": _bent(state)})
            if json_member(bent, "error").get("code") != -32602 or await approval_of(ctx, job) != pending:
                problems.append(f"a bent requestState answered {str(bent)[:200]}; expected -32602, still pending")
            again = await client.call("tools/call", {**get, "inputResponses": accept, "requestState": state})
            if json_member(again, "result").get("resultType") != "complete":
                problems.append(f"the repeated call with the answer answered {str(again)[:200]}")
            ran: list[str] = []
            with anyio.move_on_after(WAIT_SECONDS):
                while not ran:
                    shown = await ctx.run(ctx.target_argv("--json", "jobs", job), timeout_seconds=CALL_SECONDS)
                    with suppress(ValueError, AttributeError):
                        events = json_objects(json.loads(shown.stdout).get("events"))
                        results = [e for e in events if e.get("kind") == "command.result"]
                        ran = [str(json_member(e, "data").get("output", "")) for e in results]
                    await anyio.sleep(POLL_SECONDS)
            if len(ran) != 1 or OUTPUT not in ran[0]:
                problems.append(f"after the answer the command results are {ran}")
    except (AssertionError, OSError, ValueError) as exc:
        problems.append(f"the gateway exchange failed: {exc}")
    return result(problems, "asked within shadow_jobs get over HTTP; a bent state refused; the answer ran the command")
