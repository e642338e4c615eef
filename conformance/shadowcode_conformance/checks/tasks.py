"""Delegated jobs as Tasks-extension tasks, seen from outside over stdio and the gateway (SRV-26).

The target is driven through ``mcp serve`` (raw 2026-07-28 frames, so every ``_meta`` is the
check's choice) and its command line (``trust``, ``approve``, ``--json jobs``). Jobs are
``shadow_test`` jobs: they ask an exact approval of their command and call no model.

* ``tasks:stdio``: ``server/discover`` advertises ``io.modelcontextprotocol/tasks`` (and a
  legacy ``initialize`` does not); a declaring ``shadow_test`` call answers a flat
  ``CreateTaskResult`` (the job id, ISO times, ``ttlMs``, ``pollIntervalMs``, no request state
  or related-task metadata), a non-declaring one the job id as before; ``tasks/get`` reads
  ``working`` with the pending approval and ``shadowcode approve ID`` in its message, then,
  once ``<target> approve ID`` ran, ``completed`` with the job's report (``tests passed``);
  ``tasks/*`` without the extension declared answers -32021 naming it, an unknown id -32602;
  ``tasks/update`` with any answer is refused (no host input is asked by default) and the
  approval stays pending; ``tasks/cancel`` acknowledges twice and the task reads
  ``cancelled``; a second ``mcp serve`` can neither read nor cancel the first one's task;
  closing the first one's stdin cancels its waiting task (SRV-21).
* ``tasks:gateway``: the same rules over HTTP: the task, -32021, -32602, the cancel; every
  request of the gateway is one owner, so a request made as another client reads the task
  (GW-06), while a second gateway in the same profile gets -32602 for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import httpx2

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.json_values import json_array, json_member, json_object
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = [
    "TASKS",
    "HttpClient",
    "StdioClient",
    "gateway_client",
    "modern_meta",
    "stdio_client",
    "tasks_gateway",
    "tasks_stdio",
    "trust_problem",
]

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""

_TASK_KEYS = frozenset({"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"})
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_CALL_SECONDS = 30.0
_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.2
Call = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""One request and its answer: ``StdioClient.call`` or ``HttpClient.call``."""
_MISSING_CAPABILITY = -32021
_INVALID_PARAMS = -32602
_METHOD_NOT_FOUND = -32601
PASSING = ["true"]
"""A test command that passes: its job's answer is ``tests passed``."""


def modern_meta(*, tasks: bool = True, **extra: Any) -> dict[str, Any]:
    """The 2026-07-28 ``_meta`` envelope; with ``tasks`` it declares the extension."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-tasks", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}} if tasks else {},
        **extra,
    }


# --- clients ----------------------------------------------------------------------------


@dataclass
class StdioClient:
    """``mcp serve`` spoken to frame by frame; notifications are kept in arrival order.

    Attributes:
        proc: the server process.
        stderr: what it wrote on stderr.
        frames: every frame read so far.
    """

    proc: anyio.abc.Process
    stderr: bytearray
    frames: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _buffer: bytearray = field(default_factory=bytearray)
    _next_id: int = 1

    async def send(self, method: str, params: Mapping[str, Any] | None = None, *, notify: bool = False) -> int:
        """Write one request (or notification); returns its id."""
        assert self.proc.stdin is not None
        ident = self._next_id
        self._next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": dict(params or {})}
        if not notify:
            frame["id"] = ident
        await self.proc.stdin.send(json.dumps(frame).encode("utf-8") + b"\n")
        return ident

    async def frame(self, seconds: float = _CALL_SECONDS) -> dict[str, Any]:
        """The next frame (bounded).

        Raises:
            TimeoutError: none within ``seconds``.
            anyio.EndOfStream: the server closed stdout.
        """
        assert self.proc.stdout is not None
        with anyio.fail_after(seconds):
            while (cut := self._buffer.find(b"\n")) < 0:
                self._buffer.extend(await self.proc.stdout.receive())
        line = bytes(self._buffer[:cut])
        del self._buffer[: cut + 1]
        doc = json_object(json.loads(line)) or {}
        self.frames.append(doc)
        return doc

    async def answer(self, ident: int, seconds: float = _CALL_SECONDS) -> dict[str, Any]:
        """Frames until the answer to ``ident``."""
        with anyio.fail_after(seconds):
            while True:
                doc = await self.frame(seconds)
                if doc.get("id") == ident and ("result" in doc or "error" in doc):
                    return doc

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One request and its answer."""
        return await self.answer(await self.send(method, params))

    async def close(self) -> None:
        """Close the server's stdin (the client is done)."""
        if self.proc.stdin is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.proc.stdin.aclose()


@asynccontextmanager
async def stdio_client(ctx: Context, *flags: str) -> AsyncGenerator[StdioClient, None]:
    """``<target> --workspace P mcp serve FLAGS``; the session ends when the block does."""
    stderr = bytearray()
    async with ctx.spawn(ctx.serve_argv(*flags)) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        client = StdioClient(proc, stderr)
        try:
            yield client
        finally:
            await client.close()
            with anyio.move_on_after(5.0):
                await proc.wait()
            tg.cancel_scope.cancel()


@dataclass
class HttpClient:
    """Stateless 2026-07-28 requests to a gateway, each its own HTTP request."""

    url: str
    token: str
    _next_id: int = 1

    def _headers(self, method: str, params: Mapping[str, Any], accept: str) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": accept,
            "MCP-Protocol-Version": MODERN_REVISION,
            "Mcp-Method": method,
        }
        name = params.get("name") if method == "tools/call" else params.get("taskId")
        if isinstance(name, str):
            headers["Mcp-Name"] = name
        return headers

    def body(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One request frame with a fresh id."""
        ident = self._next_id
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": ident, "method": method, "params": dict(params)}

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One request; its JSON answer (an SSE answer's last message)."""
        async with httpx2.AsyncClient(timeout=_CALL_SECONDS) as http:
            reply = await http.post(
                self.url, json=self.body(method, params), headers=self._headers(method, params, "application/json")
            )
        if reply.headers.get("content-type", "").startswith("text/event-stream"):
            events = sse_messages(reply.text)
            return events[-1] if events else {}
        return reply.json()

    @asynccontextmanager
    async def stream(self, method: str, params: Mapping[str, Any]) -> AsyncGenerator[httpx2.Response, None]:
        """One request whose answer may be an event stream, read as it arrives."""
        accept = "application/json, text/event-stream"
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(_CALL_SECONDS, read=90.0)) as http,
            http.stream(
                "POST", self.url, json=self.body(method, params), headers=self._headers(method, params, accept)
            ) as reply,
        ):
            yield reply


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body (its ``data:`` lines, event by event)."""
    found: list[dict[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "".join(line[5:].strip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            found.append(json_object(json.loads(data)) or {})
    return found


async def trust_problem(ctx: Context) -> str | None:
    """Trust the sample project at ``workspace``; a problem sentence when that did not exit 0, else None."""
    trusted = await ctx.trust()
    if trusted.returncode != 0:
        return f"trust exited {trusted.returncode}: {tail(trusted.stderr)}"
    return None


@asynccontextmanager
async def gateway_client(ctx: Context, *flags: str) -> AsyncGenerator[tuple[HttpClient, Any], None]:
    """A gateway of the target and a client of it; yields ``(client, gateway)``."""
    from shadowcode_conformance.checks.gateway import start_gateway

    async with start_gateway(ctx, *flags) as gw:
        yield HttpClient(gw.url, gw.token), gw


# --- shared expectations ------------------------------------------------------------------


def error_code(answer: Mapping[str, Any]) -> int | None:
    code = json_member(answer, "error").get("code")
    return code if isinstance(code, int) else None


def missing_capability_problems(answer: Mapping[str, Any], what: str) -> list[str]:
    """-32021 naming the extension in ``data.requiredCapabilities``."""
    if error_code(answer) != _MISSING_CAPABILITY:
        return [f"{what} without the extension declared answered {str(answer)[:200]}, expected -32021"]
    data = json_member(answer, "error").get("data")
    required = (json_object(data) or {}).get("requiredCapabilities")
    if not isinstance(data, dict) or required != {"extensions": {TASKS: {}}}:
        return [f"{what}'s -32021 does not name the extension in data.requiredCapabilities: {data}"]
    return []


def created_task_problems(result: Mapping[str, Any]) -> list[str]:
    """A flat ``CreateTaskResult`` whose task is the job: every field, nothing more."""
    problems: list[str] = []
    if result.get("resultType") != "task":
        problems.append(f"a declaring shadow_test call answered resultType {result.get('resultType')!r}, not 'task'")
    fields = set(result) - {"resultType", "_meta"}
    if fields ^ _TASK_KEYS:  # a set and a frozenset: unequal when their symmetric difference is not empty
        problems.append(f"the CreateTaskResult has fields {sorted(fields)}, expected {sorted(_TASK_KEYS)}")
    if result.get("status") != "working":
        problems.append(f"a new task reads {result.get('status')!r}, expected 'working'")
    for name in ("createdAt", "lastUpdatedAt"):
        if not _ISO.fullmatch(str(result.get(name))):
            problems.append(f"{name} {result.get(name)!r} is not ISO 8601")
    meta = json_member(result, "_meta")
    if "requestState" in result or any("related-task" in key for key in meta):
        problems.append("the CreateTaskResult carries request state or related-task metadata")
    if not str(result.get("taskId", "")).startswith("task_"):
        problems.append(f"the task id {result.get('taskId')!r} is not the job id")
    return problems


def test_call(*, tasks: bool = True, command: list[str] | None = None) -> dict[str, Any]:
    """``tools/call`` params of a ``shadow_test`` job."""
    return {"name": "shadow_test", "arguments": {"command": command or PASSING}, "_meta": modern_meta(tasks=tasks)}


vars(test_call)["__test__"] = False  # not a pytest test


async def approve(ctx: Context, approval_id: str) -> str:
    """``<target> approve ID``; "" or the problem."""
    done = await ctx.run(ctx.target_argv("approve", approval_id), timeout_seconds=_CALL_SECONDS)
    return "" if done.returncode == 0 else f"`approve {approval_id}` exited {done.returncode}: {tail(done.stderr)}"


async def approval_of(ctx: Context, job_id: str) -> str | None:
    """The job's pending approval id, read through ``<target> --json approvals`` (polled, bounded)."""
    with anyio.move_on_after(_WAIT_SECONDS):
        while True:
            done = await ctx.run(ctx.target_argv("--json", "approvals"), timeout_seconds=_CALL_SECONDS)
            with suppress(ValueError, AttributeError, TypeError, KeyError):
                for approval in json.loads(done.stdout)["approvals"]:
                    if approval["task_id"] == job_id:
                        return str(approval["id"])
            await anyio.sleep(_POLL_SECONDS)
    return None


async def job_status(ctx: Context, job_id: str) -> str:
    done = await ctx.run(ctx.target_argv("--json", "jobs", job_id), timeout_seconds=_CALL_SECONDS)
    with suppress(ValueError, AttributeError, TypeError, KeyError):
        doc = json.loads(done.stdout)
        return str(doc.get("job", doc)["status"])
    return "?"


def _result(problems: list[str], good: str, data: dict[str, Any] | None = None) -> CheckResult:
    return CheckResult(not problems, "; ".join(problems) if problems else good, data or {})


# --- stdio --------------------------------------------------------------------------------


async def _lifecycle(ctx: Context, call: Call, problems: list[str]) -> str:
    """Create, read, approve, complete one task through ``call(method, params)``; returns its id."""
    created = json_member(await call("tools/call", test_call()), "result")
    problems += created_task_problems(created)
    task_id = str(created.get("taskId", ""))
    approval = await approval_of(ctx, task_id)
    if approval is None:
        problems.append(f"task {task_id} asked for no approval")
        return task_id
    waiting: dict[str, Any] = {}
    with anyio.move_on_after(_WAIT_SECONDS):
        while approval not in str(waiting.get("statusMessage", "")):
            waiting = json_member(await call("tasks/get", {"taskId": task_id, "_meta": modern_meta()}), "result")
            await anyio.sleep(_POLL_SECONDS)
    if waiting.get("status") != "working" or f"shadowcode approve {approval}" not in str(waiting.get("statusMessage")):
        problems.append(f"a task waiting for {approval} read {waiting}, expected working naming `shadowcode approve`")
    if waiting.get("resultType") != "complete":
        problems.append(f"tasks/get answered resultType {waiting.get('resultType')!r}, expected 'complete'")
    problems += [p for p in [await approve(ctx, approval)] if p]
    done: dict[str, Any] = {}
    with anyio.move_on_after(_WAIT_SECONDS):
        while done.get("status") not in ("completed", "failed", "cancelled"):
            await anyio.sleep(_POLL_SECONDS)
            done = json_member(await call("tasks/get", {"taskId": task_id, "_meta": modern_meta()}), "result")
    result = json_member(done, "result")
    report = json_member(result, "structuredContent")
    if (
        done.get("status") != "completed"
        or result.get("isError") is not False
        or report.get("answer") != "tests passed"
    ):
        problems.append(f"the approved task read {str(done)[:300]}, expected completed with 'tests passed'")
    return task_id


async def _refusals(call: Call, task_id: str, problems: list[str]) -> None:
    extras: tuple[tuple[str, dict[str, Any]], ...] = (
        ("tasks/get", {}),
        ("tasks/cancel", {}),
        ("tasks/update", {"inputResponses": {}}),
    )
    for method, extra in extras:
        answer = await call(method, {"taskId": task_id, **extra, "_meta": modern_meta(tasks=False)})
        problems += missing_capability_problems(answer, method)
    unknown = await call("tasks/get", {"taskId": "task_0000000000000000", "_meta": modern_meta()})
    if error_code(unknown) != _INVALID_PARAMS:
        problems.append(f"tasks/get of an unknown task answered {str(unknown)[:200]}, expected -32602")


async def _cancel(ctx: Context, call: Call, problems: list[str]) -> None:
    """A task parked on its approval: tasks/update refused, then cancelled twice."""
    task_id = str(json_member(await call("tools/call", test_call(command=["sleep", "60"])), "result").get("taskId"))
    approval = await approval_of(ctx, task_id)
    answer: dict[str, Any] = {"action": "accept", "content": {}}
    refused = await call(
        "tasks/update", {"taskId": task_id, "inputResponses": {str(approval): answer}, "_meta": modern_meta()}
    )
    if error_code(refused) != _INVALID_PARAMS:
        problems.append(f"tasks/update with an answer nobody asked for answered {str(refused)[:200]}, expected -32602")
    if await job_status(ctx, task_id) != "waiting":
        problems.append(f"after a refused tasks/update the job reads {await job_status(ctx, task_id)!r}, not waiting")
    for attempt in ("first", "second"):
        ack = await call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
        if json_member(ack, "result").get("resultType") != "complete" or set(json_member(ack, "result")) - {
            "resultType",
            "_meta",
        }:
            problems.append(f"the {attempt} tasks/cancel answered {str(ack)[:200]}, expected an empty acknowledgement")
    found = json_member(await call("tasks/get", {"taskId": task_id, "_meta": modern_meta()}), "result")
    if found.get("status") != "cancelled":
        problems.append(f"a cancelled task reads {found.get('status')!r}")


@check("tasks:stdio", covers=["SRV-26", "SRV-21", "SRV-03"], timeout_seconds=300)
async def tasks_stdio(ctx: Context) -> CheckResult:
    """Tasks over stdio: advertised, created, read, completed, refused, cancelled, owned."""
    problems: list[str] = []
    if problem := await trust_problem(ctx):
        return CheckResult(False, problem)
    async with stdio_client(ctx, "--allow-write") as legacy:
        info = {"name": "conformance-tasks", "version": "1"}
        init = await legacy.call(
            "initialize", {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}, "clientInfo": info}
        )
        if "extensions" in json_member(json_member(init, "result"), "capabilities"):
            problems.append("a legacy initialize advertises extensions; the tasks extension is 2026-07-28 only")
        ctx.record_revision("tasks:stdio:legacy", str(json_member(init, "result").get("protocolVersion")))
    leftover = ""
    async with stdio_client(ctx, "--allow-write") as first:
        found = await first.call("server/discover", {"_meta": modern_meta(tasks=False)})
        extensions = json_member(json_member(json_member(found, "result"), "capabilities"), "extensions")
        if extensions.get(TASKS) != {}:
            problems.append(f"server/discover advertises extensions {extensions}, expected {TASKS}: {{}}")
        if MODERN_REVISION in (json_array(json_member(found, "result").get("supportedVersions")) or []):
            ctx.record_revision("tasks:stdio", MODERN_REVISION)
        plain = json_member(await first.call("tools/call", test_call(tasks=False)), "result")
        job_id = str(json_member(plain, "structuredContent").get("job_id", ""))
        if plain.get("resultType") != "complete" or not job_id.startswith("task_"):
            problems.append(f"a non-declaring shadow_test call answered {str(plain)[:200]}, expected the job id")
        await first.call("tasks/cancel", {"taskId": job_id, "_meta": modern_meta()})
        task_id = await _lifecycle(ctx, first.call, problems)
        await _refusals(first.call, task_id, problems)
        await _cancel(ctx, first.call, problems)
        leftover = str(json_member(await first.call("tools/call", test_call()), "result").get("taskId"))
        await approval_of(ctx, leftover)
        async with stdio_client(ctx, "--allow-write") as second:
            await second.call("tools/call", test_call(tasks=False))  # it has an owner of its own
            for method in ("tasks/get", "tasks/cancel"):
                foreign = await second.call(method, {"taskId": leftover, "_meta": modern_meta()})
                if error_code(foreign) != _INVALID_PARAMS:
                    problems.append(f"{method} of another connection's task answered {str(foreign)[:200]}")
        if await job_status(ctx, leftover) != "waiting":
            problems.append("another connection's tasks/cancel changed the task")
    status = "?"
    with anyio.move_on_after(_WAIT_SECONDS):
        while (status := await job_status(ctx, leftover)) != "cancelled":
            await anyio.sleep(_POLL_SECONDS)
    if status != "cancelled":
        problems.append(f"after its connection's stdin closed, the waiting task reads {status!r}, expected cancelled")
    return _result(problems, "advertised, created as the job, read, completed, refused, cancelled, owned")


# --- the gateway --------------------------------------------------------------------------


@check("tasks:gateway", covers=["SRV-26", "GW-05", "GW-06"], timeout_seconds=300)
async def tasks_gateway(ctx: Context) -> CheckResult:
    """Tasks over the gateway: the same rules; one owner per gateway, not per request."""
    problems: list[str] = []
    if problem := await trust_problem(ctx):
        return CheckResult(False, problem)
    try:
        async with gateway_client(ctx, "--allow-write") as (client, _):
            found = await client.call("server/discover", {"_meta": modern_meta(tasks=False)})
            extensions = json_member(json_member(json_member(found, "result"), "capabilities"), "extensions")
            if extensions.get(TASKS) != {}:
                problems.append(f"server/discover over HTTP advertises {extensions}")
            task_id = await _lifecycle(ctx, client.call, problems)
            await _refusals(client.call, task_id, problems)
            await _cancel(ctx, client.call, problems)
            waiting = str(json_member(await client.call("tools/call", test_call()), "result").get("taskId"))
            await approval_of(ctx, waiting)
            other_client = HttpClient(client.url, client.token)
            meta = modern_meta()
            meta["io.modelcontextprotocol/clientInfo"] = {"name": "another-client", "version": "2"}
            seen = json_member(await other_client.call("tasks/get", {"taskId": waiting, "_meta": meta}), "result")
            if seen.get("taskId") != waiting:
                problems.append(f"another client of the same gateway (one owner) could not read the task: {seen}")
            async with gateway_client(ctx, "--allow-write") as (second, _):
                await second.call("tools/call", test_call(tasks=False))
                foreign = await second.call("tasks/get", {"taskId": waiting, "_meta": modern_meta()})
                if error_code(foreign) != _INVALID_PARAMS:
                    problems.append(f"a second gateway read the first one's task: {str(foreign)[:200]}")
            await client.call("tasks/cancel", {"taskId": waiting, "_meta": modern_meta()})
    except (AssertionError, httpx2.HTTPError, ValueError) as exc:
        problems.append(f"the gateway exchange failed: {exc}")
    return _result(problems, "over HTTP: created, read, completed, refused, cancelled; one owner per gateway")
