"""Session boot, seen from outside: servers start in the background, lazy ones only when needed (CW-10).

Covers CW-10.

* ``session_boot:lazy_and_background``: through the command line only, three definitions of
  ``fixtures/servers/hostile_server.py``, each started through ``/bin/sh`` that first appends to
  a flag file of its own: ``eager`` (``slow_list 2``: it takes two seconds to list its tools),
  ``heavy`` (``"lazy": true``, never needed) and ``needed`` (``"lazy": true``, called once). One
  Build task lists the servers, calls ``needed``'s ``echo`` after an exact approval, asks for
  ``eager``'s tool list and lists the servers again. The first model request must go out before
  ``eager`` is connected (``mcp.connected`` after the first ``model.request``); the first listing
  must say ``eager`` is ``connecting`` and both lazy servers ``not connected``; ``needed`` must
  start only for its call (``mcp.connecting`` with reason ``needed``); ``heavy`` must never start
  (no flag file, no ``mcp.connecting``); the last listing must say ``connected`` for ``eager`` and
  ``needed`` and ``not connected`` for ``heavy``; no server process may remain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shadowcode_conformance.checks.external_helpers import outcome, run_project_task, tool_results
from shadowcode_conformance.checks.external_servers import add_model, register_server, tool_turns, trust_workspace
from shadowcode_conformance.context import Context
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["lazy_and_background"]


def _flagged(ctx: Context, flag: Path, *args: str) -> list[str]:
    hostile = ctx.repo_root / "fixtures/servers/hostile_server.py"
    return ["/bin/sh", "-c", f'echo started >> "{flag}"; exec "$0" "$@"', helper_python(), str(hostile), *args]


def _states(summary: str, problems: list[str]) -> dict[str, tuple[Any, Any]]:
    try:
        return {s["server"]: (s.get("state"), s.get("lazy")) for s in json.loads(summary)["servers"]}
    except (ValueError, KeyError, TypeError):
        problems.append(f"cannot read the mcp_tools listing: {summary[:200]}")
        return {}


@check("session_boot:lazy_and_background", covers=["CW-10"], timeout_seconds=240)
async def lazy_and_background(ctx: Context) -> CheckResult:
    """Servers boot in the background without holding the first request; lazy ones start only when needed."""
    problems: list[str] = []
    flags = {name: ctx.scratch / f"{name}.flag" for name in ("eager", "heavy", "needed")}
    definitions = {
        "eager": {"command": _flagged(ctx, flags["eager"], "slow_list", "2")},
        "heavy": {"command": _flagged(ctx, flags["heavy"], "plain"), "lazy": True},
        "needed": {"command": _flagged(ctx, flags["needed"], "plain"), "lazy": True},
    }
    calls: list[tuple[str, dict[str, Any]]] = [
        ("mcp_tools", {}),
        ("mcp_call", {"server": "needed", "tool": "echo", "arguments": {"text": "on demand"}}),
        ("mcp_tools", {"server": "eager"}),
        ("mcp_tools", {}),
    ]
    ids: dict[str, str] = {}
    try:
        await trust_workspace(ctx, ctx.project)
        for name, doc in definitions.items():
            found = await register_server(ctx, {"name": name} | doc, ctx.project, problems)
            if found is not None:
                ids[name] = found
        await add_model(ctx, [{"match": "boot", "turns": tool_turns(*calls)}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    if len(ids) != len(definitions):
        return outcome(problems, "")
    expected = [("mcp_call", {"server": ids["needed"], "tool": "echo", "arguments": {"text": "on demand"}})]
    _, events = await run_project_task(ctx, "boot the servers", expected, problems)
    kinds = [e["kind"] for e in events]
    eager_connected = [
        i for i, e in enumerate(events) if e["kind"] == "mcp.connected" and e["data"]["server"] == ids["eager"]
    ]
    if "model.request" not in kinds or not eager_connected or eager_connected[0] < kinds.index("model.request"):
        problems.append("the first model request waited for eager's start (or eager never connected)")
    connecting = sorted((e["data"]["server"], e["data"]["reason"]) for e in events if e["kind"] == "mcp.connecting")
    if connecting != sorted([(ids["eager"], "boot"), (ids["needed"], "needed")]):
        problems.append(f"expected eager started at boot and needed on demand, got {connecting}")
    if flags["heavy"].exists():
        problems.append("the lazy server no task needed was started")
    if not flags["eager"].exists() or not flags["needed"].exists():
        problems.append("eager or needed never started")
    results = tool_results(events)
    if len(results) != 4:
        return outcome(problems + [f"{len(results)} tool results for 4 calls"], "")
    first, last = _states(results[0][1], problems), _states(results[3][1], problems)
    want_first = {"eager": ("connecting", False), "heavy": ("not connected", True), "needed": ("not connected", True)}
    want_last = {"eager": ("connected", False), "heavy": ("not connected", True), "needed": ("connected", True)}
    if first != want_first:
        problems.append(f"first listing: expected {want_first}, got {first}")
    if last != want_last:
        problems.append(f"last listing: expected {want_last}, got {last}")
    if not results[1][0] or "on demand" not in results[1][1]:
        problems.append(f"the lazy server's call did not answer: {results[1][1][:200]}")
    if not results[2][0] or '"echo"' not in results[2][1]:
        problems.append(f"eager's tool list was not given once it connected: {results[2][1][:200]}")
    return outcome(problems, "first request not held; lazy server started only for its call; the unneeded one never")
