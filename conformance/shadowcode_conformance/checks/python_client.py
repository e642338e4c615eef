"""The official Python MCP SDK client against the target, once per protocol era.

``mode="auto"`` must negotiate the 2026-07-28 revision (server/discover, no handshake);
``mode="legacy"`` uses ``initialize`` and lands on a handshake revision. Each session does
discovery (tools, resources, prompts), reads every resource, gets both prompts and calls
``shadow_status`` (SRV-03, SRV-04, SRV-05, SRV-06, SRV-20). Its ``engine.mode`` must match
the run: ``attached`` when the runner started the profile's engine first (``--attached``),
``temporary`` otherwise, which shows the session really took that path (ENG-03).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent, Tool

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.json_values import json_object
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["EXPECTED_TOOLS", "EXPECTED_RESOURCES", "auto_mode", "legacy_mode"]

EXPECTED_TOOLS = frozenset(
    {
        "shadow_status",
        "shadow_models",
        "shadow_sessions",
        "shadow_review",
        "shadow_tools",
        "shadow_understand",
        "shadow_doctor",
        "shadow_why",
        "shadow_memory",
        "shadow_sqlite",
        "shadow_goal",
        "shadow_run",
        "shadow_jobs",
        "shadow_approve",
        "shadow_test",
        "shadow_checkpoint",
        "shadow_rollback",
    }
)
"""The seventeen tool names (SRV-04)."""

EXPECTED_RESOURCES = ("shadow://project", "shadow://sessions", "shadow://memory", "shadow://plan")
"""The four resource URIs (SRV-05)."""

_PAGES_MAX = 8
_CALL_TIMEOUT_SECONDS = 30.0


class _Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


_P = TypeVar("_P", bound=_Page)
_T = TypeVar("_T")


async def _walk(fetch: Callable[..., Awaitable[_P]], listed: Callable[[_P], Sequence[_T]]) -> list[_T]:
    """Collect a paginated listing (at most ``_PAGES_MAX`` pages); ``listed`` picks a page's items."""
    items: list[_T] = []
    cursor: str | None = None
    for _ in range(_PAGES_MAX):
        page = await fetch(cursor=cursor)
        items.extend(listed(page))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _check_tools(tools: list[Tool], problems: list[str]) -> None:
    names = [t.name for t in tools]
    if sorted(names) != sorted(EXPECTED_TOOLS):
        missing = sorted(EXPECTED_TOOLS - set(names))
        extra = sorted(set(names) - EXPECTED_TOOLS)
        problems.append(f"tools differ from the seventeen (missing {missing}, extra {extra}, count {len(names)})")
    for t in tools:
        if not (t.description or "").strip():
            problems.append(f"{t.name} has no description")
        if t.input_schema.get("type") != "object":
            problems.append(f"{t.name} input schema is not a JSON object schema")
        if t.annotations is None:
            problems.append(f"{t.name} has no annotations")
        if (t.output_schema or {}).get("type") != "object":
            problems.append(f"{t.name} declares no outputSchema with an object root for its structuredContent")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


async def _check_resources(client: Client, problems: list[str]) -> None:
    resources = await _walk(client.list_resources, lambda page: page.resources)
    uris = sorted(str(r.uri) for r in resources)
    if sorted(EXPECTED_RESOURCES) != uris:
        problems.append(f"resources are {uris}, expected {sorted(EXPECTED_RESOURCES)}")
    for uri in EXPECTED_RESOURCES:
        result = await client.read_resource(uri)
        texts = [getattr(c, "text", None) for c in result.contents]
        if not texts or texts[0] is None:
            problems.append(f"{uri} returned no text content")
            continue
        try:
            value = json.loads(texts[0])
        except ValueError:
            problems.append(f"{uri} text is not JSON: {texts[0][:80]!r}")
            continue
        if uri == "shadow://plan" and value is not None:
            problems.append(f"{uri} should read null in a fresh project, got {texts[0][:80]!r}")
        if uri != "shadow://plan" and not isinstance(value, (dict, list)):
            problems.append(f"{uri} JSON is a {type(value).__name__}, expected an object or array")


async def _check_prompts(client: Client, problems: list[str]) -> None:
    prompts = {p.name: p for p in await _walk(client.list_prompts, lambda page: page.prompts)}
    if sorted(prompts) != ["delegate", "understand"]:
        problems.append(f"prompts are {sorted(prompts)}, expected ['delegate', 'understand']")
        return
    delegate_args = {a.name: a for a in prompts["delegate"].arguments or []}
    if "task" not in delegate_args or not delegate_args["task"].required:
        problems.append("prompt delegate lacks a required 'task' argument")
    if prompts["understand"].arguments:
        problems.append("prompt understand should take no arguments")
    got = await client.get_prompt("delegate", {"task": "list the modules"})
    if not got.messages:
        problems.append("prompt delegate returned no messages")
    got = await client.get_prompt("understand")
    if not got.messages:
        problems.append("prompt understand returned no messages")


async def _check_status(client: Client, ctx: Context, problems: list[str]) -> None:
    result = await client.call_tool("shadow_status", {}, read_timeout_seconds=_CALL_TIMEOUT_SECONDS)
    if result.is_error:
        problems.append(f"shadow_status returned isError: {result.content!r:.200}")
        return
    sc = json_object(result.structured_content)
    if sc is None:
        problems.append("shadow_status has no structuredContent object")
        return
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    if len(texts) != 1 or not texts[0].strip():
        problems.append(f"shadow_status has {len(texts)} text blocks, expected 1 short summary")
    elif _is_json(texts[0]):
        problems.append("shadow_status text block repeats the JSON of structuredContent instead of summarizing it")
    for key in ("project", "profile", "engine", "server", "version"):
        if key not in sc:
            problems.append(f"shadow_status lacks {key!r}")
    project = json_object(sc.get("project"))
    if project is not None and project.get("path") != str(ctx.project):
        problems.append(f"shadow_status project.path is {project.get('path')!r}, expected {str(ctx.project)!r}")
    server = json_object(sc.get("server"))
    if server is not None and server.get("allow_write") is not False:
        problems.append("shadow_status server.allow_write should be false without --allow-write")
    engine = sc.get("engine")
    mode = found.get("mode") if (found := json_object(engine)) is not None else engine
    if mode != ctx.engine.value:
        problems.append(f"shadow_status engine.mode is {mode!r}, expected {ctx.engine.value!r} in this run")


async def _session(ctx: Context, mode: str) -> CheckResult:
    label = f"python_client:{mode}"
    errlog_path = ctx.scratch / f"stderr-{mode}.log"
    argv = ctx.serve_argv()
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=ctx.env, cwd=ctx.cwd)
    problems: list[str] = []
    revision = ""
    with errlog_path.open("w", encoding="utf-8") as errlog:
        try:
            transport = stdio_client(params, errlog=errlog)
            async with Client(transport, mode=mode, cache=None, read_timeout_seconds=_CALL_TIMEOUT_SECONDS) as client:
                revision = client.protocol_version
                ctx.record_revision(label, revision)
                _check_tools(await _walk(client.list_tools, lambda page: page.tools), problems)
                await _check_resources(client, problems)
                await _check_prompts(client, problems)
                await _check_status(client, ctx, problems)
        except Exception as exc:  # any client failure is a finding about the target
            problems.append(f"session failed: {type(exc).__name__}: {exc}")
    if mode == "auto" and revision and revision != MODERN_REVISION:
        problems.append(f"mode=auto negotiated {revision}, expected {MODERN_REVISION}")
    if mode == "legacy" and revision and revision not in LEGACY_REVISIONS:
        problems.append(f"mode=legacy negotiated {revision}, expected one of {', '.join(LEGACY_REVISIONS)}")
    data = {"revision": revision}
    if problems:
        stderr = errlog_path.read_text(encoding="utf-8", errors="replace")
        return CheckResult(
            False, f"[{revision or 'no revision'}] " + "; ".join(problems) + f" (stderr: {tail(stderr)})", data
        )
    summary = "17 tools, 4 resources read, 2 prompts, shadow_status consistent"
    return CheckResult(True, f"[{revision}] {summary}, engine {ctx.engine.value}", data)


@check("python_client:auto", covers=["SRV-03", "SRV-04", "SRV-05", "SRV-06", "SRV-20"], timeout_seconds=90)
async def auto_mode(ctx: Context) -> CheckResult:
    """The SDK's default negotiation reaches 2026-07-28 and the whole surface works (SRV-03)."""
    return await _session(ctx, "auto")


@check("python_client:legacy", covers=["SRV-03", "SRV-04", "SRV-05", "SRV-06", "SRV-20"], timeout_seconds=90)
async def legacy_mode(ctx: Context) -> CheckResult:
    """The initialize handshake reaches a handshake revision and the whole surface works (SRV-03)."""
    return await _session(ctx, "legacy")
