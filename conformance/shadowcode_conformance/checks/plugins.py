"""Plugin bundles that contribute MCP servers, seen from outside (CW-12).

Covers CW-12.

* ``plugins:drift_and_revoke``: through the command line only, a bundle holding
  ``fixtures/servers/hostile_server.py`` (as ``server.py``) and a ``plugin.json`` naming one
  stdio server ``echo`` (its environment one exact reference, ``${HOME}``; only the ``echo``
  tool enabled). ``plugin review`` must show the argv inside the bundle, the environment's
  provenance and the filter; ``plugin trust`` must stage it without enabling it (the ``mcp``
  catalog lists ``plugin:plugin-5-notes-echo`` disabled); ``plugin enable`` enables it. One
  Build task calls its ``echo`` twice, each after an exact approval; the bundle is edited while
  the second approval is pending. The first call must answer; the second must be refused for
  drift with nothing sent (one ``mcp.call`` event, an ``mcp.plugin_withdrawn`` event);
  ``plugin list`` must then say ``drifted``. ``plugin revoke`` must leave no grant (the catalog
  lists no plugin server, ``plugin list`` is empty) and no server process.
* ``plugins:oauth_refused``: a bundle whose remote server declares ``oauth`` must be refused by
  ``plugin review`` and ``plugin trust`` (exit 2, "cannot use MCP OAuth" on stderr, nothing on
  stdout), and nothing may be trusted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from shadowcode_conformance.checks.external_helpers import outcome
from shadowcode_conformance.checks.external_servers import (
    add_model,
    cli,
    cli_json,
    kill_leftovers,
    run_task,
    tool_turns,
    trust_workspace,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["drift_and_revoke", "oauth_refused"]

_ECHO = "plugin-5-notes-echo"
_ECHO_ID = f"plugin:{_ECHO}"


def _bundle(ctx: Context, folder: Path, servers: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ctx.repo_root / "fixtures/servers/hostile_server.py", folder / "server.py")
    manifest = {"name": "notes", "version": "1.0.0", "mcp_servers": servers}
    (folder / "plugin.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _review_problems(review: dict[str, Any], bundle: Path, problems: list[str]) -> None:
    servers: list[dict[str, Any]] = review.get("servers") or []
    if len(servers) != 1:
        problems.append(f"review shows {len(servers)} servers, expected 1")
        return
    shown = servers[0]
    if shown.get("identity") != _ECHO or shown.get("id") != _ECHO_ID:
        problems.append(f"review names the server {shown.get('identity')!r}, expected {_ECHO!r}")
    if f"{bundle.resolve()}/server.py" not in (shown.get("argv") or []):
        problems.append(f"review's argv does not name the bundle's server: {shown.get('argv')}")
    if shown.get("env") != [{"variable": "NOTES_HOME", "source": "HOME"}]:
        problems.append(f"review's environment provenance is {shown.get('env')}")
    if shown.get("enabled_tools") != ["echo"]:
        problems.append(f"review's filter is {shown.get('enabled_tools')}")


@check("plugins:drift_and_revoke", covers=["CW-12"], timeout_seconds=240)
async def drift_and_revoke(ctx: Context) -> CheckResult:
    """A plugin's server is called after approval, refused once its bundle drifts, and revoke leaves nothing."""
    problems: list[str] = []
    server = {
        "command": [helper_python(), "${PLUGIN_ROOT}/server.py", "plain"],
        "env": {"NOTES_HOME": "${HOME}"},
        "enabled_tools": ["echo"],
    }
    bundle = _bundle(ctx, ctx.scratch / "bundle-notes", {"echo": server})
    calls = [
        ("mcp_call", {"server": _ECHO, "tool": "echo", "arguments": {"text": "from the plugin"}}),
        ("mcp_call", {"server": _ECHO, "tool": "echo", "arguments": {"text": "after drift"}}),
    ]
    try:
        await trust_workspace(ctx, ctx.project)
        review = await cli_json(ctx, "plugin", "review", str(bundle), workspace=ctx.project)
        _review_problems(review, bundle, problems)
        trusted = await cli_json(
            ctx, "plugin", "trust", str(bundle), "--digest", review["digest"], workspace=ctx.project
        )
        catalog = await cli_json(ctx, "mcp", workspace=ctx.project)
        staged = [s["grant"]["state"] for s in catalog["servers"] if s["id"] == _ECHO_ID]
        if trusted.get("state") != "trusted" or staged != ["disabled"]:
            problems.append(f"trust did not stage without enabling: {trusted.get('state')}, catalog {staged}")
        enabled = await cli_json(ctx, "plugin", "enable", "notes", workspace=ctx.project)
        if enabled.get("servers") != [_ECHO_ID]:
            problems.append(f"enable attached {enabled.get('servers')}")
        await add_model(ctx, [{"match": "plugin", "turns": tool_turns(*calls)}])
    except (RuntimeError, KeyError) as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    seen: list[str] = []

    def edit_on_second(approval: dict[str, Any]) -> None:
        seen.append(approval["id"])
        if len(seen) == 2:
            with (bundle / "server.py").open("a", encoding="utf-8") as handle:
                handle.write("# edited after trust\n")

    expected = [{"server": _ECHO_ID, "tool": "echo", "arguments": c[1]["arguments"]} for c in calls]
    job, events = await run_task(ctx, "call the plugin", ctx.project, expected, problems, edit_on_second)
    if job.get("status") != "done":
        problems.append(f"task ended {job.get('status')!r}: {job.get('error')}")
    results = [e["data"] for e in events if e["kind"] == "tool.result"]
    kinds = [e["kind"] for e in events]
    if len(results) != 2:
        problems.append(f"{len(results)} tool results for 2 calls")
    else:
        if not results[0]["ok"] or "from the plugin" not in results[0]["summary"]:
            problems.append(f"the first call did not answer: {results[0]['summary'][:200]}")
        refused = results[1]["summary"]
        if results[1]["ok"] or "drift" not in refused or "nothing was sent" not in refused:
            problems.append(f"the call after the bundle changed was not refused for drift: {refused[:200]}")
    if kinds.count("mcp.call") != 1 or "mcp.plugin_withdrawn" not in kinds:
        problems.append(f"expected one mcp.call and an mcp.plugin_withdrawn, got {kinds.count('mcp.call')} calls")
    try:
        listed = await cli_json(ctx, "plugin", "list", workspace=ctx.project)
        if [p["state"] for p in listed["plugins"]] != ["drifted"]:
            problems.append(f"plugin list after the edit: {[p['state'] for p in listed['plugins']]}")
        revoked = await cli_json(ctx, "plugin", "revoke", "notes", workspace=ctx.project)
        catalog = await cli_json(ctx, "mcp", workspace=ctx.project)
        after = await cli_json(ctx, "plugin", "list", workspace=ctx.project)
    except RuntimeError as exc:
        return CheckResult(False, f"after the task: {exc}")
    if revoked.get("state") != "revoked" or revoked.get("grants_revoked") != 1:
        problems.append(f"revoke: {revoked}")
    left = [s["id"] for s in catalog["servers"] if str(s["id"]).startswith("plugin:")]
    if left or after["plugins"]:
        problems.append(f"after revoke the catalog still lists {left} and plugin list {after['plugins']}")
    kill_leftovers(events, [], problems)
    return outcome(problems, "called after approval; refused for drift with nothing sent; revoke left nothing")


@check("plugins:oauth_refused", covers=["CW-12"], timeout_seconds=60)
async def oauth_refused(ctx: Context) -> CheckResult:
    """A plugin's remote server that declares OAuth is refused at validation; nothing is trusted."""
    problems: list[str] = []
    remote = {
        "url": "https://mcp.example.com/mcp",
        "network_hosts": ["mcp.example.com"],
        "oauth": {"client_id": "notes", "issuer": "https://auth.example.com"},
    }
    bundle = _bundle(ctx, ctx.scratch / "bundle-oauth", {"remote": remote})
    for args in (("plugin", "review", str(bundle)), ("plugin", "trust", str(bundle), "--digest", "0" * 64)):
        code, out, err = await cli(ctx, *args, workspace=ctx.project)
        if code != 2 or out or "cannot use MCP OAuth" not in err:
            problems.append(f"`{args[1]}` exited {code} with stdout {out[:100]!r}, stderr {err[:200]!r}")
    try:
        listed = await cli_json(ctx, "plugin", "list", workspace=ctx.project)
    except RuntimeError as exc:
        return CheckResult(False, str(exc))
    if listed["plugins"]:
        problems.append(f"something was trusted: {listed['plugins']}")
    return outcome(problems, "review and trust refuse a plugin remote declaring OAuth; nothing trusted")
