"""``shadowcode mcp add|enable|disable|remove|tools|validate|doctor`` and the ``shadowcode [--json] mcp`` catalog.

Covers CLI-01, CLI-02, CLI-05, CW-03, CW-04.

Only ``mcp tools`` and ``mcp validate`` start servers (once each, under their grant, as a Build
task would); the other commands start nothing and contact nothing: they read definition files
and change registrations and grants in the profile store. Grants apply to the ``--workspace``
project (canonical path), which must be trusted to enable a server.

Exit status of the three reports: 0 when all is well, 1 when a server failed or a problem was
found (the report is still printed), 2 for bad usage, an unknown server included (a message on
stderr, nothing on stdout).

In plain text every string a server or a definition supplied (ids, commands, URLs, tool names,
titles, descriptions, annotations, errors, warnings) is shown through
:func:`~shadowcode.cli.render.visible`: one line each, control characters and escape sequences
made visible, bounded (CW-04). ``--json`` prints them as they are, JSON-escaped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine
from shadowcode.cli.render import visible

if TYPE_CHECKING:
    from shadowcode.engine.api import (
        EngineApi,
        McpCatalog,
        McpConnectReport,
        McpDoctorReport,
        McpServerTools,
        McpValidation,
    )

T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document (as the global --json).")]

__all__ = ["print_catalog", "register"]


def register(app: typer.Typer) -> None:
    """Add the server-management verbs to the ``mcp`` typer app."""
    from shadowcode.cli.mcp_import import import_

    app.command("add")(add)
    app.command("import")(import_)
    app.command("enable")(enable)
    app.command("disable")(disable)
    app.command("remove")(remove)
    app.command("tools")(tools)
    app.command("validate")(validate)
    app.command("doctor")(doctor)


def _catalog_text(doc: McpCatalog) -> str:
    trust = "trusted" if doc["trusted"] else "untrusted"
    lines = [f"MCP servers for {visible(doc['project'])} ({trust}; at most {doc['enabled_max']} enabled)"]
    if not doc["servers"]:
        lines.append("  none registered; add one with `shadowcode mcp add FILE` or a file in .shadowcode/mcp/")
    for server in doc["servers"]:
        grant = server.get("grant")  # a catalog gives every entry its grant
        state = grant["state"] if grant is not None else "-"
        what = " ".join(server.get("command") or []) or server.get("url") or server.get("error") or ""
        lines.append(f"  {visible(server['id']):<40} {visible(state):<9} {visible(server.get('hash') or '-')}")
        if what:
            lines.append(f"      {visible(what)}")
        if env_names := server.get("env_names"):
            lines.append(f"      env: {visible(', '.join(env_names))}")
        if plugin := server.get("plugin"):
            lines.append(f"      from plugin {visible(plugin)}")
        if shadowed_by := server.get("shadowed_by"):
            lines.append(f"      left out of tasks: {visible(shadowed_by)} has the same name")
    return "\n".join(lines)


def print_catalog(ctx: typer.Context) -> None:
    """Print the catalog of the workspace project: ids, hashes, grant states, variable names only (CLI-01)."""
    from shadowcode.engine.api import Empty

    g = globals_of(ctx)
    doc = with_engine(g, lambda api: api.mcp_catalog(Empty(), g.caller()))
    emit(g, doc, _catalog_text(doc))


def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A .json, .yaml or .yml server definition.")],
    hash_: Annotated[
        str | None, typer.Option("--hash", help="Current hash, required to replace a registration.")
    ] = None,
) -> None:
    """Register a server definition globally as config:NAME; nothing is started (CLI-01, CLI-05)."""
    from shadowcode.engine.api import McpAdd

    g = globals_of(ctx)
    request = McpAdd(str(file.absolute()), replace_hash=hash_)
    doc = with_engine(g, lambda api: api.mcp_add(request, g.caller(project=False)))
    emit(g, doc, f"registered {doc['id']} (hash {doc['hash']}); review it, then `mcp enable`")


def enable(
    ctx: typer.Context,
    server_id: Annotated[str, typer.Argument(metavar="ID", help="config:NAME or project:PATH.")],
    hash_: Annotated[str, typer.Option("--hash", help="The reviewed hash from the catalog.")],
) -> None:
    """Enable a server for the workspace project at its reviewed hash (CLI-02, CLI-05)."""
    from shadowcode.engine.api import McpEnable

    g = globals_of(ctx)
    doc = with_engine(g, lambda api: api.mcp_enable(McpEnable(server_id, hash_), g.caller()))
    emit(g, doc, f"enabled {server_id} for {doc['project']}")


def disable(
    ctx: typer.Context,
    server_id: Annotated[str, typer.Argument(metavar="ID", help="config:NAME or project:PATH.")],
) -> None:
    """Disable a server for the workspace project; running tasks keep theirs (CLI-05, CLI-06)."""
    from shadowcode.engine.api import McpRef

    g = globals_of(ctx)
    doc = with_engine(g, lambda api: api.mcp_disable(McpRef(server_id), g.caller()))
    emit(g, doc, f"disabled {server_id} for {doc['project']}")


def remove(
    ctx: typer.Context,
    server_id: Annotated[str, typer.Argument(metavar="ID", help="config:NAME.")],
    hash_: Annotated[str, typer.Option("--hash", help="Its current hash.")],
) -> None:
    """Remove a global registration and revoke its grants in every project (CLI-05)."""
    from shadowcode.engine.api import McpRemove
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    done = with_engine(g, lambda api: api.mcp_remove(McpRemove(server_id, hash_), g.caller(project=False)))
    emit(g, to_json(done), f"removed {server_id} ({done.grants_revoked} grants revoked)")


# -- reports (CW-03, CW-04) ------------------------------------------------------------------


def _report_globals(ctx: typer.Context, json_flag: bool) -> Globals:
    g = globals_of(ctx)
    return replace(g, json=g.json or json_flag)


def _naming(g: Globals, work: Callable[[EngineApi], Awaitable[T]]) -> T:
    """Run ``work``; a server name that matches nothing (or several) is bad usage: exit 2, nothing on stdout."""
    from shadowcode.errors import NotFound, UsageError

    try:
        return with_engine(g, work)
    except NotFound as exc:
        raise UsageError(exc.message) from None


def _connect_line(report: McpConnectReport) -> str:
    if report.connected:
        line = f"{visible(report.id)}: connected, protocol {visible(report.protocol_version)}, {report.tools} tools"
        return "\n".join([line, *(f"  warning: {visible(w)}" for w in report.warnings)])
    state = f"{visible(report.auth)}: " if report.auth else ""
    return f"{visible(report.id)}: {'' if report.skipped else 'failed: '}{state}{visible(report.error)}"


def _tools_text(doc: McpServerTools) -> str:
    lines = [_connect_line(doc.server)]
    for tool in doc.tools:
        title = f" ({visible(tool.title)})" if tool.title else ""
        lines.append(f"  {visible(tool.name)}{title}")
        if tool.description:
            # Line breaks and runs of whitespace read as one space; every other control is shown.
            lines.append(f"      {visible(' '.join(tool.description.split()))}")
        hints = sorted(visible(k) for k, v in (tool.annotations or {}).items() if v is True)
        if hints:
            lines.append(f"      annotations: {', '.join(hints)}")
    return "\n".join(lines)


def tools(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(metavar="SERVER", help="A server id (config:NAME, project:PATH) or name.")],
    json_flag: JsonFlag = False,
) -> None:
    """Connect one enabled server once, as a Build task would, and list its tools (CW-04).

    Shows each tool's name, title, description and annotations; --json adds the input and
    output schemas. A server that is not enabled at its current hash is not started. Exit 1
    when it did not connect.
    """
    from shadowcode.engine.api import McpServerQuery
    from shadowcode.engine.wire import to_json

    g = _report_globals(ctx, json_flag)
    doc = _naming(g, lambda api: api.mcp_server_tools(McpServerQuery(server), g.caller()))
    emit(g, to_json(doc), _tools_text(doc))
    if not doc.server.connected:
        raise typer.Exit(1)


def _validation_text(doc: McpValidation) -> str:
    if not doc.servers:
        return f"no MCP server is enabled for {visible(doc.project)}"
    return "\n".join(_connect_line(report) for report in doc.servers)


def validate(
    ctx: typer.Context,
    server: Annotated[
        str | None, typer.Argument(metavar="[SERVER]", help="Only this server (id or name); default: every enabled.")
    ] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Connect the enabled servers (or the one named) and report each: protocol and tool count, or why it failed.

    Covers CW-03. Servers are started concurrently, exactly as a Build task would start them,
    within their configured deadlines, and every process is cleaned up before the report.
    Exit 1 when any server failed or was not started.
    """
    from shadowcode.engine.api import McpValidate
    from shadowcode.engine.wire import to_json

    g = _report_globals(ctx, json_flag)
    doc = _naming(g, lambda api: api.mcp_validate(McpValidate(server), g.caller()))
    emit(g, to_json(doc), _validation_text(doc))
    if not doc.ok:
        raise typer.Exit(1)


def _doctor_text(doc: McpDoctorReport) -> str:
    lines = [f"{len(doc.servers)} MCP server definitions checked for {visible(doc.project)}"]
    lines += [f"  {visible(p.server or 'project')}: {p.check}: {visible(p.message)}" for p in doc.problems]
    lines += [f"  {visible(w.server or 'project')}: warning: {w.check}: {visible(w.message)}" for w in doc.warnings]
    lines.append(f"{len(doc.problems)} problems found" if doc.problems else "no problem found")
    return "\n".join(lines)


def doctor(ctx: typer.Context, json_flag: JsonFlag = False) -> None:
    """Check definitions and grants statically; nothing is started or contacted (CW-03).

    Reports missing or non-executable commands, env_refs and api_key_env names that resolve
    to nothing (names only), HTTP URL rules, changed or missing enabled definitions and grants
    over the limit. Exit 1 when a problem was found.
    """
    from shadowcode.engine.api import Empty
    from shadowcode.engine.wire import to_json

    g = _report_globals(ctx, json_flag)
    doc = with_engine(g, lambda api: api.mcp_doctor(Empty(), g.caller()))
    emit(g, to_json(doc), _doctor_text(doc))
    if doc.problems:
        raise typer.Exit(1)
