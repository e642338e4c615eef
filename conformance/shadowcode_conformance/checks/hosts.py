"""Real hosts on their first turn: the pinned Codex and Claude Code against a scripted model (REG-08, REG-01).

Each check registers the target exactly as ``<target> mcp register --client ...`` prints it,
in a fresh profile (the check's ``SHADOWCODE_HOME``) where the sample project was trusted
beforehand, then runs the host non-interactively against a loopback model endpoint that
answers from a script (:mod:`shadowcode_conformance.scripted_model`):

1. the model's first request must already offer ShadowCode's seventeen tools (hosts start
   their MCP servers and list their tools before they first ask the model; a server that
   answers ``tools/list`` late is left out of that request);
2. the scripted model answers it with a call to ``shadow_status``;
3. a later request must carry that call's result, and the result must show the project
   trusted in the check's profile: the server the host started opened the profile named by
   the snippet (its ``env`` table carries ``SHADOWCODE_HOME``; the host is run without it),
   and its ``engine.mode`` must be the run's (``attached`` with ``--attached``: the session
   went through the relay into the headless engine).

Codex (``codex exec``) reads the printed TOML section from ``$CODEX_HOME/config.toml``, with a
``[model_providers.scripted]`` section (``wire_api = "responses"``, ``requires_openai_auth =
false``, no retries) pointing it at the endpoint. It offers an MCP server's tools in a
``namespace`` tool named ``mcp__<server>`` (older versions: functions named
``mcp__<server>__<tool>``); the script calls whichever form it was offered.

Claude Code (``claude -p``) finds the printed document as the project's ``.mcp.json`` (a
``-p`` run starts project servers without asking), with ``ANTHROPIC_BASE_URL`` pointing at
the endpoint and a placeholder ``ANTHROPIC_API_KEY``. By default it defers MCP tools: the
first request names them in its list of deferred tools rather than carrying their schemas;
either form counts as offered (the detail says which). A ``-p`` run cannot ask for
permission, so ``--allowedTools mcp__shadowcode__shadow_status`` grants the one call.
docs/conformance.md says what was measured.

Both hosts run with every proxy variable pointing at a closed loopback port (loopback
addresses excepted), so nothing they try beyond the endpoint leaves the machine.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from shadowcode_conformance.checks.python_client import EXPECTED_TOOLS
from shadowcode_conformance.checks.registration import (
    codex_section,
    failed,
    host_bin,
    host_env,
    missing_host,
    register,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_array, json_member, json_object, json_objects
from shadowcode_conformance.processes import Completed, run_command, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.scripted_model import ModelRequest, Reply, messages_reply, responses_reply, scripted_model

__all__ = ["claude_first_turn", "codex_first_turn"]

_NAME = "shadowcode"
_TOOL = "shadow_status"
_CALL_ID = "call_shadow_status"
_PROMPT = "Report the status of ShadowCode for this project."
_FINAL = "ShadowCode answered."
_HOST_RUN_SECONDS = 150.0
_HOST_ATTEMPTS = 3
"""Host runs a check makes at most while the first request comes out without the tools."""
_ATTEMPT_RESERVE_SECONDS = 60.0
_CLOSED_PORT_PROXY = "http://127.0.0.1:9"
OFFLINE = {
    "HTTP_PROXY": _CLOSED_PORT_PROXY,
    "HTTPS_PROXY": _CLOSED_PORT_PROXY,
    "ALL_PROXY": _CLOSED_PORT_PROXY,
    "http_proxy": _CLOSED_PORT_PROXY,
    "https_proxy": _CLOSED_PORT_PROXY,
    "all_proxy": _CLOSED_PORT_PROXY,
    "NO_PROXY": "127.0.0.1,localhost,::1",
    "no_proxy": "127.0.0.1,localhost,::1",
}
"""Proxy variables that send anything but loopback traffic to a closed port."""

_NOT_FOUND = Reply(404, "application/json", b'{"error": "not found"}')


def claude_print(
    ctx: Context, claude: Path, model_url: str, prompt: str, tools: str, *options: str
) -> tuple[list[str], dict[str, str]]:
    """``claude -p PROMPT --allowedTools TOOLS OPTIONS --output-format stream-json --verbose`` and its
    environment: the scripted model at ``model_url`` with a placeholder key, no traffic but
    loopback (``OFFLINE``), and no ``SHADOWCODE_HOME`` (only the registered entry's env may carry
    the profile).

    Returns:
        ``(argv, env)``.
    """
    env = host_env(ctx, ANTHROPIC_BASE_URL=model_url, ANTHROPIC_API_KEY="sk-ant-scripted", **OFFLINE)
    env.pop("SHADOWCODE_HOME", None)
    argv = [str(claude), "-p", prompt, "--allowedTools", tools, *options, "--output-format", "stream-json", "--verbose"]
    return argv, env


# --- what the model saw -----------------------------------------------------------------


def _text_of(output: object) -> str:
    """A tool result's text: a string as is, content blocks joined."""
    if isinstance(output, str):
        return output
    if (parts := json_array(output)) is not None:
        blocks = [(block.get("text") if (block := json_object(part)) is not None else part) for part in parts]
        return "\n".join(_text_of(block) for block in blocks)
    return ""


_SUMMARY = re.compile(
    r"Project (?P<path>.+?) \((?:trusted at (?P<level>\w+)|(?P<untrusted>untrusted))\); "
    r"profile (?P<profile>\S+); engine (?P<mode>\w+);"
)


def _status_in(text: str) -> dict[str, Any] | None:
    """The ``shadow_status`` answer inside a tool result as the model saw it (hosts may prefix a header).

    A host forwards the structured content as JSON, or the text block: the short summary
    ``Project P (trusted at LEVEL); profile NAME; engine MODE; ...`` (SRV-04). Either is read
    into the same shape.
    """
    summary = _SUMMARY.search(text)
    if summary is not None and "{" not in text[: summary.start()]:
        trusted = summary.group("untrusted") is None
        project = {"path": summary.group("path"), "trusted": trusted, "level": summary.group("level")}
        return {"project": project, "profile": summary.group("profile"), "engine": {"mode": summary.group("mode")}}
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        found = json_object(value)
        if found is not None and "project" in found:
            return found
        start = text.find("{", start + 1)
    return None


def _judge_status(ctx: Context, status: dict[str, Any] | None, text: str) -> str | None:
    """A problem sentence unless the status shows the sample project trusted and the run's engine mode, else None."""
    if status is None:
        return f"the {_TOOL} result that reached the model holds no status: {tail(text, 300)!r}"
    project = json_member(status, "project")
    if project.get("trusted") is not True or project.get("path") != str(ctx.project):
        return (
            f"the server the host started does not see the trust given beforehand (profile "
            f"{status.get('profile')!r}, project {project!r}): the registered command lost its profile"
        )
    engine = json_member(status, "engine")
    if engine.get("mode") != ctx.engine.value:
        return f"the server reports engine mode {engine.get('mode')!r}, expected {ctx.engine.value!r} in this run"
    return None


def verdict(
    ctx: Context,
    host: str,
    offered: set[str],
    how: str,
    result_text: str | None,
    run: Completed,
    started: float,
    first_at: float,
) -> CheckResult:
    """The check's result from what the first request offered and what came back of the call."""
    data: dict[str, Any] = {
        "offered": sorted(offered),
        "offered_as": how,
        "first_request_after_seconds": round(first_at - started, 3),
        "host_exit": run.returncode,
    }
    missing = sorted(EXPECTED_TOOLS - offered)
    if missing:
        which = "none" if not offered else f"{len(offered)} (missing: {', '.join(missing)})"
        return CheckResult(
            False,
            f"{host}'s first request offered {which} of ShadowCode's {len(EXPECTED_TOOLS)} tools; it was sent "
            f"{first_at - started:.1f} s after {host} started (a server that lists its tools later than the host "
            f"waits is left out of it)",
            data,
        )
    if result_text is None:
        problem = failed(host, run) or f"{host} exited 0"
        return CheckResult(False, f"no {_TOOL} result reached the model ({problem})", data)
    status = _status_in(result_text)
    data["status"] = status
    problem = _judge_status(ctx, status, result_text)
    if problem:
        return CheckResult(False, problem, data)
    if problem := failed(host, run):
        return CheckResult(False, problem, data)
    project = json_member(status, "project") if status else {}
    return CheckResult(
        True,
        f"{host}'s first request ({first_at - started:.1f} s after start) offered all {len(EXPECTED_TOOLS)} "
        f"ShadowCode tools {how}; the {_TOOL} result reached the model: project trusted at "
        f"{project.get('level')!r} in profile {status.get('profile') if status else None!r}, engine "
        f"{ctx.engine.value}",
        data,
    )


async def _run_host(ctx: Context, argv: list[str], env: Mapping[str, str]) -> Completed:
    """Run the host in the sample project, bounded; its process group is killed when it ends."""
    return await run_command(
        argv, env=env, cwd=ctx.project, timeout_seconds=max(1.0, min(_HOST_RUN_SECONDS, ctx.remaining() - 5.0))
    )


async def first_turn(ctx: Context, attempt: Callable[[], Awaitable[CheckResult]]) -> CheckResult:
    """Run the host up to :data:`_HOST_ATTEMPTS` times while its first request lacks the tools.

    A host waits well under a second for its MCP servers before it first asks the model (Codex
    0.171: 0.5 to 0.8 s, measured). On a machine loaded far past that, one late start-up is the
    machine's; a server that lists its tools late every time fails every attempt. Any other
    failure ends the check at once. The detail says how many runs it took.
    """
    missed: list[float] = []
    while True:
        result = await attempt()
        offered = set(result.data.get("offered") or ())
        if result.ok or offered >= EXPECTED_TOOLS or "offered" not in result.data:
            break
        missed.append(result.data.get("first_request_after_seconds", 0.0))
        if len(missed) >= _HOST_ATTEMPTS or ctx.remaining() < _ATTEMPT_RESERVE_SECONDS:
            break
    if missed:
        result.data["runs_without_the_tools"] = missed
        if result.ok:
            result.detail += (
                f" (on run {len(missed) + 1}; the first request of {len(missed)} earlier run(s) lacked them)"
            )
    return result


# --- Codex --------------------------------------------------------------------------------


def _codex_tools(body: object) -> dict[str, dict[str, str]]:
    """ShadowCode tools a Responses request offers: tool name to how a call names it."""
    found: dict[str, dict[str, str]] = {}
    namespace, prefix = f"mcp__{_NAME}", f"mcp__{_NAME}__"
    for tool in json_objects((json_object(body) or {}).get("tools")):
        name = tool.get("name")
        if tool.get("type") == "namespace" and name in (namespace, prefix):
            for child in json_objects(tool.get("tools")):
                if isinstance(child_name := child.get("name"), str):
                    found[child_name] = {"namespace": str(name), "name": child_name}
        elif tool.get("type") == "function" and isinstance(name, str) and name.startswith(prefix):
            found[name[len(prefix) :]] = {"name": name}
    return found


class _CodexScript:
    """First reply: call ``shadow_status`` the way it was offered; every later one: a final message."""

    def __init__(self) -> None:
        self.called = False

    def answer(self, request: ModelRequest, index: int) -> Reply:
        if request.method != "POST" or not request.path.split("?")[0].endswith("/responses"):
            return _NOT_FOUND
        how = _codex_tools(request.body).get(_TOOL)
        if how is not None and not self.called:
            self.called = True
            call = {"type": "function_call", "call_id": _CALL_ID, "arguments": "{}", **how}
            return responses_reply(f"resp_{index}", [call])
        message = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{index}",
            "content": [{"type": "output_text", "text": _FINAL}],
        }
        return responses_reply(f"resp_{index}", [message])


def _codex_result(requests: Iterable[ModelRequest]) -> str | None:
    """The text of the ``function_call_output`` for the scripted call, from any request."""
    for request in requests:
        for item in json_objects((json_object(request.body) or {}).get("input")):
            if item.get("type") == "function_call_output" and item.get("call_id") == _CALL_ID:
                return _text_of(item.get("output"))
    return None


def _codex_config(url: str, snippet: str) -> str:
    """Codex's config.toml: the scripted model provider, then the printed section verbatim."""
    return (
        'model = "scripted-model"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n\n"
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        "requires_openai_auth = false\n"
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n\n" + snippet
    )


@check("hosts:codex_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=300)
async def codex_first_turn(ctx: Context) -> CheckResult:
    """``codex exec`` with the printed section: ShadowCode's tools in the first request, ``shadow_status`` answered."""
    codex = host_bin(ctx, "codex")
    if codex is None:
        return missing_host("codex")
    if problem := failed("trust", await ctx.trust()):
        return CheckResult(False, problem)
    done, problem = await register(ctx, "--client", "codex")
    if problem:
        return CheckResult(False, problem)
    snippet = done.stdout.decode("utf-8")
    entry, problem = codex_section(snippet)
    if problem:
        return CheckResult(False, problem)
    pinned = json_member(entry, "env").get("SHADOWCODE_HOME")
    if pinned != str(ctx.home):
        return CheckResult(False, f"the section does not pin SHADOWCODE_HOME={str(ctx.home)!r} in its env: {entry!r}")
    runs = 0

    async def attempt() -> CheckResult:
        nonlocal runs
        runs += 1
        codex_home = ctx.scratch / f"codex home {runs}"
        codex_home.mkdir()
        env = host_env(ctx, CODEX_HOME=str(codex_home), **OFFLINE)
        env.pop("SHADOWCODE_HOME", None)  # only the section's env table may carry the profile
        script = _CodexScript()
        async with scripted_model(script.answer) as model:
            (codex_home / "config.toml").write_text(_codex_config(model.url, snippet), encoding="utf-8")
            argv = [str(codex), "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-s", "read-only", _PROMPT]
            started = time.monotonic()
            run = await _run_host(ctx, argv, env)
        turns = [r for r in model.requests if r.method == "POST" and r.path.split("?")[0].endswith("/responses")]
        if not turns:
            return CheckResult(False, f"Codex never asked the model ({failed('codex exec', run) or 'exit 0'})")
        first = _codex_tools(turns[0].body)
        namespaced = any("namespace" in how for how in first.values())
        how = "in the namespace tool mcp__shadowcode" if namespaced else "as mcp__shadowcode__* functions"
        return verdict(ctx, "Codex", set(first), how, _codex_result(turns[1:]), run, started, turns[0].at)

    return await first_turn(ctx, attempt)


# --- Claude Code ----------------------------------------------------------------------------


def _claude_offered(body: object) -> tuple[set[str], str]:
    """ShadowCode tools a Messages request offers, and how: as tool definitions or as deferred names."""
    prefix = f"mcp__{_NAME}__"
    request = json_object(body)
    names = [t.get("name") for t in json_objects((request or {}).get("tools"))]
    defined = {name[len(prefix) :] for name in names if isinstance(name, str) and name.startswith(prefix)}
    if defined:
        return defined, "as tool definitions"
    text = json.dumps(request.get("messages") if request is not None else None)
    named = {tool for tool in EXPECTED_TOOLS if f"{prefix}{tool}" in text}
    return named, "by name in Claude Code's deferred-tools list (schemas load through its ToolSearch)"


def is_messages(request: ModelRequest) -> bool:
    return request.method == "POST" and request.path.split("?")[0] == "/v1/messages"


def is_main_loop(request: ModelRequest) -> bool:
    """A request of the agent's own turn (it offers tools), not a side request such as a title."""
    body = json_object(request.body)
    return is_messages(request) and body is not None and bool(body.get("tools"))


class _ClaudeScript:
    """First main-loop reply: ``tool_use`` of ``shadow_status``; every other reply: text."""

    def __init__(self) -> None:
        self.called = False

    def answer(self, request: ModelRequest, index: int) -> Reply:
        if not is_messages(request):
            if request.method == "POST" and request.path.split("?")[0] == "/v1/messages/count_tokens":
                return Reply(200, "application/json", b'{"input_tokens": 1}')
            return _NOT_FOUND
        if is_main_loop(request) and not self.called and _claude_offered(request.body)[0] >= {_TOOL}:
            self.called = True
            use: dict[str, Any] = {"type": "tool_use", "id": _CALL_ID, "name": f"mcp__{_NAME}__{_TOOL}", "input": {}}
            return messages_reply(request, f"msg_{index}", [use])
        return messages_reply(request, f"msg_{index}", [{"type": "text", "text": _FINAL}])


def _claude_result(requests: Iterable[ModelRequest]) -> str | None:
    """The text of the ``tool_result`` for the scripted call, from any request."""
    for request in requests:
        for message in json_objects((json_object(request.body) or {}).get("messages")):
            for block in json_objects(message.get("content")):
                if block.get("type") == "tool_result" and block.get("tool_use_id") == _CALL_ID:
                    return _text_of(block.get("content"))
    return None


@check("hosts:claude_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=300)
async def claude_first_turn(ctx: Context) -> CheckResult:
    """``claude -p`` with the printed project ``.mcp.json``: tools on turn one, ``shadow_status`` answered."""
    claude = host_bin(ctx, "claude")
    if claude is None:
        return missing_host("claude")
    if problem := failed("trust", await ctx.trust()):
        return CheckResult(False, problem)
    done, problem = await register(ctx, "--client", "claude")
    if problem:
        return CheckResult(False, problem)
    try:
        entry = json.loads(done.stdout.decode("utf-8"))["mcpServers"][_NAME]
    except (ValueError, KeyError, TypeError) as exc:
        return CheckResult(False, f"not a Claude Code .mcp.json snippet: {exc!r}: {tail(done.stdout)}")
    if json_member(entry, "env").get("SHADOWCODE_HOME") != str(ctx.home):
        return CheckResult(False, f"the entry does not pin SHADOWCODE_HOME={str(ctx.home)!r} in its env: {entry!r}")
    (ctx.project / ".mcp.json").write_bytes(done.stdout)  # the project's registration, as printed

    async def attempt() -> CheckResult:
        script = _ClaudeScript()
        async with scripted_model(script.answer) as model:
            argv, env = claude_print(ctx, claude, model.url, _PROMPT, f"mcp__{_NAME}__{_TOOL}")
            started = time.monotonic()
            run = await _run_host(ctx, argv, env)
        turns = [r for r in model.requests if is_main_loop(r)]
        if not turns:
            return CheckResult(False, f"Claude Code never asked the model ({failed('claude -p', run) or 'exit 0'})")
        offered, how = _claude_offered(turns[0].body)
        return verdict(ctx, "Claude Code", offered, how, _claude_result(turns[1:]), run, started, turns[0].at)

    return await first_turn(ctx, attempt)
