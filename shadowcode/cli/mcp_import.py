"""``shadowcode mcp import [FILE] [--from HOST] [--dry-run] [--json]`` (CW-01).

Thin: the engine reads, parses and registers (:mod:`shadowcode.engine.mcp.config_import`). Without
FILE the well-known config files of each host for this user and the ``--workspace`` project
are listed first (a dry run), then imported. Exit status: 0 when every server entry was
imported or is unchanged, 1 when one was skipped (the report is still printed), 2 for a file
that cannot be read or parsed (nothing imported).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine
from shadowcode.enums import ImportHost

if TYPE_CHECKING:
    from shadowcode.engine.api import McpImport, McpImportReport

__all__ = ["import_"]

*_FIRST, _LAST = ImportHost
_FROM_HELP = f"{', '.join(_FIRST)} or {_LAST}; default: from the name."


def _label(host: str) -> str:
    """How the report names ``host``: its label, or the value itself when it is none of ours."""
    try:
        return ImportHost(host).label
    except ValueError:
        return host


def _files_text(doc: McpImportReport) -> str:
    if not doc.files:
        return "no MCP config of a known host found for this user and project"
    lines = [f"{len(doc.files)} MCP config files found:"]
    lines += [f"  {f.path}  ({_label(f.host)}, {f.scope}, {f.servers} servers)" for f in doc.files]
    return "\n".join(lines)


def _report_text(doc: McpImportReport) -> str:
    lines: list[str] = []
    current = None
    for entry in doc.servers:
        if entry.file != current:
            current = entry.file
            lines.append(f"{entry.file} ({_label(entry.host)}):")
        if entry.outcome == "skipped":
            lines.append(f"  {entry.source_name}: skipped: {entry.reason}")
        else:
            verb = {"imported": "imported as", "would_import": "would import as", "unchanged": "unchanged:"}
            lines.append(f"  {entry.source_name}: {verb[entry.outcome]} {entry.id} (hash {entry.hash})")
        lines += [f"      {note.field}: {note.message}" for note in entry.notes]
    counts = {o: sum(1 for e in doc.servers if e.outcome == o) for o in ("imported", "would_import", "unchanged")}
    skipped = sum(1 for e in doc.servers if e.outcome == "skipped")
    done = f"{counts['would_import']} would be imported" if doc.dry_run else f"{counts['imported']} imported"
    lines.append(f"{done}, {counts['unchanged']} unchanged, {skipped} skipped; nothing was enabled or started.")
    if counts["imported"] or counts["would_import"]:
        lines.append("Review each with `shadowcode --json mcp`, then `shadowcode mcp enable ID --hash HASH`.")
    return "\n".join(lines)


def import_(
    ctx: typer.Context,
    file: Annotated[
        Path | None,
        typer.Argument(metavar="[FILE]", help="A host's MCP config; default: each host's well-known files."),
    ] = None,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help=_FROM_HELP,
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be imported; write nothing.")] = False,
    json_flag: Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")] = False,
) -> None:
    """Import the MCP servers of another host's configuration as definitions to review (CW-01).

    Reads Claude Code, Cursor, VS Code, Codex, Gemini CLI, Qwen Code, Cline, opencode, Kilo,
    Continue, Zed and Windsurf files, and any mcp.json-style file.

    Each server becomes config:NAME, disabled: nothing is enabled, started or contacted.
    Variable references become env_refs (or api_key_env for a bearer header); a literal
    credential is not copied (the report says how to reference it). Importing the same file
    again changes nothing.
    """
    from shadowcode.engine.api import McpImport
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    g = replace(g, json=g.json or json_flag)
    request = McpImport(
        path=str(file.absolute()) if file is not None else None,
        host=from_,
        dry_run=dry_run,
        home=str(Path.home()),
        codex_home=os.environ.get("CODEX_HOME") or None,
    )
    if file is None and not dry_run:
        listing = _run(g, replace(request, dry_run=True))
        out = sys.stderr if g.json else sys.stdout
        out.write(_files_text(listing) + "\n")
        out.flush()
        if not listing.files:
            emit(g, to_json(listing), "nothing to import")
            return
    doc = _run(g, request)
    text = _report_text(doc) if file is not None or not dry_run else _files_text(doc) + "\n" + _report_text(doc)
    emit(g, to_json(doc), text)
    if any(e.outcome == "skipped" for e in doc.servers):
        raise typer.Exit(1)


def _run(g: Globals, request: McpImport) -> McpImportReport:
    return with_engine(g, lambda api: api.mcp_import(request, g.caller()))
