"""Paths inside a project: resolving user input, bounded reads and a bounded walk.

Every inspection tool receives the canonical project root (symlinks already resolved) and
user-supplied relative paths. This module is the single place that decides whether such a
path stays inside the project: the path is joined to the root, every symlink is resolved,
and the result must be the root itself or lie beneath it (SRV-08, SRV-13, SRV-19). The
walk never descends into a linked folder, so nothing outside the root is ever listed.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shadowcode.errors import ToolError
from shadowcode.limits import UNDERSTAND_ENTRIES_MAX, UNDERSTAND_FILES_MAX, UNDERSTAND_READ_MAX_BYTES

__all__ = [
    "SKIPPED_DIR_NAMES",
    "ProjectFile",
    "ProjectWalk",
    "canonical_root",
    "is_inside",
    "read_text_inside",
    "relative_posix",
    "resolve_inside",
    "walk_files",
]

SKIPPED_DIR_NAMES: frozenset[str] = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"})
"""Folder names a project walk never enters; ``*.egg-info`` folders and hidden folders are
skipped as well, except ``.shadowcode``."""

_KEPT_HIDDEN_DIRS: frozenset[str] = frozenset({".shadowcode"})


def canonical_root(root: Path) -> Path:
    """Return ``root`` with every symlink resolved, as an absolute path.

    Args:
        root: the project folder.

    Returns:
        The canonical absolute path.
    """
    return Path(os.path.realpath(root))


def is_inside(root: Path, path: Path) -> bool:
    """Tell whether ``path`` is ``root`` or lies beneath it, comparing canonical forms.

    Args:
        root: the canonical project root.
        path: any path; symlinks in it are resolved before comparing.

    Returns:
        True when the resolved path is the root or a descendant of it.
    """
    real_root = canonical_root(root)
    real = Path(os.path.realpath(path))
    return real == real_root or real_root in real.parents


def resolve_inside(root: Path, rel: str, *, must_exist: bool = True) -> Path:
    """Resolve a user-given path against the project root, refusing anything outside it.

    Relative paths are joined to ``root``; absolute paths are accepted only when they land
    inside it. Symlinks are resolved before the check, so a link pointing out of the
    project is refused exactly like ``../`` (SRV-08, SRV-13).

    Args:
        root: the canonical project root.
        rel: the path as the caller gave it (relative, or absolute inside the root).
        must_exist: when True (the default) a path that does not exist is refused.

    Returns:
        The canonical absolute path, guaranteed to be ``root`` or beneath it.

    Raises:
        ToolError: the path is not a string, is empty, holds a NUL byte, cannot be
            resolved, leaves the project, or does not exist while ``must_exist`` is set.
    """
    if not isinstance(rel, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError("the path must be a string", path=repr(rel))
    if rel == "":
        raise ToolError("the path is empty")
    if "\x00" in rel:
        raise ToolError("the path contains a NUL byte", path=rel)
    real_root = canonical_root(root)
    candidate = Path(rel)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    try:
        resolved = Path(os.path.realpath(candidate, strict=False))
    except (OSError, RuntimeError, ValueError) as exc:
        raise ToolError(f"the path cannot be resolved: {rel}", path=rel) from exc
    if resolved != real_root and real_root not in resolved.parents:
        raise ToolError(f"the path is outside the project: {rel}", path=rel)
    if must_exist and not resolved.exists():
        raise ToolError(f"no such file in the project: {rel}", path=rel)
    return resolved


def relative_posix(root: Path, path: Path) -> str:
    """Return ``path`` relative to ``root`` with forward slashes (``"."`` for the root).

    Args:
        root: the canonical project root.
        path: a canonical path at or beneath ``root``.

    Returns:
        The relative path as a POSIX string.
    """
    rel = path.relative_to(canonical_root(root))
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


def read_text_inside(root: Path, rel: str, *, max_bytes: int = UNDERSTAND_READ_MAX_BYTES) -> tuple[str, bool] | None:
    """Read at most ``max_bytes`` of a regular file inside the project, as UTF-8 text.

    Undecodable bytes are replaced. A missing file, a folder, or a path (link) that
    leaves the project gives ``None`` rather than an error, because callers use this to
    probe for optional manifests (SRV-19).

    Args:
        root: the canonical project root.
        rel: the file's path relative to the root.
        max_bytes: bytes to read at most.

    Returns:
        ``(text, complete)`` where ``complete`` is False when the file holds more than
        ``max_bytes`` bytes; or None when there is no readable regular file inside the root.
    """
    try:
        path = resolve_inside(root, rel, must_exist=True)
    except ToolError:
        return None
    try:
        with path.open("rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    complete = len(data) <= max_bytes
    return data[:max_bytes].decode("utf-8", errors="replace"), complete


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
    ``build`` and hidden folders other than ``.shadowcode`` (SRV-19). Linked folders are
    listed nowhere and never entered; linked files are reported as links.

    Args:
        root: the canonical project root.
        under: a folder relative to the root to start from; ``""`` for the root. A start
            folder outside the project or missing gives an empty walk.
        files_max: files reported at most; one more sets ``truncated``.
        entries_max: directory entries examined at most (skipped ones included).

    Returns:
        A :class:`ProjectWalk`.
    """
    real_root = canonical_root(root)
    if under:
        try:
            start = resolve_inside(real_root, under, must_exist=True)
        except ToolError:
            return ProjectWalk(files=(), truncated=False)
    else:
        start = real_root
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
                    if not _skip_dir(entry.name):
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
