"""Reading MCP server definition files: the project's own and a file given to ``mcp add`` (CLI-01, CLI-03, CLI-10).

Project definitions are the files directly inside ``.shadowcode/mcp/`` or ``.shadow/mcp/`` of
the project (``.json``, ``.yaml`` or ``.yml``; sub-folders are not read and a link must not
lead outside its folder); their id is ``project:<relative path>``. Every file is read through
:func:`shadowcode.project.files.read_regular`: opened without blocking, a regular file
(checked on the open descriptor) of at most MCP_DEFINITION_MAX_BYTES. The bytes are
validated by :func:`shadowcode.mcp.client.definitions.parse_definition`. Reading definitions
starts nothing and contacts nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from shadowcode.errors import ConfigError, ToolError
from shadowcode.limits import MCP_DEFINITION_MAX_BYTES
from shadowcode.mcp.client.definitions import (
    PROJECT_FOLDERS,
    DefinitionProblem,
    ServerDefinition,
    parse_definition,
    sha256_hex,
)
from shadowcode.project.files import read_regular

__all__ = ["project_definitions", "read_definition_file", "read_project_definition"]

_SUFFIXES = (".json", ".yaml", ".yml")


def _format_of(name: str) -> str:
    return "json" if name.lower().endswith(".json") else "yaml"


def read_definition_file(path: Path) -> tuple[bytes, str]:
    """Read a definition file given to ``mcp add``: ``(bytes, format)`` (CLI-01).

    Raises:
        ConfigError: missing, not a regular file, unreadable or over MCP_DEFINITION_MAX_BYTES.
    """
    data = _read_regular(path, str(path))
    return data, _format_of(path.name)


def _read_regular(path: Path, source: str) -> bytes:
    """The bytes of a definition file, through the one non-blocking bounded reader (CLI-03)."""
    try:
        found = read_regular(path, max_bytes=MCP_DEFINITION_MAX_BYTES, follow_symlinks=True, label=source)
    except ToolError as exc:
        raise ConfigError(exc.message, **exc.fields) from exc
    if found is None:
        raise ConfigError(f"{source}: no such file")
    return found.data


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _load_project_file(project: Path, folder_real: Path, entry: Path) -> ServerDefinition | DefinitionProblem:
    rel = entry.relative_to(project).as_posix()
    def_id = f"project:{rel}"
    try:
        real = entry.resolve(strict=True)
    except (OSError, RuntimeError):
        return DefinitionProblem(def_id, rel, None, f"{rel}: a broken or looping link")
    if real.parent != folder_real:
        return DefinitionProblem(def_id, rel, None, f"{rel}: a link leading outside {entry.parent.name}/ is refused")
    try:
        data = _read_regular(real, rel)
    except ConfigError as exc:
        return DefinitionProblem(def_id, rel, None, exc.message)
    digest = sha256_hex(data)
    try:
        spec = parse_definition(data, rel, fmt=_format_of(entry.name))
    except ConfigError as exc:
        return DefinitionProblem(def_id, rel, digest, exc.message)
    return ServerDefinition(id=def_id, scope="project", path=rel, sha256=digest, spec=spec)


def _folder(project: Path, rel_folder: str) -> Path | None:
    folder = project / rel_folder
    if not folder.is_dir():
        return None
    real = folder.resolve()
    return real if _inside(real, project) else None


def project_definitions(project: Path) -> list[ServerDefinition | DefinitionProblem]:
    """Every definition file directly inside the project's definition folders, by id (CLI-03).

    Args:
        project: the canonical project path.

    Returns:
        Valid definitions and problems (invalid, unreadable or escaping files), sorted by id.
        A definition folder that itself leads outside the project is ignored.
    """
    found: list[ServerDefinition | DefinitionProblem] = []
    for rel_folder in PROJECT_FOLDERS:
        folder_real = _folder(project, rel_folder)
        if folder_real is None:
            continue
        folder = project / rel_folder
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(".") or not name.lower().endswith(_SUFFIXES):
                continue
            entry = folder / name
            if entry.is_dir():
                continue
            found.append(_load_project_file(project, folder_real, entry))
    return sorted(found, key=lambda d: d.id)


def read_project_definition(project: Path, def_id: str) -> ServerDefinition:
    """Re-read one project definition by id, now (CLI-06, CLI-10).

    Raises:
        ConfigError: not a project id, the file is gone, escapes its folder, or is invalid.
    """
    if not def_id.startswith("project:"):
        raise ConfigError(f"{def_id!r} is not a project definition id")
    rel = def_id.removeprefix("project:")
    parent = rel.rpartition("/")[0]
    if parent not in PROJECT_FOLDERS or not rel.lower().endswith(_SUFFIXES):
        raise ConfigError(f"{def_id!r} does not name a file directly in {' or '.join(PROJECT_FOLDERS)}")
    folder_real = _folder(project, parent)
    entry = project / rel
    if folder_real is None or not (entry.exists() or entry.is_symlink()):
        raise ConfigError(f"{rel}: the definition file is missing")
    loaded = _load_project_file(project, folder_real, entry)
    if isinstance(loaded, DefinitionProblem):
        raise ConfigError(loaded.error)
    return loaded
