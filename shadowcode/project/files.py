"""The one way to reach project content: confinement, non-blocking bounded reads, atomic writes.

A project may be someone else's repository, so nothing here trusts what a path names:

* **Confinement** (SRV-08): a user path is joined to the canonical root and every symlink in it
  is resolved; the result must be the root or lie beneath it (:func:`resolve_inside`). Project
  *content* (:func:`confine`) is narrower still: never inside the profile root
  (:func:`profile_root`, i.e. ``SHADOWCODE_HOME`` or ``~/.shadowcode``, which holds secrets and
  settings and is not project content even when it lies inside the workspace) and never inside
  a ``.git`` folder.
* **Reading** (:func:`read_regular`, SRV-19, CLI-03): the file is opened with
  ``O_RDONLY | O_NONBLOCK | O_CLOEXEC`` (and ``O_NOFOLLOW`` unless asked otherwise), then
  ``fstat`` on the open descriptor decides: only a regular file is read. A FIFO, a socket, a
  device or a folder is refused at once with a :class:`~shadowcode.errors.ToolError`; nothing
  blocks. At most ``max_bytes`` bytes are returned; past them the caller chooses between a
  clear error and a ``truncated`` flag.
* **Writing** (ENG-06): :func:`refuse_git_path` and :func:`replace_atomically` (temporary file
  in the same folder, then a rename), and :func:`current_sha256`, the content hash a rollback
  compares before restoring.

This module imports nothing of the project package, so every reader (inspection tools, test
detection, the agent's file tools, search, rollback, project MCP definitions) can use it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shadowcode.errors import ToolError
from shadowcode.profile_paths import home_dir

__all__ = [
    "FileContent",
    "canonical_root",
    "confine",
    "current_sha256",
    "in_profile_root",
    "is_inside",
    "profile_root",
    "read_optional",
    "read_regular",
    "refuse_git_path",
    "relative_posix",
    "replace_atomically",
    "resolve_inside",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC
_HASH_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class FileContent:
    """Bytes read from a regular file.

    Attributes:
        data: at most the ``max_bytes`` asked for, starting at the requested offset.
        truncated: True when the file holds more bytes after ``data``.
    """

    data: bytes
    truncated: bool


# --- confinement ---------------------------------------------------------------------------


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
        root: the project root (canonical or not).
        path: any path; symlinks in it are resolved before comparing.

    Returns:
        True when the resolved path is the root or a descendant of it.
    """
    real_root = canonical_root(root)
    real = Path(os.path.realpath(path))
    return real == real_root or real_root in real.parents


def resolve_inside(root: Path, rel: object, *, must_exist: bool = True) -> Path:
    """Resolve a user-given path against the project root, refusing anything outside it (SRV-08).

    Relative paths are joined to ``root``; absolute paths are accepted only when they land
    inside it. Symlinks are resolved before the check, so a link pointing out of the project
    is refused exactly like ``../``. This only says *where* a path lies; to read or write
    project content use :func:`confine`, which also keeps out the profile root and ``.git``.

    Args:
        root: the project root.
        rel: the path as the caller gave it (relative, or absolute inside the root).
        must_exist: when True (the default) a path that does not exist is refused.

    Returns:
        The canonical absolute path, guaranteed to be ``root`` or beneath it.

    Raises:
        ToolError: the path is not a string, is empty, holds a NUL byte, cannot be resolved,
            leaves the project, or does not exist while ``must_exist`` is set.
    """
    if not isinstance(rel, str):
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
        root: the project root.
        path: a canonical path at or beneath the canonical root.

    Returns:
        The relative path as a POSIX string.
    """
    rel = path.relative_to(canonical_root(root))
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


def profile_root() -> Path:
    """The canonical profile root: ``$SHADOWCODE_HOME`` when set, else ``~/.shadowcode``.

    Read on every call, so a changed environment is seen at once.

    Returns:
        The absolute path with symlinks resolved (it need not exist).
    """
    return Path(os.path.realpath(home_dir()))


def in_profile_root(path: Path, profile: Path | None = None) -> bool:
    """Tell whether a canonical ``path`` is the profile root or lies beneath it.

    Args:
        path: an absolute path with symlinks already resolved.
        profile: the canonical profile root; :func:`profile_root` when None.

    Returns:
        True when ``path`` is the profile root or inside it.
    """
    home = profile_root() if profile is None else profile
    return path == home or home in path.parents


def confine(root: Path, rel: str, *, must_exist: bool = True) -> Path:
    """Resolve a user-given path to project content, or refuse it (SRV-08, SRV-19).

    Project content is a path inside the project (symlinks resolved, as
    :func:`resolve_inside`), outside the profile root and outside any ``.git`` folder (any
    letter case). Every read, listing, search and write of the project goes through here.

    Args:
        root: the project root.
        rel: the path as the caller gave it.
        must_exist: when True (the default) a path that does not exist is refused.

    Returns:
        The canonical absolute path.

    Raises:
        ToolError: as :func:`resolve_inside`; or the resolved path is inside the profile root
            or inside ``.git``.
    """
    resolved = resolve_inside(root, rel, must_exist=must_exist)
    if in_profile_root(resolved):
        raise ToolError(
            f"the path is inside the profile folder (SHADOWCODE_HOME), which is never project content: {rel}",
            path=rel,
        )
    parts = resolved.relative_to(canonical_root(root)).parts
    if any(part.casefold() == ".git" for part in parts):
        raise ToolError(f"the path is inside .git, which is never project content: {rel}", path=rel)
    return resolved


# --- reading -------------------------------------------------------------------------------


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a plain file"


def _not_regular(label: str, mode: int) -> ToolError:
    return ToolError(f"{label} is not a regular file ({_kind(mode)}); only regular files are read", path=label)


def _open_regular(path: Path, *, follow_symlinks: bool, label: str) -> int | None:
    """Open ``path`` without blocking and return the descriptor of a regular file, or None if absent."""
    flags = _READ_FLAGS if follow_symlinks else _READ_FLAGS | _NOFOLLOW
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        # A socket cannot be opened (ENXIO) and a final symlink under O_NOFOLLOW gives ELOOP:
        # name what is there rather than the bare errno text.
        if exc.errno in (errno.ENXIO, errno.ELOOP, errno.ENODEV, errno.EOPNOTSUPP):
            with contextlib.suppress(OSError):
                info = os.stat(path) if follow_symlinks else os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    raise _not_regular(label, info.st_mode) from exc
        raise ToolError(f"cannot read {label}: {exc.strerror}", path=label) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise ToolError(f"cannot read {label}: {exc.strerror}", path=label) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(label, mode)
    return fd


def read_regular(
    path: Path,
    *,
    max_bytes: int,
    offset: int = 0,
    truncate: bool = False,
    follow_symlinks: bool = False,
    label: str | None = None,
) -> FileContent | None:
    """Read a regular file without ever blocking, at most ``max_bytes`` bytes (SRV-19, ENG-06, CLI-03).

    The file is opened with ``O_RDONLY | O_NONBLOCK | O_CLOEXEC`` (plus ``O_NOFOLLOW`` unless
    ``follow_symlinks``) and checked with ``fstat`` on the open descriptor, so a FIFO, socket
    or device swapped in at the last moment is refused, never waited on. The path must
    already be confined (see :func:`confine`); this function does not check where it lies.

    Args:
        path: an absolute path.
        max_bytes: bytes to return at most, 0 or more.
        offset: byte offset to start at, 0 or more; past the end gives empty data.
        truncate: when True, more than ``max_bytes`` bytes set ``truncated``; when False they
            are an error.
        follow_symlinks: open through a final symlink (and check what it leads to).
        label: how the file is named in error messages; the file name when None.

    Returns:
        A :class:`FileContent`, or None when nothing exists at ``path``.

    Raises:
        ToolError: the path is not a regular file (names what it is), cannot be read, or
            holds more than ``max_bytes`` bytes while ``truncate`` is False.
    """
    shown = path.name if label is None else label
    if max_bytes < 0 or offset < 0:
        raise ToolError("max_bytes and offset must be 0 or more", max_bytes=max_bytes, offset=offset)
    fd = _open_regular(path, follow_symlinks=follow_symlinks, label=shown)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if offset:
                handle.seek(offset)
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror}", path=shown) from exc
    if len(data) <= max_bytes:
        return FileContent(data=data, truncated=False)
    if not truncate:
        raise ToolError(f"{shown} is larger than {max_bytes} bytes", path=shown, limit=max_bytes)
    return FileContent(data=data[:max_bytes], truncated=True)


def read_optional(root: Path, rel: str, *, max_bytes: int) -> FileContent | None:
    """Read up to ``max_bytes`` of a project file if it is readable content, else None (SRV-19).

    Meant for probing optional files (manifests, README, test configuration): anything that
    is not a readable regular file of project content (:func:`confine`) gives None rather
    than an error, and a longer file comes back cut with ``truncated`` set.

    Args:
        root: the project root.
        rel: the file's path relative to the root.
        max_bytes: bytes to read at most, 0 or more (0 only tells the file is there).

    Returns:
        A :class:`FileContent`, or None.
    """
    try:
        path = confine(root, rel, must_exist=True)
        return read_regular(path, max_bytes=max_bytes, truncate=True, label=rel)
    except ToolError:
        return None


def current_sha256(path: Path, *, max_bytes: int) -> tuple[bool, str | None]:
    """Hash what a path holds now, the way a rollback compares it (ENG-06).

    Args:
        path: an absolute, confined path; a final symlink is not followed.
        max_bytes: largest file hashed; a larger one cannot be content a task wrote.

    Returns:
        ``(True, sha256 hex)`` for a regular file of at most ``max_bytes`` bytes,
        ``(True, None)`` when nothing is there, and ``(False, None)`` for anything else (a
        link, a FIFO, a folder, a larger file, an unreadable one).
    """
    try:
        fd = _open_regular(path, follow_symlinks=False, label=path.name)
    except ToolError:
        return False, None
    if fd is None:
        return True, None
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(min(_HASH_CHUNK_BYTES, max_bytes + 1 - size)):
                size += len(chunk)
                if size > max_bytes:
                    return False, None
                digest.update(chunk)
    except OSError:
        return False, None
    return True, digest.hexdigest()


# --- writing -------------------------------------------------------------------------------


def refuse_git_path(rel: str) -> None:
    """Refuse a project-relative path inside any ``.git`` folder, or the project root itself (ENG-06).

    Args:
        rel: a POSIX path relative to the project root.

    Raises:
        ToolError: the path is the root or has a ``.git`` component (any letter case).
    """
    parts = PurePosixPath(rel).parts
    if rel in ("", ".") or not parts:
        raise ToolError("the project folder itself cannot be written", path=rel)
    if any(part.casefold() == ".git" for part in parts):
        raise ToolError(f"files under .git are never written: {rel}", path=rel)


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename (ENG-06).

    A reader sees the old content or the new one, never a mix. An existing file keeps its
    permission bits; a new one gets the usual mode under the process umask.

    Args:
        path: an absolute, already confined path whose folder exists.
        data: the complete new content.

    Raises:
        ToolError: the folder is missing or the write fails (the temporary file is removed).
    """
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC | _NOFOLLOW, 0o666)
    except OSError as exc:
        raise ToolError(f"cannot write {path.name}: {exc.strerror}", path=str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ToolError(f"cannot write {path.name}: {exc.strerror}", path=str(path)) from exc
