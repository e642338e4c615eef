"""Approvals asked in the host (``mcp serve --approve-in-host``) seen from outside (SRV-29, SRV-30).

Each check trusts the sample project, makes the conformance script the model (``conformance
hostask ...`` entries of ``fixtures/scripts/conformance_jobs.yaml``: a Build task that runs one
or two ``python3 -c print(...)`` commands) and talks to ``<target> mcp serve`` over stdio as a
host would on the handshake revisions: ``initialize`` declaring elicitation, then a line-by-line
exchange in which the server's own requests (``elicitation/create``) are answered by the check.

* ``legacy_accept_runs_the_named_command``: two connections of one profile and project, both
  ``--allow-write --approve-in-host`` and declaring form-mode elicitation. A's task waits for
  its command; ``elicitation/create`` reaches A only, its message names the exact argv (as a
  JSON array) and the folder, and accepting it runs exactly that command once (its output is
  in the job's events) and records the host as the door.
* ``legacy_decline_denies``: declining denies; the command never starts and the job's events
  say the approval was denied.
* ``nothing_asked_without_the_flag``: with ``--allow-write`` alone a client that declares
  elicitation is asked nothing while its job waits (watched for four times the server's
  polling interval), and ``shadowcode approve`` still decides; ``--approval-page`` without
  ``--approve-in-host`` exits 2.
* ``page_refusals``: a client declaring only URL-mode elicitation gets the approval page's
  link. The page shows the argv and folder; a POST from another Origin (403), without one
  (403), with a wrong token (404) changes nothing and the approval stays pending; the page's
  own form approves (200) and the command runs; using the link again is refused (410); the
  link's token appears in no tool result or event.

The 2026-07-28 checks (tasks and ``shadow_jobs``) are in :mod:`shadowcode_conformance.checks.host_approvals_modern`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from shadowcode_conformance.checks.delegation import configure_model
from shadowcode_conformance.context import LEGACY_REVISIONS, Context
from shadowcode_conformance.json_values import json_member, json_object, json_objects
from shadowcode_conformance.processes import drain, end_input, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = [
    "legacy_accept_runs_the_named_command",
    "legacy_decline_denies",
    "nothing_asked_without_the_flag",
    "page_refusals",
]

ONCE = "conformance hostask once"
ARGV = ["python3", "-c", "print('asked in the host')"]
OUTPUT = "asked in the host"
CALL_SECONDS = 30.0
WAIT_SECONDS = 45.0
POLL_SECONDS = 0.1
_QUIET_SECONDS = 2.0
"""Four times the server's APPROVAL_ASK_POLL_SECONDS: long enough for a question that would come."""
_FINISHED = frozenset({"done", "failed", "cancelled", "interrupted"})
_FORM: dict[str, Any] = {"elicitation": {"form": {}}}
_URL_ONLY: dict[str, Any] = {"elicitation": {"url": {}}}

Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Given an ``elicitation/create``'s params, the result to send (None: never answer)."""


class Ended(Exception):
    """The server ended the session during an exchange."""


@dataclass
class Host:
    """``mcp serve`` spoken to as a host: requests out, its own requests answered by ``answer``.

    Attributes:
        proc: the server process.
        stderr: what it wrote on stderr so far.
        asked: the params of every ``elicitation/create`` it sent, in order.
        withdrawn: request ids of the server's requests it cancelled (``notifications/cancelled``).
    """

    proc: anyio.abc.Process
    stderr: bytearray
    answer: Answer
    asked: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    withdrawn: list[Any] = field(default_factory=list[Any])
    _replies: dict[int, dict[str, Any]] = field(default_factory=dict[int, dict[str, Any]])
    _arrived: anyio.Event = field(default_factory=anyio.Event)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _next_id: int = 1
    _ended: bool = False

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        async with self._lock:
            await self.proc.stdin.send(json.dumps(message).encode("utf-8") + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and wait (bounded) for its response."""
        ident = self._next_id
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}})
        with anyio.move_on_after(CALL_SECONDS):
            while ident not in self._replies:
                if self._ended:
                    raise Ended(f"the server ended the session during {method}: {tail(self.stderr)}")
                await self._arrived.wait()
            return self._replies.pop(ident)
        raise Ended(f"no answer to {method} within {CALL_SECONDS:g} s")

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
        """``tools/call``: ``(ok, structured content, text)``."""
        answer = await self.request("tools/call", {"name": tool, "arguments": arguments})
        if "error" in answer:
            return False, {}, str(answer["error"])
        result = json_member(answer, "result")
        text = " ".join(c.get("text", "") for c in json_objects(result.get("content", [])))
        data = json_member(result, "structuredContent")
        return result.get("isError") is not True, data, text

    async def read(self, tg: anyio.abc.TaskGroup) -> None:
        """Read the server's lines: responses for :meth:`request`, its requests for ``answer``."""
        assert self.proc.stdout is not None
        buffer = bytearray()
        try:
            while True:
                buffer.extend(await self.proc.stdout.receive())
                while (cut := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:cut])
                    del buffer[: cut + 1]
                    self._take(json.loads(line), tg)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._ended = True
            self._wake()

    def _take(self, line: Any, tg: anyio.abc.TaskGroup) -> None:
        message = json_object(line)
        if message is None:
            return
        method = message.get("method")
        if method is None and isinstance(message.get("id"), int):
            self._replies[message["id"]] = message
            self._wake()
        elif method == "elicitation/create" and "id" in message:
            params = json_member(message, "params")
            self.asked.append(params)
            tg.start_soon(self._respond, message["id"], params)
        elif method == "notifications/cancelled":
            self.withdrawn.append(json_member(message, "params").get("requestId"))
        elif method is not None and "id" in message:
            error = {"code": -32601, "message": "not served"}
            refusal: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            tg.start_soon(self.send, refusal)

    async def _respond(self, ident: Any, params: dict[str, Any]) -> None:
        result = await self.answer(params)
        if result is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _wake(self) -> None:
        self._arrived.set()
        self._arrived = anyio.Event()

    async def job(self, job_id: str) -> dict[str, Any]:
        return (await self.call("shadow_jobs", {"action": "get", "job_id": job_id}))[1]

    async def settled(self, job_id: str) -> dict[str, Any]:
        """The job's ``shadow_jobs get`` once finished (or the last one seen after the bound)."""
        got: dict[str, Any] = {}
        with anyio.move_on_after(WAIT_SECONDS):
            while json_member(got, "job").get("status") not in _FINISHED:
                got = await self.job(job_id)
                await anyio.sleep(POLL_SECONDS)
        return got

    async def pending(self, job_id: str) -> list[dict[str, Any]]:
        """The job's pending approvals once it has one (empty after the bound)."""
        with anyio.move_on_after(WAIT_SECONDS):
            while True:
                got = await self.job(job_id)
                if got.get("pending_approvals"):
                    return list(got["pending_approvals"])
                if json_member(got, "job").get("status") in _FINISHED:
                    return []
                await anyio.sleep(POLL_SECONDS)
        return []


async def _never(_params: dict[str, Any]) -> dict[str, Any] | None:
    await anyio.sleep_forever()
    return None


@asynccontextmanager
async def host(
    ctx: Context, flags: tuple[str, ...], capabilities: dict[str, Any], answer: Answer = _never
) -> AsyncGenerator[Host, None]:
    """``<target> mcp serve FLAGS`` after ``initialize`` with ``capabilities`` and ``notifications/initialized``."""
    stderr = bytearray()
    async with ctx.spawn(ctx.serve_argv(*flags)) as proc, anyio.create_task_group() as tg:
        tg.start_soon(drain, proc.stderr, stderr)
        session = Host(proc, stderr, answer)
        tg.start_soon(session.read, tg)
        info = {"name": "conformance-host", "version": "1"}
        await session.request(
            "initialize", {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": capabilities, "clientInfo": info}
        )
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        try:
            yield session
        finally:
            await end_input(proc, 10)
            tg.cancel_scope.cancel()


async def _delegate(session: Host, prompt: str, problems: list[str]) -> str:
    ok, data, text = await session.call("shadow_run", {"prompt": prompt, "permission_level": "workspace"})
    if not ok or not data.get("job_id"):
        problems.append(f"shadow_run was refused: {text[:200]}")
        return ""
    return str(data["job_id"])


def _events(job: dict[str, Any]) -> list[dict[str, Any]]:
    return json_objects(job.get("events"))


def _kinds(job: dict[str, Any]) -> list[str]:
    return [str(e.get("kind")) for e in _events(job)]


def result(problems: list[str], passed: str) -> CheckResult:
    return CheckResult(not problems, "; ".join(problems[:4]) if problems else passed)


def _names_the_action(params: dict[str, Any], ctx: Context, argv: list[str]) -> str | None:
    message = str(params.get("message", ""))
    if json.dumps(argv) not in message:
        return f"the question does not name the exact argv {json.dumps(argv)}: {message[:300]!r}"
    if f"in folder: {ctx.project}" not in message:
        return f"the question does not name the folder {ctx.project}: {message[:300]!r}"
    return None


async def _wait_asked(session: Host, count: int = 1) -> bool:
    with anyio.move_on_after(WAIT_SECONDS):
        while len(session.asked) < count:
            await anyio.sleep(POLL_SECONDS)
        return True
    return False


@check("host_approvals:legacy_accept_runs_the_named_command", covers=["SRV-29"], timeout_seconds=180)
async def legacy_accept_runs_the_named_command(ctx: Context) -> CheckResult:
    """``elicitation/create`` reaches the owning client only, names the exact argv and folder; accept runs it."""
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []

    async def accept(_params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"approve": True}}

    flags = ("--allow-write", "--approve-in-host")
    async with host(ctx, flags, _FORM, accept) as a, host(ctx, flags, _FORM) as b:
        quick = await _delegate(b, "conformance quick: B's own job", problems)  # B has an owner that watches
        job_id = await _delegate(a, ONCE, problems)
        if not job_id:
            return result(problems, "")
        if not await _wait_asked(a):
            return result([f"no elicitation/create reached the owning client; stderr: {tail(a.stderr)}"], "")
        wrong = _names_the_action(a.asked[0], ctx, ARGV)
        if wrong:
            problems.append(wrong)
        if a.asked[0].get("mode", "form") != "form":
            problems.append(f"a client declaring form mode was asked in mode {a.asked[0].get('mode')!r}")
        job = await a.settled(job_id)
        status = json_member(job, "job").get("status")
        if status != "done":
            problems.append(f"after the host accepted, the job is {status}, not done")
        results = [e for e in _events(job) if e.get("kind") == "command.result"]
        outputs = [str(json_member(e, "data").get("output", "")) for e in results]
        if len(results) != 1 or OUTPUT not in outputs[0]:
            problems.append(f"the accepted command did not run exactly once with its output: {outputs}")
        if quick:
            await b.settled(quick)
        if b.asked:
            problems.append(f"another connection was asked about A's approval: {b.asked[0].get('message', '')[:120]!r}")
        if len(a.asked) != 1:
            problems.append(f"the owning client was asked {len(a.asked)} times for one approval")
    return result(problems, "asked the owning client only, with the exact argv and folder; accept ran it once")


@check("host_approvals:legacy_decline_denies", covers=["SRV-29"], timeout_seconds=150)
async def legacy_decline_denies(ctx: Context) -> CheckResult:
    """Declining in the host denies: the command never starts and the job says the approval was denied."""
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []

    async def decline(_params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    async with host(ctx, ("--allow-write", "--approve-in-host"), _FORM, decline) as a:
        job_id = await _delegate(a, ONCE, problems)
        if not job_id:
            return result(problems, "")
        job = await a.settled(job_id)
        if not a.asked:
            problems.append("no elicitation/create reached the client")
        if "command.started" in _kinds(job):
            problems.append("the declined command started")
        resolved = [json_member(e, "data").get("status") for e in _events(job) if e.get("kind") == "approval.resolved"]
        if resolved != ["denied"]:
            problems.append(f"the job's approval.resolved events say {resolved}, not ['denied']")
        if json_member(job, "job").get("status") not in _FINISHED:
            problems.append(f"the job did not finish after the denial: {job.get('job')}")
    return result(problems, "decline denied the approval; the command never started and the job says denied")


@check("host_approvals:nothing_asked_without_the_flag", covers=["SRV-29"], timeout_seconds=150)
async def nothing_asked_without_the_flag(ctx: Context) -> CheckResult:
    """Without --approve-in-host nothing is asked and the terminal decides; --approval-page alone exits 2."""
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []
    alone = await ctx.run(ctx.serve_argv("--allow-write", "--approval-page"), timeout_seconds=CALL_SECONDS)
    if alone.returncode != 2 or alone.stdout.strip() or b"--approve-in-host" not in alone.stderr:
        problems.append(f"--approval-page alone exited {alone.returncode} (stderr {tail(alone.stderr)!r})")
    async with host(ctx, ("--allow-write",), _FORM) as a:
        job_id = await _delegate(a, ONCE, problems)
        pending = await a.pending(job_id) if job_id else []
        if not pending:
            return result(problems or ["the task asked for no approval"], "")
        await anyio.sleep(_QUIET_SECONDS)  # a question would have come by now
        if a.asked:
            asked = str(a.asked[0].get("message", ""))[:120]
            problems.append(f"a server without --approve-in-host asked the host: {asked!r}")
        approved = await ctx.run(ctx.target_argv("approve", str(pending[0]["id"])), timeout_seconds=CALL_SECONDS)
        if approved.returncode != 0:
            problems.append(f"`approve` exited {approved.returncode}: {tail(approved.stderr)}")
        job = await a.settled(job_id)
        if json_member(job, "job").get("status") != "done" or "command.result" not in _kinds(job):
            problems.append(f"after `approve` the job is {json_member(job, 'job').get('status')} without its command")
    return result(problems, "nothing asked without --approve-in-host; the terminal decided")


# --- the approval page (URL mode) ----------------------------------------------------------


async def _http(url: str, method: str, *, origin: str | None = None, body: bytes = b"") -> tuple[int, str]:
    """One HTTP/1.1 exchange with the approval page: ``(status, body text)``."""
    parts = urlsplit(url)
    lines = [f"{method} {parts.path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if method == "POST":
        lines += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    data = bytearray()
    with anyio.fail_after(CALL_SECONDS):
        async with await anyio.connect_tcp(parts.hostname or "127.0.0.1", parts.port or 80) as stream:
            await stream.send(raw)
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while True:
                    data.extend(await stream.receive())
    head, _, text = bytes(data).partition(b"\r\n\r\n")
    match = re.match(rb"HTTP/1\.1 (\d{3})", head)
    return (int(match.group(1)) if match else 0), text.decode("utf-8", "replace")


@check("host_approvals:page_refusals", covers=["SRV-30", "SRV-29"], timeout_seconds=180)
async def page_refusals(ctx: Context) -> CheckResult:
    """The approval page: reuse, a wrong token and other Origins are refused; its own form approves once."""
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    problems: list[str] = []

    async def opened(_params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept"}  # the person opened the page; the page decides

    async with host(ctx, ("--allow-write", "--approve-in-host"), _URL_ONLY, opened) as a:
        job_id = await _delegate(a, ONCE, problems)
        if not job_id or not await _wait_asked(a):
            return result(problems or [f"no URL elicitation reached the client; stderr: {tail(a.stderr)}"], "")
        params = a.asked[0]
        url = str(params.get("url", ""))
        parts = urlsplit(url)
        if params.get("mode") != "url" or parts.scheme != "http" or parts.hostname != "127.0.0.1":
            return result([f"the question is not a loopback URL elicitation: {json.dumps(params)[:300]}"], "")
        token = parts.path.rsplit("/", 1)[-1]
        origin = f"{parts.scheme}://{parts.netloc}"
        status, page = await _http(url, "GET")
        if status != 200 or all(f"<code>{a}</code>" not in page for a in ARGV[:1]) or str(ctx.project) not in page:
            problems.append(f"the page (status {status}) does not show the argv and folder: {page[:200]!r}")
        refusals = {
            "another Origin": await _http(url, "POST", origin="http://example.com", body=b"decision=approve"),
            "no Origin": await _http(url, "POST", body=b"decision=approve"),
            "a wrong token": await _http(
                url.replace(token, token[:-4] + ("aaaa" if not token.endswith("aaaa") else "bbbb")),
                "POST",
                origin=origin,
                body=b"decision=approve",
            ),
        }
        for why, (got, _) in refusals.items():
            if got < 400:
                problems.append(f"a POST with {why} was answered {got}")
        if not (await a.job(job_id)).get("pending_approvals"):
            problems.append("the approval is no longer pending after the refused posts")
        approved, text = await _http(url, "POST", origin=origin, body=b"decision=approve")
        if approved != 200 or "Approved" not in text:
            problems.append(f"the page's own approve was answered {approved}: {text[:200]!r}")
        reused, _ = await _http(url, "POST", origin=origin, body=b"decision=deny")
        if reused != 410:
            problems.append(f"using the link again was answered {reused}, not 410")
        job = await a.settled(job_id)
        if json_member(job, "job").get("status") != "done" or "command.result" not in _kinds(job):
            problems.append(f"after the page approved, the job is {json_member(job, 'job').get('status')}")
        listing = json.dumps(job) + json.dumps((await a.call("shadow_jobs", {"action": "list"}))[1])
        if token in listing:
            problems.append("the page's token appears in a tool result")
    return result(problems, "the page refused another Origin, no Origin, a wrong token and reuse; its form approved")
