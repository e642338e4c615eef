"""``shadowcode plugin review|trust|enable|disable|revoke|list``: plugin bundles that contribute MCP servers (CW-12).

Every command takes ``--json`` (as the global flag). None starts or contacts anything: review
reads a bundle; the others change trusted snapshots and grants through the engine
(:mod:`shadowcode.engine.plugins`). Enable and disable act on the ``--workspace`` project.
In plain text every string a bundle supplied is shown through
:func:`~shadowcode.cli.render.visible` (one line, control characters made visible).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine
from shadowcode.cli.render import visible

if TYPE_CHECKING:
    from shadowcode.engine.api import PluginChange, PluginList, PluginReview

__all__ = ["plugin_app"]

plugin_app = typer.Typer(help="Plugin bundles that contribute MCP servers: review, trust, enable, disable, revoke.")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document (as the global --json).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The plugin's name (from its manifest).")]


def _globals(ctx: typer.Context, json_flag: bool) -> Globals:
    g = globals_of(ctx)
    return replace(g, json=g.json or json_flag)


def _review_text(doc: PluginReview) -> str:
    trusted = doc["trusted_digest"]
    state = (
        "not trusted" if trusted is None else ("trusted" if trusted == doc["digest"] else "trusted at other content")
    )
    lines = [
        f"plugin {visible(doc['name'])} {visible(doc['version'] or '')} ({state})".replace("  ", " "),
        f"  bundle: {visible(doc['root'])} ({doc['files']} files)",
        f"  digest: {doc['digest']}",
        f"  authority: {doc['authority']}",
    ]
    for server in doc["servers"]:
        lines.append(f"  server {visible(server['identity'])} ({server['transport']})")
        if server["transport"] == "stdio":
            lines.append(f"    argv: {visible(' '.join(server['argv']))}")
            for env in server["env"]:
                lines.append(f"    env {visible(env['variable'])} from {visible(env['source'])}")
        else:
            lines.append(
                f"    endpoint: {visible(server['url'])} (hosts: {visible(', '.join(server['network_hosts']))})"
            )
            auth = server["auth"]
            if auth["bearer_token_env_var"]:
                lines.append(f"    bearer token from {visible(auth['bearer_token_env_var'])}")
            for header, ref in auth["env_headers"].items():
                lines.append(f"    header {visible(header)} from {visible(ref)}")
        if server["enabled_tools"] is not None:
            lines.append(f"    enabled tools: {visible(', '.join(server['enabled_tools']))}")
        if server["disabled_tools"]:
            lines.append(f"    disabled tools: {visible(', '.join(server['disabled_tools']))}")
    lines.append(f"trust it with `shadowcode plugin trust PATH --digest {doc['digest']}`")
    return "\n".join(lines)


@plugin_app.command("review")
def review(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The bundle's folder (holding plugin.json).")],
    json_flag: JsonFlag = False,
) -> None:
    """Show what trusting a bundle would allow: digest, argv or endpoint, environment sources,
    credential names and tool filters, never a secret; changes nothing (CW-12)."""
    from shadowcode.engine.api import PluginPath

    g = _globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.plugin_review(PluginPath(str(path.absolute())), g.caller(project=False)))
    emit(g, doc, _review_text(doc))


def _change_text(doc: PluginChange) -> str:
    where = f" for {visible(doc['project'])}" if "project" in doc else ""
    text = f"plugin {visible(doc['name'])} {doc['state']}{where}: {', '.join(visible(s) for s in doc['servers'])}"
    if revoked := doc.get("grants_revoked"):
        text += f" ({revoked} grants revoked)"
    for plugin_id, winner in (doc.get("shadowed") or {}).items():
        text += f"\n  {visible(plugin_id)} is left out: {visible(winner)} has the same name and wins"
    return text


@plugin_app.command("trust")
def trust(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The reviewed bundle's folder.")],
    digest: Annotated[str, typer.Option("--digest", help="The digest its review showed.")],
    json_flag: JsonFlag = False,
) -> None:
    """Stage the reviewed snapshot of a bundle; enables nothing (CW-12)."""
    from shadowcode.engine.api import PluginTrust

    g = _globals(ctx, json_flag)
    request = PluginTrust(str(path.absolute()), digest)
    doc = with_engine(g, lambda api: api.plugin_trust(request, g.caller(project=False)))
    emit(g, doc, _change_text(doc))


@plugin_app.command("enable")
def enable(ctx: typer.Context, name: NameArg, json_flag: JsonFlag = False) -> None:
    """Attach a trusted plugin's snapshot to the workspace project (trusted) (CW-12)."""
    from shadowcode.engine.api import PluginName

    g = _globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.plugin_enable(PluginName(name), g.caller()))
    emit(g, doc, _change_text(doc))


@plugin_app.command("disable")
def disable(ctx: typer.Context, name: NameArg, json_flag: JsonFlag = False) -> None:
    """Detach a plugin from the workspace project; a running task's use of it stops (CW-12)."""
    from shadowcode.engine.api import PluginName

    g = _globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.plugin_disable(PluginName(name), g.caller()))
    emit(g, doc, _change_text(doc))


@plugin_app.command("revoke")
def revoke(ctx: typer.Context, name: NameArg, json_flag: JsonFlag = False) -> None:
    """Forget a plugin's snapshot and revoke its grants in every project (CW-12)."""
    from shadowcode.engine.api import PluginName

    g = _globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.plugin_revoke(PluginName(name), g.caller(project=False)))
    emit(g, doc, _change_text(doc))


def _list_text(doc: PluginList) -> str:
    if not doc["plugins"]:
        return "no plugin is trusted; review a bundle with `shadowcode plugin review PATH`"
    lines: list[str] = []
    for plugin in doc["plugins"]:
        lines.append(f"{visible(plugin['name']):<24} {plugin['state']:<8} {plugin['digest']}")
        lines.append(f"    {visible(plugin['root'])}: {', '.join(visible(s) for s in plugin['servers'])}")
    return "\n".join(lines)


@plugin_app.command("list")
def list_(ctx: typer.Context, json_flag: JsonFlag = False) -> None:
    """Every trusted plugin with its state for the workspace project: trusted, enabled or drifted (CW-12)."""
    from shadowcode.engine.api import Empty

    g = _globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.plugin_list(Empty(), g.caller()))
    emit(g, doc, _list_text(doc))
