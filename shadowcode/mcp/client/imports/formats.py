"""The config files of other MCP hosts, read into server entries (CW-01).

- JSON (``generic``, ``claude``, ``cursor``, ``vscode``, ``gemini``, ``qwen``, ``cline``,
  ``windsurf``): an object with exactly one of ``servers`` and ``mcpServers`` (both is an
  error), each a map of name → server entry. Claude Code's user file ``~/.claude.json`` may
  instead (or also) hold ``projects.<folder>.mcpServers`` (its "local" scope): the entries of the
  importing project are read from it too.
- JSON with other keys: opencode and Kilo (``mcp``), Zed (``context_servers``).
- TOML (``codex``): Codex's ``config.toml``; its ``[mcp_servers.NAME]`` tables are the entries,
  the rest of the file is ignored. A syntax error names the line and column.
- YAML (``continue``): Continue's ``config.yaml``; its ``mcpServers`` list of named items.

The hosts whose file is a settings file of their own (Gemini CLI, Qwen Code, opencode, Kilo,
Zed, Continue) may have no server at all: that file holds no entry rather than being an error.
Those and VS Code write JSON with comments and trailing commas; both are read as blanks. Each
entry is renamed into the common fields (:mod:`~shadowcode.mcp.client.imports.shapes`) and its
values are read in the host's reference dialect
(:data:`~shadowcode.mcp.client.imports.values.DIALECTS`).

Files are given as bytes; reading them (bounded, regular files only) is the caller's.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from shadowcode.enums import ImportHost
from shadowcode.errors import ConfigError
from shadowcode.json_values import json_array, json_object
from shadowcode.mcp.client.imports.convert import PlannedServer, plan_server, server_name
from shadowcode.mcp.client.imports.shapes import SHAPES
from shadowcode.mcp.client.imports.values import DIALECTS, DOLLAR, Dialect

__all__ = ["HOSTS", "ParsedConfig", "guess_host", "parse_config"]


_SETTINGS_FILES = frozenset({"gemini", "qwen", "opencode", "kilo", "zed", "continue"})
_WITH_COMMENTS = frozenset({"vscode", "gemini", "qwen", "opencode", "kilo", "zed"})
_SERVER_KEYS = {"opencode": "mcp", "kilo": "mcp", "zed": "context_servers"}
_DIALECT_OF = {"gemini": "gemini", "qwen": "gemini", "opencode": "opencode", "kilo": "opencode"} | {
    "continue": "continue",
    "cline": "literal",
    "zed": "literal",
}
_STRING = r'("(?:\\.|[^"\\])*")'
_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*.*?\*/", re.S)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[}\]])")

HOSTS: tuple[str, ...] = tuple(h.value for h in ImportHost)
"""The ``--from`` values (:class:`~shadowcode.enums.ImportHost`)."""


@dataclass(frozen=True)
class ParsedConfig:
    """One host config, its server entries converted.

    Attributes:
        host: one of :data:`HOSTS`.
        servers: the entries in file order, converted or with why not.
    """

    host: str
    servers: tuple[PlannedServer, ...]


def guess_host(path: PurePath) -> str:
    """The host whose file ``path`` looks like: by its name and folder, else ``generic``."""
    name, parent = path.name, path.parent.name
    if path.suffix == ".toml":
        return "codex"
    if path.suffix in (".yaml", ".yml"):
        return "continue"
    if name in {".mcp.json", ".claude.json"} or parent == ".claude":
        return "claude"
    if parent == ".cursor":
        return "cursor"
    if parent == ".vscode" or (parent == "User" and name == "mcp.json"):
        return "vscode"
    by_folder = {".gemini": "gemini", ".qwen": "qwen", ".zed": "zed", "zed": "zed", "windsurf": "windsurf"}
    if name == "settings.json" and parent in by_folder:
        return by_folder[parent]
    if name == "mcp_config.json" and parent == "windsurf":
        return "windsurf"
    if name == "cline_mcp_settings.json":
        return "cline"
    if name in ("opencode.json", "opencode.jsonc"):
        return "opencode"
    if name in ("kilo.json", "kilo.jsonc"):
        return "kilo"
    return "generic"


def parse_config(data: bytes, source: str, *, host: str, project: str | None = None) -> ParsedConfig:
    """Read one host config and convert each server entry (CW-01).

    Args:
        data: the file's bytes (UTF-8).
        source: the file's name, for errors and the definitions' description.
        host: one of :data:`HOSTS`.
        project: the importing project's canonical folder (Claude Code's local scope).

    Returns:
        The entries, converted or skipped one by one.

    Raises:
        ConfigError: not UTF-8; not valid JSON or TOML (TOML errors name the line and column);
            not an object; both ``servers`` and ``mcpServers``; a server map that is not an object.
    """
    if host not in HOSTS:
        raise ConfigError(f"unknown host {host!r}: use one of {', '.join(HOSTS)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    if host == "codex":
        entries = _toml_entries(text, source)
    elif host == "continue":
        entries = _yaml_entries(text, source)
    else:
        entries = _json_entries(text, source, host, project)
    dialect = DIALECTS[_DIALECT_OF[host]] if host in _DIALECT_OF else DOLLAR
    seen: set[str] = set()
    servers: list[PlannedServer] = []
    for source_name, entry in entries:
        planned = _plan(host, source_name, entry, dialect)
        if planned.name is not None and planned.name in seen:
            planned = PlannedServer(source_name, planned.name, None, f"another server of this file is also named "
                                    f"{planned.name!r}; the first one is imported")  # fmt: skip
        if planned.name is not None:
            seen.add(planned.name)
        servers.append(planned)
    return ParsedConfig(host, tuple(servers))


def _plan(host: str, source_name: str, entry: Any, dialect: Dialect) -> PlannedServer:
    """One entry renamed into the common fields (when its host needs it), then converted."""
    shape = SHAPES.get(host)
    fields = json_object(entry)
    if shape is not None and fields is not None:
        shaped = shape(fields)
        if isinstance(shaped, str):
            return PlannedServer(source_name, server_name(source_name), None, shaped)
        entry = shaped
    return plan_server(source_name, entry, dialect)


def _blank_comments(text: str) -> str:
    """JSON with comments and trailing commas as JSON: each comment or such comma becomes blanks
    (newlines kept), so an error still names the right line and column."""

    def blank(match: re.Match[str]) -> str:
        return match.group(1) or re.sub(r"[^\n]", " ", match.group(0))

    return _TRAILING_COMMA.sub(blank, _COMMENT.sub(blank, text))


def _yaml_entries(text: str, source: str) -> list[tuple[str, Any]]:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{source}: not valid YAML{where}; nothing was imported") from None
    if doc is None:
        return []
    mapping = json_object(doc)
    if mapping is None:
        raise ConfigError(f"{source}: the file must hold a YAML mapping")
    servers = mapping.get("mcpServers", [])
    if (by_name := json_object(servers)) is not None:
        return list(by_name.items())
    listed = json_array(servers)
    if listed is None:
        raise ConfigError(f"{source}: 'mcpServers' is not a list of servers")
    entries: list[tuple[str, Any]] = []
    for index, item in enumerate(listed):
        named = json_object(item)
        name = named.get("name") if named is not None else None
        entries.append((name if isinstance(name, str) and name else f"mcpServers[{index}]", item))
    return entries


def _toml_entries(text: str, source: str) -> list[tuple[str, Any]]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        if "at end of document" in message:
            lines = text.split("\n")
            where = f"at end of document: line {len(lines)}, column {len(lines[-1]) + 1}"
            message = message.replace("at end of document", where)
        raise ConfigError(f"{source}: not valid TOML: {message}; nothing was imported") from None
    servers = json_object(doc.get("mcp_servers", {}))
    if servers is None:
        raise ConfigError(f"{source}: 'mcp_servers' is not a table")
    return list(servers.items())


def _server_map(doc: dict[str, Any], source: str, where: str) -> list[tuple[str, Any]]:
    if "servers" in doc and "mcpServers" in doc:
        raise ConfigError(f"{source}: {where}has both 'servers' and 'mcpServers'; a file uses exactly one of them")
    key = "servers" if "servers" in doc else "mcpServers"
    servers = json_object(doc.get(key, {}))
    if servers is None:
        raise ConfigError(f"{source}: {where}'{key}' is not an object of name → server")
    return list(servers.items())


def _json_entries(text: str, source: str, host: str, project: str | None) -> list[tuple[str, Any]]:
    try:
        doc = json_object(json.loads(_blank_comments(text) if host in _WITH_COMMENTS else text))
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON: {exc}; nothing was imported") from None
    if doc is None:
        raise ConfigError(f"{source}: the file must hold a JSON object")
    if host in _SERVER_KEYS:
        key = _SERVER_KEYS[host]
        servers = json_object(doc.get(key, {}))
        if servers is None:
            raise ConfigError(f"{source}: '{key}' is not an object of name → server")
        return list(servers.items())
    if host in _SETTINGS_FILES and "servers" not in doc and "mcpServers" not in doc:
        return []
    scopes = json_object(doc.get("projects")) if host == "claude" else None
    if "servers" not in doc and "mcpServers" not in doc and scopes is None:
        raise ConfigError(f"{source}: neither 'servers' nor 'mcpServers' is present; this is no MCP config file")
    entries = _server_map(doc, source, "")
    local_doc = json_object(scopes.get(project)) if scopes is not None and project is not None else None
    if local_doc is not None:
        local = _server_map(local_doc, source, f"projects[{project!r}] ")
        names = {name for name, _ in local}
        # Claude Code prefers its local scope over the user scope for the same name.
        entries = local + [(name, entry) for name, entry in entries if name not in names]
    return entries
