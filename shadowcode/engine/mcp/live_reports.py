"""Live reports on a project's external MCP servers: ``mcp validate`` and ``mcp tools`` (CW-03, CW-04).

Which servers are started follows the Build task path exactly: only a trusted project above
``read_only``, and only a definition enabled for the project at its current hash (its launch
grant, CLI-06, CLI-08, CLI-09). Anything else is reported with the reason it was not started,
and nothing runs. The connection itself is the task's own
(:func:`shadowcode.engine.mcp.probe.probe_servers`): same transport choice, environment,
``env_refs`` resolution, redaction, limits, deadlines and cleanup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowcode.engine.api import McpConnectReport, McpServerTools, McpTool, McpValidation
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel
from shadowcode.errors import NotFound
from shadowcode.mcp.client.definitions import DefinitionProblem, ServerDefinition
from shadowcode.profile import Profile

__all__ = ["Entry", "entries", "server_tools", "validate"]


@dataclass(frozen=True)
class Entry:
    """One server of a project as the reports see it.

    Attributes:
        id: the definition id.
        item: the definition, the problem of an unusable file, or None when a granted definition is gone.
        granted: the granted hash, or None when not enabled.
    """

    id: str
    item: ServerDefinition | DefinitionProblem | None
    granted: str | None

    def not_started(self, project: Project) -> str | None:
        """Why a Build task of ``project`` would not start this server now, or None when it would."""
        item = self.item
        if not project.trusted:
            return "not started: the project is not trusted, and its tasks open no MCP connection"
        if project.level == PermissionLevel.READ_ONLY:
            return "not started: the project's level is read_only, and its tasks open no MCP connection"
        if item is None:
            return "enabled but missing: restore the definition or disable it"
        if isinstance(item, DefinitionProblem):
            return f"invalid: {item.error}"
        if self.granted is None:
            return (
                "not started: not enabled for this project "
                f"(review it, then `shadowcode mcp enable {self.id} --hash {item.sha256}`)"
            )
        if self.granted != item.sha256:
            return (
                "not started: the definition changed since it was enabled; review it and enable it again, or disable it"
            )
        return None

    def report(self, error: str) -> McpConnectReport:
        """The report of a server that was not started."""
        item = self.item
        if isinstance(item, ServerDefinition):
            return McpConnectReport(self.id, item.name, item.transport, item.sha256, False, error=error, skipped=True)
        digest = None if item is None else item.sha256
        return McpConnectReport(self.id, None, None, digest, False, error=error, skipped=True)


def entries(registry: McpRegistry, project: Project) -> list[Entry]:
    """Every definition the project sees, then granted ones that are gone, each with its grant."""
    grants = registry.grants(project.path)
    found = [Entry(item.id, item, grants.pop(item.id, None)) for item in registry.definitions(project.path)]
    found += [Entry(def_id, None, granted) for def_id, granted in sorted(grants.items())]
    return found


def find(found: list[Entry], key: str) -> Entry:
    """The entry whose id is ``key``, else the only one whose server name is ``key``.

    Raises:
        NotFound: no such server, or a name several definitions share (the ids are listed).
    """
    for entry in found:
        if entry.id == key:
            return entry
    named = [e for e in found if isinstance(e.item, ServerDefinition) and e.item.name == key]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(e.id for e in named)
        raise NotFound(f"several MCP servers are named {key!r} ({ids}); name one by its id", server=key)
    known = ", ".join(e.id for e in found) or "none"
    raise NotFound(f"no MCP server {key!r} for this project (known: {known})", server=key)


async def _probe(
    targets: list[Entry], project: Project, profile: Profile
) -> list[tuple[McpConnectReport, list[dict[str, Any]] | None]]:
    """Start what a Build task would start, report the rest; reports in ``targets`` order."""
    reports: dict[str, tuple[McpConnectReport, list[dict[str, Any]] | None]] = {}
    startable: list[ServerDefinition] = []
    for entry in targets:
        why = entry.not_started(project)
        if why is None and isinstance(entry.item, ServerDefinition):
            startable.append(entry.item)
        else:
            reports[entry.id] = (entry.report(why or "not started"), None)
    if startable:
        # Loaded with the first probe: the MCP client stack costs seconds to import.
        from shadowcode.engine.childenv import child_env
        from shadowcode.engine.mcp.probe import probe_servers

        for outcome in await probe_servers(startable, project=project.path, profile=profile, env=child_env()):
            d = outcome.definition
            connected = outcome.tools is not None
            reports[d.id] = (
                McpConnectReport(
                    d.id,
                    d.name,
                    d.transport,
                    d.sha256,
                    connected,
                    protocol_version=outcome.protocol_version,
                    tools=len(outcome.tools) if outcome.tools is not None else None,
                    error=outcome.error,
                    cleanup=outcome.cleanup,
                    warnings=list(outcome.warnings),
                    auth="authorization_required" if "`shadowcode mcp login" in (outcome.error or "") else None,
                ),
                outcome.tools if connected else None,
            )
    return [reports[entry.id] for entry in targets]


async def validate(registry: McpRegistry, project: Project, profile: Profile, server: str | None) -> McpValidation:
    """The ``mcp validate`` report: every granted server (or the one named), probed concurrently (CW-03).

    Raises:
        NotFound: ``server`` names nothing, or a shared name.
    """
    found = entries(registry, project)
    targets = [find(found, server)] if server is not None else [e for e in found if e.granted is not None]
    reports = [report for report, _ in await _probe(targets, project, profile)]
    return McpValidation(str(project.path), all(r.connected for r in reports), reports)


def _tool(doc: dict[str, Any]) -> McpTool:
    annotations: dict[str, Any] | None = doc.get("annotations") if isinstance(doc.get("annotations"), dict) else None
    title = doc.get("title") or (annotations or {}).get("title")
    output: dict[str, Any] | None = doc.get("outputSchema") if isinstance(doc.get("outputSchema"), dict) else None
    return McpTool(
        name=str(doc.get("name")),
        title=str(title) if title is not None else None,
        description=doc.get("description"),
        annotations=annotations,
        input_schema=doc.get("inputSchema") or {"type": "object"},
        output_schema=output,
    )


async def server_tools(registry: McpRegistry, project: Project, profile: Profile, server: str) -> McpServerTools:
    """The ``mcp tools SERVER`` report: one connection under the server's grant, its tools (CW-04).

    Raises:
        NotFound: ``server`` names nothing, or a shared name.
    """
    entry = find(entries(registry, project), server)
    ((report, tools),) = await _probe([entry], project, profile)
    return McpServerTools(report, [_tool(t) for t in tools or ()])
