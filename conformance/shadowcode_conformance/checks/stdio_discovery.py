"""Modern discovery on stdio, seen from outside: which revision each stdio server negotiates.

Covers CLI-16, CW-03.

The target is driven only through its command line (``trust``, ``mcp enable``, ``--json mcp
validate``). Four stdio servers of both eras (a project enables at most four) are validated
live; each must connect with the revision its era gives:

* the Python SDK server (``fixtures/servers/python_sdk_server.py``) and the hostile fixture in
  ``modern`` mode (which refuses ``initialize``): 2026-07-28 through ``server/discover``;
* ``@modelcontextprotocol/server-everything`` (pinned in ``node_probes/``), which answers the
  probe "method not found", and the hostile fixture that exits when probed: the legacy
  ``initialize`` revision 2025-11-25. The exiting one is started again for ``initialize`` and
  is probed only once.

The other ways of meeting the probe (an error, an unrelated result, silence) are proven by the
unit tests (tests/mcp/client/test_negotiation.py); one project keeps this check short.

The revisions are shown in the check's detail. They are not recorded as protocol revisions of
the run: those are the SRV-03 evidence about the target's own server, and these connections are
the target's client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shadowcode_conformance.checks.external_servers import check_result, cli, enable_server, trust_workspace
from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["stdio_discovery"]

_MODERN = "2026-07-28"
_LEGACY = "2025-11-25"
_PY = helper_python()


def _servers(ctx: Context) -> list[list[tuple[str, list[str], str]]]:
    """Each project's (name, command, expected revision)."""
    hostile = str(ctx.repo_root / "fixtures/servers/hostile_server.py")
    pysdk = str(ctx.repo_root / "fixtures/servers/python_sdk_server.py")
    everything = ctx.repo_root / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    return [
        [
            ("pysdk", [_PY, pysdk], _MODERN),
            ("everything", ["node", str(everything), "stdio"], _LEGACY),
            ("exits-when-probed", [_PY, hostile, "discover_exit"], _LEGACY),
            ("modern", [_PY, hostile, "modern"], _MODERN),
        ],
    ]


async def _validate(ctx: Context, workspace: Path, problems: list[str]) -> dict[str, dict[str, Any]]:
    code, out, err = await cli(ctx, "--json", "mcp", "validate", workspace=workspace)
    if code not in (0, 1):
        problems.append(f"mcp validate exited {code}: {tail(err)}")
        return {}
    try:
        return {str(s["id"]): s for s in json.loads(out)["servers"]}
    except (ValueError, KeyError, TypeError):
        problems.append(f"mcp validate printed no report: {out[:160]!r}")
        return {}


@check("external_servers:stdio_discovery", covers=["CLI-16", "CW-03"], timeout_seconds=360)
async def stdio_discovery(ctx: Context) -> CheckResult:
    """Stdio servers connect at 2026-07-28 when modern and fall back to initialize when legacy."""
    problems: list[str] = []
    everything = ctx.repo_root / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    if not everything.is_file():
        return CheckResult(
            False, f"server-everything is not installed ({everything.relative_to(ctx.repo_root)}); run npm ci"
        )
    seen: dict[str, str] = {}
    for index, servers in enumerate(_servers(ctx)):
        workspace = ctx.scratch / f"discovery-{index}"
        folder = workspace / ".shadowcode/mcp"
        folder.mkdir(parents=True)
        try:
            await trust_workspace(ctx, workspace)
            for name, argv, _ in servers:
                (folder / f"{name}.json").write_text(
                    json.dumps({"name": name, "command": argv, "timeout_sec": 30}), encoding="utf-8"
                )
                await enable_server(ctx, f"project:.shadowcode/mcp/{name}.json", workspace)
        except RuntimeError as exc:
            return CheckResult(False, f"set-up failed: {exc}")
        report = await _validate(ctx, workspace, problems)
        for name, _, expected in servers:
            entry = report.get(f"project:.shadowcode/mcp/{name}.json")
            if entry is None:
                problems.append(f"{name}: not in the validate report")
                continue
            if not entry.get("connected"):
                problems.append(f"{name}: did not connect: {entry.get('error')}")
                continue
            seen[name] = str(entry.get("protocol_version"))
            if seen[name] != expected:
                problems.append(f"{name}: negotiated {seen[name]!r}, expected {expected}")
            if entry.get("cleanup") not in ("exited", "terminated", "killed"):
                problems.append(f"{name}: cleanup was {entry.get('cleanup')!r}")
    probes = ctx.scratch / "discovery-0" / "probes.log"
    exit_probes = probes.read_text(encoding="utf-8").count("discover_exit") if probes.is_file() else 0
    if exit_probes != 1:
        problems.append(f"the server that exits when probed was probed {exit_probes} times, expected once")
    shown = ", ".join(f"{name} {revision}" for name, revision in seen.items())
    return check_result(problems, f"negotiated: {shown}", {"revisions": seen})
