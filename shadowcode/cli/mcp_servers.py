"""``shadowcode mcp add|enable|disable|remove`` and the ``shadowcode [--json] mcp`` catalog (CLI-01, CLI-02, CLI-05).

None of these commands starts a server or contacts anything: they read definition files and
change registrations and grants in the profile store. Grants apply to the ``--workspace``
project (canonical path), which must be trusted to enable a server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import McpCatalog

__all__ = ["print_catalog", "register"]


def register(app: typer.Typer) -> None:
    """Add the server-management verbs to the ``mcp`` typer app."""
    app.command("add")(add)
    app.command("enable")(enable)
    app.command("disable")(disable)
    app.command("remove")(remove)


def _catalog_text(doc: McpCatalog) -> str:
    trust = "trusted" if doc["trusted"] else "untrusted"
    lines = [f"MCP servers for {doc['project']} ({trust}; at most {doc['enabled_max']} enabled)"]
    if not doc["servers"]:
        lines.append("  none registered; add one with `shadowcode mcp add FILE` or a file in .shadowcode/mcp/")
    for server in doc["servers"]:
        state = server["grant"]["state"]
        what = " ".join(server.get("command") or []) or server.get("url") or server.get("error") or ""
        lines.append(f"  {server['id']:<40} {state:<9} {server.get('hash') or '-'}")
        if what:
            lines.append(f"      {what}")
        if server.get("env_names"):
            lines.append(f"      env: {', '.join(server['env_names'])}")
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
