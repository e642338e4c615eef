"""Where each host keeps its MCP config for the current user and project (CW-01).

Only paths are computed here and checked for existence; nothing is read, started or changed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Location", "well_known"]


@dataclass(frozen=True)
class Location:
    """One config file a host reads.

    Attributes:
        path: the absolute file path.
        host: the host (one of :data:`~shadowcode.mcp.client.imports.formats.HOSTS` but ``generic``).
        scope: ``user`` or ``project``.
    """

    path: Path
    host: str
    scope: str


def _vscode_user(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library/Application Support/Code/User/mcp.json"
    return home / ".config/Code/User/mcp.json"


def well_known(home: Path, project: Path | None, codex_home: Path | None = None) -> list[Location]:
    """The hosts' config files that exist, project ones first (CW-01).

    Args:
        home: the user's home folder.
        project: the project folder, or None.
        codex_home: ``CODEX_HOME`` when set (default ``~/.codex``).

    Returns:
        Existing regular files among: ``<project>/.mcp.json`` (Claude Code),
        ``<project>/.cursor/mcp.json``, ``<project>/.vscode/mcp.json``,
        ``<project>/.codex/config.toml``, ``<project>/.gemini/settings.json``,
        ``<project>/.qwen/settings.json``, ``<project>/opencode.json``, ``<project>/kilo.json``,
        ``<project>/.kilo/kilo.json``, ``<project>/.zed/settings.json``; ``~/.claude.json``,
        ``~/.cursor/mcp.json``, the VS Code user ``mcp.json``, ``$CODEX_HOME/config.toml``,
        ``~/.gemini/settings.json``, ``~/.qwen/settings.json``, the Cline CLI's
        ``~/.cline/data/settings/cline_mcp_settings.json``,
        ``~/.config/opencode/opencode.json``, ``~/.config/kilo/kilo.json``,
        ``~/.continue/config.yaml``, ``~/.config/zed/settings.json`` and
        ``~/.codeium/windsurf/mcp_config.json``.
    """
    candidates: list[Location] = []
    if project is not None:
        candidates += [
            Location(project / ".mcp.json", "claude", "project"),
            Location(project / ".cursor" / "mcp.json", "cursor", "project"),
            Location(project / ".vscode" / "mcp.json", "vscode", "project"),
            Location(project / ".codex" / "config.toml", "codex", "project"),
            Location(project / ".gemini" / "settings.json", "gemini", "project"),
            Location(project / ".qwen" / "settings.json", "qwen", "project"),
            Location(project / "opencode.json", "opencode", "project"),
            Location(project / "kilo.json", "kilo", "project"),
            Location(project / ".kilo" / "kilo.json", "kilo", "project"),
            Location(project / ".zed" / "settings.json", "zed", "project"),
        ]
    config = home / ".config"
    candidates += [
        Location(home / ".claude.json", "claude", "user"),
        Location(home / ".cursor" / "mcp.json", "cursor", "user"),
        Location(_vscode_user(home), "vscode", "user"),
        Location((codex_home or home / ".codex") / "config.toml", "codex", "user"),
        Location(home / ".gemini" / "settings.json", "gemini", "user"),
        Location(home / ".qwen" / "settings.json", "qwen", "user"),
        Location(home / ".cline" / "data" / "settings" / "cline_mcp_settings.json", "cline", "user"),
        Location(config / "opencode" / "opencode.json", "opencode", "user"),
        Location(config / "kilo" / "kilo.json", "kilo", "user"),
        Location(home / ".continue" / "config.yaml", "continue", "user"),
        Location(config / "zed" / "settings.json", "zed", "user"),
        Location(home / ".codeium" / "windsurf" / "mcp_config.json", "windsurf", "user"),
    ]
    return [c for c in candidates if c.path.is_file()]
