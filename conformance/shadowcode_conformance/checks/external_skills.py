"""Skills served over MCP, seen from outside: the client keeps, refuses and verifies them (CW-09).

Covers CW-09.

* ``external_skills:listed_and_verified``: through the command line only, four definitions of
  ``fixtures/servers/skills_server.py`` (stdio) are enabled: ``good``, ``wrong-digest``,
  ``dotdot`` and ``limits``. One Build task lists every server's resources (``mcp_resources``,
  no approval), reads the ``SKILL.md`` of ``good`` and ``references/FORMS.md`` of
  ``wrong-digest`` after exact approvals, and asks for a file of a kept skill that its entry
  does not list. The task's events must show: ``pdf-processing`` kept on every server but
  ``limits``' ``past-limit`` (513 files) and ``dotdot``'s ``escape`` (a ``..`` path) skipped,
  the dynamic skill skipped, no file read while listing (the fixtures log every read), the
  ``SKILL.md`` read verified, the tampered file refused with none of its content in the task's
  history, and the unlisted file refused before any approval.
* ``official:skills:<scenario>`` (``--official``): the official conformance package's
  ``sep-2640-skills-directory``, ``-enumeration`` and ``-manifest`` server scenarios against the
  fixture over Streamable HTTP (stateful and stateless, each a sub-check), with the package's
  0.2.0-alpha.12 pinned in ``node_probes/`` (``@modelcontextprotocol/conformance-alpha``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import anyio

from shadowcode_conformance.checks.external_helpers import expect_results, outcome, run_project_task, tool_results
from shadowcode_conformance.checks.external_servers import add_model, register_server, tool_turns, trust_workspace
from shadowcode_conformance.context import Context
from shadowcode_conformance.official import Installed, ScenarioRun, failures, installed, run_server_scenario
from shadowcode_conformance.processes import announced_port, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["SKILL_SCENARIOS", "listed_and_verified"]

SKILL_SCENARIOS: Final = ("sep-2640-skills-directory", "sep-2640-skills-enumeration", "sep-2640-skills-manifest")
"""The official package's server scenarios of the Skills extension."""

_PDF = "skill://pdf-processing/SKILL.md"
_FORMS = "skill://pdf-processing/references/FORMS.md"
_VARIANTS = ("good", "wrong-digest", "dotdot", "limits")
_SCENARIO_SECONDS = 120.0


def _fixture(ctx: Context) -> Path:
    return ctx.repo_root / "fixtures/servers/skills_server.py"


@check("external_skills:listed_and_verified", covers=["CW-09"], timeout_seconds=300)
async def listed_and_verified(ctx: Context) -> CheckResult:
    """Skills are listed without reading a file; a verified read passes, a tampered one is refused."""
    problems: list[str] = []
    logs = {v: ctx.scratch / f"reads-{v}.log" for v in _VARIANTS}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("mcp_resources", {}),
        ("mcp_read_resource", {"server": "good", "uri": "skill://pdf-processing/not-listed.md"}),
        ("mcp_read_resource", {"server": "good", "uri": _PDF}),
        ("mcp_read_resource", {"server": "wrong-digest", "uri": _FORMS}),
    ]
    ids: dict[str, str] = {}
    try:
        await trust_workspace(ctx, ctx.project)
        for variant in _VARIANTS:
            argv = [helper_python(), str(_fixture(ctx)), "--variant", variant, "--log", str(logs[variant])]
            found = await register_server(ctx, {"name": variant, "command": argv}, ctx.project, problems)
            if found is not None:
                ids[variant] = found
        await add_model(ctx, [{"match": "skills", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if len(ids) != len(_VARIANTS):
        return outcome(problems, "")
    expected = [
        ("mcp_read_resource", {"server": ids["good"], "uri": _PDF}),
        ("mcp_read_resource", {"server": ids["wrong-digest"], "uri": _FORMS}),
    ]
    _, events = await run_project_task(ctx, "use the skills", expected, problems)
    expect_results(
        tool_results(events),
        [
            (True, '"servers"'),
            (False, "is not one of its listed files; nothing was sent"),
            (True, _PDF),
            (False, "its SHA-256 digest is not the listed one"),
        ],
        problems,
    )
    listed = {e["data"]["server"]: e["data"] for e in events if e["kind"] == "mcp.skills"}
    _listing_problems(ids, listed, problems)
    verified = [e["data"] for e in events if e["kind"] == "mcp.result" and e["data"].get("verified")]
    if [v.get("uri") for v in verified] != [_PDF]:
        problems.append(f"expected exactly the SKILL.md read verified, got {verified}")
    refused = [e["data"] for e in events if e["kind"] == "mcp.skill_refused"]
    if [(r.get("server"), r.get("uri")) for r in refused] != [(ids["wrong-digest"], _FORMS)]:
        problems.append(f"expected the tampered FORMS.md refused, got {refused}")
    if "EVERY field" in json.dumps(events):
        problems.append("the tampered file's content reached the task's history")
    reads = {v: (logs[v].read_text(encoding="utf-8").split() if logs[v].exists() else []) for v in _VARIANTS}
    if reads != {"good": [_PDF], "wrong-digest": [_FORMS], "dotdot": [], "limits": []}:
        problems.append(f"the servers saw other reads than the two approved ones: {reads}")
    return outcome(problems, "skills listed without a read; SKILL.md verified; wrong digest, '..' and 513 refused")


def _listing_problems(ids: dict[str, str], listed: dict[str, Any], problems: list[str]) -> None:
    want = {
        "good": ({_PDF, "skill://acme/billing/refunds/SKILL.md"}, {"skill://reports/daily/SKILL.md": "dynamic"}),
        "dotdot": ({_PDF}, {"skill://escape/SKILL.md": "'..' segment"}),
        "limits": ({_PDF, "skill://at-limit/SKILL.md"}, {"skill://past-limit/SKILL.md": "513 files"}),
    }
    for variant, (kept, skipped) in want.items():
        got = listed.get(ids[variant])
        if got is None:
            problems.append(f"no mcp.skills event for {variant}")
            continue
        kept_uris: list[str] = got.get("kept") or []
        skipped_entries: list[dict[str, Any]] = got.get("skipped") or []
        if not kept <= set(kept_uris):
            problems.append(f"{variant}: expected {sorted(kept)} kept, got {got.get('kept')}")
        reasons = {s.get("uri"): str(s.get("reason")) for s in skipped_entries}
        for uri, reason in skipped.items():
            if uri in kept_uris or reason not in reasons.get(uri, ""):
                problems.append(f"{variant}: expected {uri} skipped for {reason!r}, got {reasons.get(uri)!r}")


def _package(ctx: Context) -> Installed | str:
    """Node 22 and the pinned 0.2.0-alpha.12 package (it has the Skills scenarios), or why not."""
    tool = installed(ctx.repo_root, alpha=True)
    if isinstance(tool, str):
        return tool
    if SKILL_SCENARIOS[0] not in tool.script.read_text(encoding="utf-8", errors="replace"):
        return f"the conformance package {tool.version} in node_probes has no sep-2640 scenarios; run `bash ci/setup`"
    return tool


async def _scenario(ctx: Context, tool: Installed, scenario: str, mode: str) -> SubResult:
    name = f"official:skills:{scenario}:{mode}"
    out = bytearray()
    run: ScenarioRun | None = None
    async with ctx.spawn([helper_python(), str(_fixture(ctx)), mode]) as proc, anyio.create_task_group() as tg:
        port = await announced_port(proc, tg, out)
        if port is None:
            tg.cancel_scope.cancel()
            return SubResult(name, ("CW-09",), False, f"the skills fixture did not start: {tail(out)}")
        url = f"http://127.0.0.1:{port}/mcp"
        run = await run_server_scenario(ctx, tool, url, scenario, _SCENARIO_SECONDS)
        tg.cancel_scope.cancel()
    shutil.rmtree(ctx.scratch / "official" / scenario, ignore_errors=True)  # the next mode's results go there
    if run is None:  # the task group ended the block before the package ran
        return SubResult(name, ("CW-09",), False, f"the conformance package did not run: {tail(out)}")
    judged = run.judged()
    problems = failures(run.checks) + ([] if judged else [f"no check was made: {run.log()}"])
    detail = "; ".join(problems) or f"{len(judged)} package checks SUCCESS"
    return SubResult(name, ("CW-09",), not problems, detail)


def _official(scenario: str) -> Callable[[Context], Awaitable[CheckResult]]:
    async def run(ctx: Context) -> CheckResult:
        tool = _package(ctx)
        if isinstance(tool, str):
            return CheckResult.unavailable(tool)
        subs = [await _scenario(ctx, tool, scenario, mode) for mode in ("http", "http-stateless")]
        ok = all(s.ok for s in subs)
        result = CheckResult(ok, "; ".join(f"{s.name.rsplit(':', 1)[1]}: {s.detail}" for s in subs))
        result.subresults.extend(subs)
        return result

    run.__doc__ = f"The official package's server scenario {scenario!r} against the skills fixture."
    return run


for _name in SKILL_SCENARIOS:
    check(
        f"official:skills:{_name}",
        covers=("CW-09",),
        timeout_seconds=2 * _SCENARIO_SECONDS + 60,
        own_engine=True,
        official=True,
    )(_official(_name))
