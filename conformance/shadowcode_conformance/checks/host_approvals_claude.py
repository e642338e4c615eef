"""Approvals asked in a real host: the pinned Claude Code, headless, with an ``Elicitation`` hook (SRV-29, SRV-30).

Each check registers the target exactly as ``<target> mcp register --client claude --allow-write
--approve-in-host`` prints it (the project's ``.mcp.json``), in a fresh profile where the sample
project is trusted and the engine's model replays ``conformance hostask once`` (a Build task
that runs ``python3 -c print('asked in the host')``). Claude Code runs non-interactively
(``claude -p``) against a loopback scripted model (:mod:`shadowcode_conformance.scripted_model`) whose
script delegates that task with ``shadow_run`` and then follows it with ``shadow_jobs`` until it
finishes, with the profile's headless engine running (the check starts it), so the session is
relayed into it and answers Claude Code's first requests at once: how fast a server that has to
start first lists its tools is ``hosts:claude_first_turn``'s question, not this check's.
Claude Code 2.1.332 speaks 2026-07-28 to the server but a ``-p`` run does not declare
the Tasks extension (its MCP tasks are for the interactive entrypoint), so the server asks
within the ``shadow_jobs`` call: an ``input_required`` result carrying the elicitation and the
engine-signed ``requestState``, which Claude Code answers and repeats the call with. A ``-p``
run shows no dialog; its ``Elicitation`` hook, given with ``--settings``, answers instead: it
receives ``{"hook_event_name": "Elicitation", "mcp_server_name", "message", "mode", "url",
"elicitation_id", "requested_schema", ...}`` on stdin and prints ``{"hookSpecificOutput":
{"hookEventName": "Elicitation", "action": ..., "content": ...}}`` (read from Claude Code
2.1.332's own hook runner). The hook logs what it received.

* ``claude_hook_accepts``: the hook accepts; it must have been asked once, with the exact
  argv and folder, and the command must have run (its output in the job's events).
* ``claude_hook_declines``: the hook declines; the command never starts, and the job's
  events say the approval was denied and the job's model was told so.
* ``claude_page_token_kept_from_the_model``: with ``--approval-page`` the hook gets the
  approval page's link, opens it and posts Approve with the page's own Origin, as a person's
  browser does; the command runs, and no request Claude Code sent to the model holds the
  page's token.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shadowcode_conformance.checks.delegation import configure_model
from shadowcode_conformance.checks.hosts import claude_print, is_main_loop, is_messages
from shadowcode_conformance.checks.registration import failed, host_bin, missing_host, register
from shadowcode_conformance.context import Context
from shadowcode_conformance.engine import headless_engine
from shadowcode_conformance.json_values import json_member, json_object, json_objects
from shadowcode_conformance.processes import Completed, run_command, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.scripted_model import ModelRequest, Reply, messages_reply, scripted_model

__all__ = ["claude_hook_accepts", "claude_hook_declines", "claude_page_token_kept_from_the_model"]

_NAME = "shadowcode"
_PROMPT = "Delegate the conformance hostask task to ShadowCode and report how it ended."
_TASK = "conformance hostask once"
_ARGV = ["python3", "-c", "print('asked in the host')"]
_OUTPUT = "asked in the host"
_POLLS_MAX = 400
_HOST_RUN_SECONDS = 240.0
_JOB = re.compile(r"task_[0-9a-f]{16}")
_FINISHED = ("done", "failed", "cancelled", "interrupted")

_HOOK = r'''
import json, sys, urllib.parse, urllib.request
answer, log = sys.argv[1], sys.argv[2]
event = json.load(sys.stdin)
record = {"event": event}
if answer == "page" and event.get("mode") == "url":
    url = event["url"]
    parts = urllib.parse.urlsplit(url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=20) as page:
        record["page"] = [page.status, page.read().decode("utf-8", "replace")]
    form = urllib.request.Request(url, data=b"decision=approve", method="POST", headers={
        "Origin": f"{parts.scheme}://{parts.netloc}", "Content-Type": "application/x-www-form-urlencoded"})
    with opener.open(form, timeout=20) as posted:
        record["posted"] = [posted.status, posted.read().decode("utf-8", "replace")]
with open(log, "a", encoding="utf-8") as out:
    out.write(json.dumps(record) + "\n")
action = "decline" if answer == "decline" else "accept"
content = {"approve": True} if answer == "accept" else {}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": action, "content": content}}))
'''


def _tool_results(body: object) -> dict[str, str]:
    """Tool results of the conversation so far: ``tool_use_id`` to text."""
    found: dict[str, str] = {}
    for message in json_objects((json_object(body) or {}).get("messages")):
        for block in json_objects(message.get("content")):
            if block.get("type") == "tool_result":
                inner = block.get("content")
                text = inner if isinstance(inner, str) else json.dumps(inner)
                found[str(block.get("tool_use_id"))] = text
    return found


class _Script:
    """Delegate the task with ``shadow_run``, then follow it with ``shadow_jobs`` until it finished."""

    def __init__(self) -> None:
        self.polls = 0

    def answer(self, request: ModelRequest, index: int) -> Reply:
        if not is_messages(request):
            if request.method == "POST" and request.path.split("?")[0] == "/v1/messages/count_tokens":
                return Reply(200, "application/json", b'{"input_tokens": 1}')
            return Reply(404, "application/json", b'{"error": "not found"}')
        if not is_main_loop(request):
            return messages_reply(request, f"msg_{index}", [{"type": "text", "text": "ShadowCode"}])
        results = _tool_results(request.body)
        if "call_run" not in results:
            run = {"prompt": _TASK, "permission_level": "workspace"}
            use = {"type": "tool_use", "id": "call_run", "name": f"mcp__{_NAME}__shadow_run", "input": run}
            return messages_reply(request, f"msg_{index}", [use])
        job = _JOB.search(results["call_run"])
        latest = results.get(f"call_jobs_{self.polls}", results["call_run"])
        finished = any(re.search(rf"\b{s}\b", latest) for s in _FINISHED)
        if job is None or (self.polls and finished) or self.polls >= _POLLS_MAX:
            return messages_reply(request, f"msg_{index}", [{"type": "text", "text": "The delegated task ended."}])
        self.polls += 1
        use = {
            "type": "tool_use",
            "id": f"call_jobs_{self.polls}",
            "name": f"mcp__{_NAME}__shadow_jobs",
            "input": {"action": "get", "job_id": job.group()},
        }
        return messages_reply(request, f"msg_{index}", [use])


def _logged(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


async def _job(ctx: Context) -> dict[str, Any]:
    """The profile's one job with its events, as ``<target> --json jobs`` shows it ({} when none)."""
    listed = await ctx.run(ctx.target_argv("--json", "jobs"), timeout_seconds=30)
    try:
        found = json.loads(listed.stdout)
        jobs = listing.get("jobs", found) if (listing := json_object(found)) is not None else found
        job_id = str(jobs[0]["id"])
        shown = await ctx.run(ctx.target_argv("--json", "jobs", job_id), timeout_seconds=30)
        doc = json.loads(shown.stdout)
    except (ValueError, KeyError, IndexError, TypeError):
        return {}
    return json_object(doc) or {}


def _events(job: dict[str, Any]) -> list[dict[str, Any]]:
    return json_objects(job.get("events"))


def _status(job: dict[str, Any]) -> str:
    inner = found if (found := json_object(job.get("job"))) is not None else job
    return str(inner.get("status", "?"))


async def _run_claude(
    ctx: Context, answer: str, *flags: str
) -> tuple[Completed | CheckResult, list[ModelRequest], Path]:
    """Register with ``flags`` and run ``claude -p`` with the hook answering ``answer``.

    Returns:
        The run (or the check's failure before it), the model's requests and the hook's log file.
    """
    claude = host_bin(ctx, "claude")
    if claude is None:
        return missing_host("claude"), [], Path()
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem), [], Path()
    done, problem = await register(ctx, "--client", "claude", "--allow-write", "--approve-in-host", *flags)
    if problem:
        return CheckResult(False, problem), [], Path()
    (ctx.project / ".mcp.json").write_bytes(done.stdout)
    hook = ctx.scratch / "elicitation_hook.py"
    hook.write_text(_HOOK, encoding="utf-8")
    log = ctx.scratch / "elicitation-hook.jsonl"
    command = shlex.join([sys.executable, str(hook), answer, str(log)])
    settings = {"hooks": {"Elicitation": [{"matcher": _NAME, "hooks": [{"type": "command", "command": command}]}]}}
    script = _Script()
    problems: list[str] = []
    async with headless_engine(ctx, problems) as engine, scripted_model(script.answer) as model:
        if engine is None:
            return CheckResult(False, "; ".join(problems) or "the headless engine did not start"), [], Path()
        tools = f"mcp__{_NAME}__shadow_run,mcp__{_NAME}__shadow_jobs"
        argv, env = claude_print(ctx, claude, model.url, _PROMPT, tools, "--settings", json.dumps(settings))
        run = await run_command(
            argv, env=env, cwd=ctx.project, timeout_seconds=max(1.0, min(_HOST_RUN_SECONDS, ctx.remaining() - 10.0))
        )
    return run, list(model.requests), log


def _asked_the_action(ctx: Context, entries: Iterable[dict[str, Any]], problems: list[str]) -> dict[str, Any]:
    events = [json_member(e, "event") for e in entries]
    if len(events) != 1:
        problems.append(f"the Elicitation hook ran {len(events)} times for one approval")
    event = events[0] if events else {}
    message = str(event.get("message", ""))
    if event and (json.dumps(_ARGV) not in message or f"in folder: {ctx.project}" not in message):
        problems.append(f"the question the hook received does not name the exact argv and folder: {message[:300]!r}")
    if event and event.get("mcp_server_name") != _NAME:
        problems.append(f"the hook was asked for server {event.get('mcp_server_name')!r}")
    return event


def _ran(job: dict[str, Any], problems: list[str], how: str) -> None:
    outputs = [str(json_member(e, "data").get("output", "")) for e in _events(job) if e.get("kind") == "command.result"]
    if _status(job) != "done" or len(outputs) != 1 or _OUTPUT not in outputs[0]:
        problems.append(f"after {how} the job is {_status(job)} and its command results are {outputs}")


def _verdict(problems: list[str], run: Completed, passed: str) -> CheckResult:
    if not problems and (failure := failed("claude -p", run)):
        problems.append(failure)
    detail = "; ".join(problems[:4]) if problems else passed
    if problems:
        detail += f" (claude stderr: {tail(run.stderr)})"
    return CheckResult(not problems, detail)


@check("host_approvals_claude:claude_hook_accepts", covers=["SRV-29"], timeout_seconds=360, own_engine=True)
async def claude_hook_accepts(ctx: Context) -> CheckResult:
    """Claude Code's Elicitation hook is asked the exact argv and folder; its accept runs the command."""
    started = time.monotonic()
    run, _, log = await _run_claude(ctx, "accept")
    if isinstance(run, CheckResult):
        return run
    problems: list[str] = []
    _asked_the_action(ctx, _logged(log), problems)
    _ran(await _job(ctx), problems, "the hook accepted")
    return _verdict(problems, run, f"the hook was asked the exact argv and folder, accepted, and the command ran "
                    f"({time.monotonic() - started:.0f} s)")  # fmt: skip


@check("host_approvals_claude:claude_hook_declines", covers=["SRV-29"], timeout_seconds=360, own_engine=True)
async def claude_hook_declines(ctx: Context) -> CheckResult:
    """A declining Elicitation hook denies the command; the job says so."""
    run, _, log = await _run_claude(ctx, "decline")
    if isinstance(run, CheckResult):
        return run
    problems: list[str] = []
    _asked_the_action(ctx, _logged(log), problems)
    job = await _job(ctx)
    events = _events(job)
    resolved = [json_member(e, "data").get("status") for e in events if e.get("kind") == "approval.resolved"]
    if resolved != ["denied"] or any(e.get("kind") == "command.started" for e in events):
        kinds = [e.get("kind") for e in events]
        problems.append(f"after the hook declined, the approval reads {resolved} and the events are {kinds}")
    if "did not approve" not in json.dumps(events):
        problems.append("the job's events do not say the command was not approved")
    return _verdict(problems, run, "the hook declined; the command never started and the job says it was denied")


@check(
    "host_approvals_claude:claude_page_token_kept_from_the_model",
    covers=["SRV-30", "SRV-29"],
    timeout_seconds=360,
    own_engine=True,
)
async def claude_page_token_kept_from_the_model(ctx: Context) -> CheckResult:
    """With --approval-page the hook opens the page and approves; no model request holds the page's token."""
    run, requests, log = await _run_claude(ctx, "page", "--approval-page")
    if isinstance(run, CheckResult):
        return run
    problems: list[str] = []
    entries = _logged(log)
    event = _asked_the_action(ctx, entries, problems)
    url = str(event.get("url") or "")
    if event.get("mode") != "url" or not url.startswith("http://127.0.0.1:"):
        problems.append(f"the hook was not handed a loopback approval page (mode {event.get('mode')!r}, url {url!r})")
    else:
        posted = entries[0].get("posted") or [0, ""]
        if posted[0] != 200:
            problems.append(f"the page answered the hook's Approve with {posted[0]}: {str(posted[1])[:200]!r}")
        token = url.rsplit("/", 1)[-1]
        leaked = [r.path for r in requests if token in json.dumps(r.body)]
        if len(token) < 32 or leaked:
            problems.append(f"the page's token reached the model in {len(leaked)} request(s)")
    _ran(await _job(ctx), problems, "the page approved")
    return _verdict(problems, run, f"the page approved through the hook; none of {len(requests)} model requests "
                    "holds its token")  # fmt: skip
