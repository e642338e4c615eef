"""``mcp doctor``: static checks of a project's external MCP servers; nothing is started or contacted (CW-03).

For every definition the project sees (global registrations, then its own files) and every
grant whose definition is gone:

- ``definition``: a project file that is not a usable definition;
- ``grant``: an enabled definition that changed since it was enabled, or is missing (CLI-06);
- ``command``: a stdio command that does not exist, is a folder or is not executable: a bare
  name is looked up on the PATH the server would start with (CLI-12: the scrubbed one, or the
  definition's own ``PATH`` entry), a path with a ``/`` relative to the project, where servers start;
- ``env``: an ``env_refs``, ``api_key_env``, ``bearer_token_env_var`` or ``env_headers`` name set
  neither in the environment nor in the profile's secret store (CLI-04); messages name the
  names, never a value;
- ``auth``: ``authorization_required``: an HTTP server with ``oauth`` settings has no usable
  stored sign-in (none, or one bound to another URL, issuer or resource), judged from the
  stored record alone (CW-08);
- ``url``: an HTTP endpoint the client would refuse before contacting it: the definition rules
  (also applied when a file is read) and a host off loopback the network permission does not cover (CLI-11);
- ``limit``: more grants than MCP_ENABLED_SERVERS_MAX (CLI-02).

Warnings (they do not fail the check), check ``filter``: an ``enabled_tools`` entry naming no
tool of the server's last listing cached for this definition hash (CW-02); without a cached
listing nothing is said.

Looking a name up reads the environment and the secret store and checking a command reads file
metadata; no server runs and nothing is contacted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from shadowcode.engine.api import McpDoctorReport, McpFinding
from shadowcode.engine.childenv import child_env
from shadowcode.engine.mcp.credentials import missing_references
from shadowcode.engine.mcp.live_reports import entries
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.engine.mcp.sign_ins import sign_in_problem
from shadowcode.engine.mcp.task_catalog import filter_warnings
from shadowcode.engine.mcp.task_servers import network_hosts_setting
from shadowcode.engine.projects import Project
from shadowcode.errors import ConfigError, PolicyError
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX
from shadowcode.mcp.client.definitions import DefinitionProblem, HttpSpec, StdioSpec
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.profile import Profile
from shadowcode.secrets import resolve

__all__ = ["command_problem", "doctor", "url_problems"]


def command_problem(program: str, project: Path, path: str) -> str | None:
    """Why the server program ``program`` could not be started, or None (a static look only).

    Args:
        program: the command's first element.
        project: the canonical project (servers start there).
        path: the ``PATH`` servers start with.
    """
    if "/" not in program:
        if shutil.which(program, path=path) is None:
            return f"the command {program!r} is not an executable found on the PATH servers start with"
        return None
    target = Path(program) if os.path.isabs(program) else project / program
    if not target.exists():
        return f"the command {program!r} does not exist"
    if target.is_dir():
        return f"the command {program!r} is a folder"
    if not os.access(target, os.X_OK):
        return f"the command {program!r} is not executable"
    return None


def url_problems(spec: HttpSpec, network_hosts: frozenset[str]) -> list[str]:
    """The rules an HTTP definition breaks before anything is contacted (CLI-11), by the client's own check.

    Args:
        spec: the definition's HTTP part.
        network_hosts: the hosts the network permission covers (``mcp.network_hosts``).

    Returns:
        One message per broken rule (the URL's host at most, never the whole URL), or none.
    """
    try:  # the rules depend on whether a credential is sent, never on its value
        Endpoint(spec.url, network_hosts=network_hosts, sends_credentials=spec.sends_credentials).check()
    except (ConfigError, PolicyError) as exc:
        return [str(exc)]
    return []


def _unresolved(profile: Profile, refs: list[tuple[str, str]]) -> list[str]:
    """One message per ``(field, name)`` whose name resolves to nothing; names only, never a value."""
    return [
        f"{label} refers to {ref}, which is neither set in the environment nor stored "
        f"(store it with `shadowcode secret set {ref}`)"
        for label, ref in refs
        if resolve(profile, ref) is None
    ]


def _server_path(spec: StdioSpec, profile: Profile, base: str) -> str:
    """The PATH the server would start with: its own ``env`` or ``env_refs`` entry, else the base one."""
    if "PATH" in spec.env_refs:
        return resolve(profile, spec.env_refs["PATH"]) or base
    return spec.env.get("PATH", base)


def doctor(registry: McpRegistry, project: Project, profile: Profile) -> McpDoctorReport:
    """Check every definition and grant of ``project`` without starting or contacting anything (CW-03)."""
    path = child_env().get("PATH", "")
    network_hosts = network_hosts_setting(profile.settings())
    found = entries(registry, project)
    problems: list[McpFinding] = []
    warnings: list[McpFinding] = []
    for entry in found:
        item, sid = entry.item, entry.id
        if item is None:
            problems.append(McpFinding(sid, "grant", "enabled but missing: restore the definition or disable it"))
            continue
        if isinstance(item, DefinitionProblem):
            problems.append(McpFinding(sid, "definition", item.error))
            continue
        if entry.granted is not None and entry.granted != item.sha256:
            problems.append(
                McpFinding(sid, "grant", "changed since it was enabled: review it and enable it again, or disable it")
            )
        spec = item.spec
        cached = registry.cached_tools(project.path, item) if spec.enabled_tools else None
        if cached is not None:
            listed = [str(t.get("name")) for t in cached]
            warnings += [McpFinding(sid, "filter", message) for message in filter_warnings(spec, listed)]
        if isinstance(spec, StdioSpec):
            why = command_problem(spec.command[0], project.path, _server_path(spec, profile, path))
            if why is not None:
                problems.append(McpFinding(sid, "command", why))
            refs = [(f"env_refs: {var}", ref) for var, ref in sorted(spec.env_refs.items())]
            problems += [McpFinding(sid, "env", message) for message in _unresolved(profile, refs)]
        else:
            problems += [McpFinding(sid, "url", message) for message in url_problems(spec, network_hosts)]
            problems += [McpFinding(sid, "env", message) for message in missing_references(profile, spec)]
            why = sign_in_problem(profile, item)
            if why is not None:
                problems.append(McpFinding(sid, "auth", why))
    granted = sum(1 for e in found if e.granted is not None)
    if granted > MCP_ENABLED_SERVERS_MAX:
        problems.append(
            McpFinding(
                None,
                "limit",
                f"{granted} servers are enabled for this project; the limit is {MCP_ENABLED_SERVERS_MAX} "
                "(disable some)",
            )
        )
    return McpDoctorReport(str(project.path), project.trusted, [e.id for e in found], problems, warnings)
