"""The bounded walk of a project (SRV-19), and the path helpers it shares with every tool.

Whether a user-supplied path stays inside the project, and whether it is project content at
all, is decided in :mod:`shadowcode.project.files` (SRV-08). The walk never descends into a linked folder, so nothing
outside the root is ever listed, and never enters the profile root when it lies inside the
project.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shadowcode.errors import ConfigError, ToolError
from shadowcode.limits import UNDERSTAND_ENTRIES_MAX, UNDERSTAND_FILES_MAX
from shadowcode.project.files import (
    canonical_root,
    confine,
    in_profile_root,
    profile_root,
)

__all__ = ["SKIPPED_DIR_NAMES", "ProjectFile", "ProjectWalk", "canonical_project", "walk_files"]

SKIPPED_DIR_NAMES: frozenset[str] = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"})
"""Folder names a project walk never enters; ``*.egg-info`` folders and hidden folders are
skipped as well, except ``.shadowcode``."""

_KEPT_HIDDEN_DIRS: frozenset[str] = frozenset({".shadowcode"})


@dataclass(frozen=True)
class ProjectFile:
    """One file met by a project walk.

    Attributes:
        path: POSIX path relative to the root.
        size_bytes: size from ``lstat`` (a link's own size for a symlink).
        is_symlink: True for a symbolic link; the walk never follows it.
    """

    path: str
    size_bytes: int
    is_symlink: bool


@dataclass(frozen=True)
class ProjectWalk:
    """What a bounded walk found.

    Attributes:
        files: files in breadth-first order, names sorted within each folder.
        truncated: True when the file or entry budget stopped the walk early.
    """

    files: tuple[ProjectFile, ...]
    truncated: bool


def canonical_project(path: Path | str) -> Path:
    """Resolve a workspace to its canonical absolute path (symlinks resolved) (ENG-02).

    Every tool call canonicalizes its project again (the folder may have moved), so the usual
    case asks the kernel once: the folder opened ``O_PATH | O_DIRECTORY`` and its path read
    back from ``/proc/self/fd``. Where that is not possible (no ``/proc``, a folder removed
    meanwhile, any error) the path is resolved component by component as ``os.path.realpath``
    does, which also words the errors.

    Raises:
        ConfigError: the path does not exist or is not a directory.
    """
    raw = os.path.expanduser(str(path))
    found = _kernel_path(raw)
    if found is not None:
        return Path(found)
    return _resolved_folder(Path(raw))


def _kernel_path(raw: str) -> str | None:
    """The canonical path of the folder ``raw`` as the kernel names it, or None when it cannot say."""
    try:
        fd = os.open(raw, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    # An unlinked folder reads back as "<path> (deleted)"; anything unexpected goes the long way.
    return found if found.startswith("/") and not found.endswith(" (deleted)") else None


def _resolved_folder(raw: Path) -> Path:
    try:
        resolved = raw.resolve(strict=True)
    except (FileNotFoundError, RuntimeError) as exc:
        raise ConfigError(f"workspace {str(raw)!r} does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"workspace {str(raw)!r} cannot be read: {exc.strerror}") from exc
    if not resolved.is_dir():
        raise ConfigError(f"workspace {str(raw)!r} is not a directory")
    return resolved


def _skip_dir(name: str) -> bool:
    if name in SKIPPED_DIR_NAMES or name.endswith(".egg-info"):
        return True
    return name.startswith(".") and name not in _KEPT_HIDDEN_DIRS


def walk_files(
    root: Path,
    *,
    under: str = "",
    files_max: int = UNDERSTAND_FILES_MAX,
    entries_max: int = UNDERSTAND_ENTRIES_MAX,
) -> ProjectWalk:
    """Walk the project breadth-first without following links, within two budgets.

    Skips ``.git``, ``node_modules``, virtual environments, ``__pycache__``, ``dist``,
    ``build``, hidden folders other than ``.shadowcode``, and the profile root wherever it
    lies (SRV-19). Linked folders are listed nowhere and never entered; linked files are
    reported as links.

    Args:
        root: the canonical project root.
        under: a folder relative to the root to start from; ``""`` for the root. A start
            folder that is not project content (outside the project, in the profile root or
            in ``.git``) or is missing gives an empty walk.
        files_max: files reported at most; one more sets ``truncated``.
        entries_max: directory entries examined at most (skipped ones included).

    Returns:
        A :class:`ProjectWalk`.
    """
    real_root = canonical_root(root)
    home = profile_root()
    try:
        start = confine(real_root, under, must_exist=True) if under else real_root
    except ToolError:
        return ProjectWalk(files=(), truncated=False)
    if in_profile_root(start, home):
        return ProjectWalk(files=(), truncated=False)
    files: list[ProjectFile] = []
    queue: deque[Path] = deque([start])
    entries_seen = 0
    while queue:
        folder = queue.popleft()
        try:
            with os.scandir(folder) as listing:
                entries: list[os.DirEntry[str]] = []
                for entry in listing:
                    entries_seen += 1
                    if entries_seen > entries_max:
                        break
                    entries.append(entry)
        except OSError:
            continue
        entries.sort(key=lambda e: e.name)
        for entry in entries:
            try:
                is_link = entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    if not _skip_dir(entry.name) and not in_profile_root(Path(entry.path), home):
                        queue.append(Path(entry.path))
                    continue
                if is_link and entry.is_dir():
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not is_link and not stat.S_ISREG(info.st_mode):
                continue
            if len(files) >= files_max:
                return ProjectWalk(files=tuple(files), truncated=True)
            files.append(
                ProjectFile(
                    path=PurePosixPath(*Path(entry.path).relative_to(real_root).parts).as_posix(),
                    size_bytes=info.st_size,
                    is_symlink=is_link,
                )
            )
        if entries_seen > entries_max:
            return ProjectWalk(files=tuple(files), truncated=True)
    return ProjectWalk(files=tuple(files), truncated=False)
