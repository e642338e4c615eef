"""``mcp import``: other hosts' MCP configs become global definitions that still need review (CW-01).

Every file is read (bounded, regular files only) and parsed before anything is written: one
unreadable or unparsable file imports nothing. Each server entry then becomes ``config:NAME``
through :meth:`McpRegistry.register_new <shadowcode.engine.mcp.registry.McpRegistry.register_new>`,
the same registrations ``mcp add`` makes. A NAME registered already with the same bytes is
``unchanged``; one registered with other content is skipped, never replaced. No grant is
written, no server started, no endpoint contacted, no variable resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shadowcode.engine.api import McpImport, McpImportEntry, McpImportFile, McpImportNote, McpImportReport
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.errors import ConfigError, ToolError
from shadowcode.limits import MCP_IMPORT_FILE_MAX_BYTES, MCP_IMPORT_SERVERS_MAX
from shadowcode.mcp.client.imports import HOSTS, ParsedConfig, PlannedServer, guess_host, parse_config, well_known
from shadowcode.project.files import read_regular

__all__ = ["import_configs"]

Outcome = Literal["imported", "would_import", "unchanged", "skipped"]


@dataclass(frozen=True)
class _Source:
    path: Path
    host: str
    scope: str


def _sources(request: McpImport, project: Path | None) -> list[_Source]:
    if request.host is not None and request.host not in HOSTS:
        raise ConfigError(f"--from {request.host!r}: use one of {', '.join(HOSTS)}")
    if request.path is not None:
        path = Path(request.path)
        if not path.is_absolute():
            raise ConfigError(f"{request.path}: give an absolute path")
        return [_Source(path, request.host or guess_host(path), "given")]
    home = Path(request.home) if request.home else Path.home()
    codex_home = Path(request.codex_home) if request.codex_home else None
    found = well_known(home, project, codex_home)
    return [_Source(loc.path, loc.host, loc.scope) for loc in found if request.host in (None, loc.host)]


def _read(source: _Source, project: Path | None) -> ParsedConfig:
    try:
        content = read_regular(
            source.path, max_bytes=MCP_IMPORT_FILE_MAX_BYTES, follow_symlinks=True, label=str(source.path)
        )
    except ToolError as exc:
        raise ConfigError(f"{exc.message}; nothing was imported") from exc
    if content is None:
        raise ConfigError(f"{source.path}: no such file")
    return parse_config(content.data, str(source.path), host=source.host, project=str(project) if project else None)


def _place(
    registry: McpRegistry, source: _Source, server: PlannedServer, planned: dict[str, str], *, write: bool
) -> McpImportEntry:
    notes = [McpImportNote(n.field, n.message) for n in server.notes]

    def entry(
        outcome: Outcome, def_id: str | None = None, digest: str | None = None, reason: str | None = None
    ) -> McpImportEntry:
        return McpImportEntry(str(source.path), source.host, server.source_name, outcome, def_id, digest, reason, notes)

    if server.definition is None or server.name is None:
        return entry("skipped", reason=server.reason)
    earlier = planned.get(server.name)
    try:
        definition, current = registry.register_new(
            server.definition, server.source_name, write=write and earlier is None
        )
    except ConfigError as exc:
        return entry("skipped", reason=exc.message)
    current = current or earlier
    if current == definition.sha256:
        return entry("unchanged", definition.id, definition.sha256)
    if current is not None:
        reason = (
            f"{definition.id} is already registered with other content (hash {current}); it is kept. "
            f"Compare it with `shadowcode --json mcp`, then remove it or replace it with `shadowcode mcp add`"
        )
        return entry("skipped", reason=reason)
    planned[server.name] = definition.sha256
    return entry("imported" if write else "would_import", definition.id, definition.sha256)


def import_configs(registry: McpRegistry, request: McpImport, project: Path | None) -> McpImportReport:
    """Import ``request``'s config file, or every well-known one found (CW-01).

    Args:
        registry: the profile's registrations.
        request: what to import.
        project: the caller's canonical project (its well-known files, Claude Code's local scope).

    Returns:
        The files read and one entry per server entry.

    Raises:
        ConfigError: an unknown host, a relative path, a file that is missing, not a regular
            file, over MCP_IMPORT_FILE_MAX_BYTES or not parsable (nothing imported), or more than
            MCP_IMPORT_SERVERS_MAX server entries in all.
    """
    sources = _sources(request, project)
    parsed = [(source, _read(source, project)) for source in sources]
    total = sum(len(config.servers) for _, config in parsed)
    if total > MCP_IMPORT_SERVERS_MAX:
        raise ConfigError(
            f"{total} server entries found; one import takes at most {MCP_IMPORT_SERVERS_MAX}: nothing was imported"
        )
    planned: dict[str, str] = {}
    entries = [
        _place(registry, source, server, planned, write=not request.dry_run)
        for source, config in parsed
        for server in config.servers
    ]
    files = [McpImportFile(str(s.path), s.host, s.scope, len(c.servers)) for s, c in parsed]
    return McpImportReport(request.dry_run, files, entries)
