"""The native file tools of agent tasks: read, list, search, write, edit (ENG-04, ENG-06).

Each tool is a plain function over the canonical project root. Every user-given path goes
through :func:`shadowcode.project.files.confine`, so ``..``, absolute paths elsewhere,
symlinks that lead out of the project, the profile root (even inside the workspace) and
``.git`` are refused alike; results name paths relative to the root, after symlinks inside
the project are resolved. Files are opened without blocking and only regular files are read
(:func:`shadowcode.project.files.read_regular`), so a FIFO or device never stalls a task.

Writes (``write_file``, ``edit_file``) never touch ``.git``, need an existing folder inside
the project for a new file, are recorded by :meth:`Checkpoints.record_write` first, and then
replace the file atomically (temporary file and rename). Every size is bounded by a limit in
:mod:`shadowcode.limits`. Whether a task may write at all (Build versus Plan and Review, the
permission level) is decided by the caller.

Given the task's :class:`~shadowcode.agent.observations.Observations` (CLI-10), reads and
writes are recorded there, and ``edit_file`` refuses a file whose content changed since the
task read it, or any file the task read before an MCP action ran, until it is read again.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from shadowcode.agent.observations import Observations
from shadowcode.agent.ports import WriteLog
from shadowcode.errors import ToolError
from shadowcode.limits import (
    FILE_LIST_ENTRIES_MAX,
    FILE_READ_MAX_BYTES,
    FILE_WRITE_MAX_BYTES,
    SEARCH_FILE_MAX_BYTES,
    SEARCH_FILES_MAX,
    SEARCH_LINE_MAX_CHARS,
    SEARCH_MATCHES_MAX,
    SEARCH_PATTERN_MAX_CHARS,
    UNDERSTAND_ENTRIES_MAX,
)
from shadowcode.project.files import (
    FileContent,
    canonical_root,
    confine,
    in_profile_root,
    profile_root,
    read_regular,
    refuse_git_path,
    relative_posix,
    replace_atomically,
)
from shadowcode.project.paths import walk_files

__all__ = ["edit_file", "list_files", "read_file", "search_files", "write_file"]


def read_file(
    root: Path,
    path: str,
    *,
    offset: object = 0,
    max_bytes: object = FILE_READ_MAX_BYTES,
    observations: Observations | None = None,
) -> dict[str, Any]:
    """Read part of a regular file of the project as UTF-8 text (ENG-04, CLI-10).

    A read that stops early never ends inside a UTF-8 sequence, so ``offset + bytes`` is
    where the next read starts.

    Args:
        root: the canonical project root.
        path: the file, relative to the root (or absolute inside it).
        offset: byte offset to start at, 0 or more; past the end gives empty content.
        max_bytes: bytes to return at most, 1..``FILE_READ_MAX_BYTES``.
        observations: the task's observations; the whole file's content is recorded there
            (files larger than ``FILE_WRITE_MAX_BYTES``, which cannot be edited, are not).

    Returns:
        ``{"path": str, "content": str, "bytes": int, "truncated": bool}``: ``bytes`` is the
        number of file bytes ``content`` holds; ``truncated`` is True when more follows.
        Undecodable bytes are replaced.

    Raises:
        ToolError: the path is not project content (outside, profile root, ``.git``), does
            not exist, is not a regular file, or ``offset`` / ``max_bytes`` is out of range.
    """
    if not isinstance(offset, int) or offset < 0:
        raise ToolError("offset must be a whole number, 0 or more", offset=offset)
    if not isinstance(max_bytes, int) or not 1 <= max_bytes <= FILE_READ_MAX_BYTES:
        raise ToolError(f"max_bytes must be between 1 and {FILE_READ_MAX_BYTES}", max_bytes=max_bytes)
    real_root = canonical_root(root)
    target = confine(real_root, path, must_exist=True)
    rel = relative_posix(real_root, target)
    found = _read_observed(target, rel, offset, max_bytes, observations)
    data = _whole_utf8(found.data) if found.truncated else found.data
    return {
        "path": rel,
        "content": data.decode("utf-8", errors="replace"),
        "bytes": len(data),
        "truncated": found.truncated,
    }


def _read_observed(
    target: Path, rel: str, offset: int, max_bytes: int, observations: Observations | None
) -> FileContent:
    """Read ``max_bytes`` from ``offset``; with ``observations``, from one read of the whole file it records."""
    if observations is not None:
        whole = read_regular(target, max_bytes=FILE_WRITE_MAX_BYTES, truncate=True, label=rel)
        if whole is None:
            raise ToolError(f"no such file in the project: {rel}", path=rel)
        if not whole.truncated:
            observations.record(rel, whole.data)
            part = whole.data[offset : offset + max_bytes + 1]
            return FileContent(data=part[:max_bytes], truncated=len(part) > max_bytes)
        observations.forget(rel)
    found = read_regular(target, max_bytes=max_bytes, offset=offset, truncate=True, label=rel)
    if found is None:
        raise ToolError(f"no such file in the project: {rel}", path=rel)
    return found


def list_files(root: Path, path: str = ".") -> dict[str, Any]:
    """List one folder of the project, names sorted, without following links (ENG-04).

    Args:
        root: the canonical project root.
        path: the folder, relative to the root; ``"."`` for the root.

    Returns:
        ``{"path": str, "entries": [{"name": str, "type": "file"|"dir"|"symlink"|"other",
        "size": int | None}], "truncated": bool}``; ``size`` is given for files and links.
        At most ``FILE_LIST_ENTRIES_MAX`` entries; more set ``truncated``. The profile root
        is never listed, not even by name.

    Raises:
        ToolError: the path is not project content, does not exist, or is not a folder.
    """
    real_root = canonical_root(root)
    target = confine(real_root, path, must_exist=True)
    rel = relative_posix(real_root, target)
    if not target.is_dir():
        raise ToolError(f"{rel} is not a folder", path=rel)
    home = profile_root()
    found: list[os.DirEntry[str]] = []
    complete = True
    try:
        with os.scandir(target) as listing:
            for entry in listing:
                if len(found) >= UNDERSTAND_ENTRIES_MAX:
                    complete = False
                    break
                if not in_profile_root(Path(entry.path), home):
                    found.append(entry)
    except OSError as exc:
        raise ToolError(f"cannot list {rel}: {exc.strerror}", path=rel) from exc
    found.sort(key=lambda e: e.name)
    entries: list[dict[str, Any]] = []
    for entry in found[:FILE_LIST_ENTRIES_MAX]:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            kind, size = "symlink", info.st_size
        elif stat.S_ISDIR(info.st_mode):
            kind, size = "dir", None
        elif stat.S_ISREG(info.st_mode):
            kind, size = "file", info.st_size
        else:
            kind, size = "other", None
        entries.append({"name": entry.name, "type": kind, "size": size})
    return {"path": rel, "entries": entries, "truncated": not complete or len(found) > FILE_LIST_ENTRIES_MAX}


def search_files(root: Path, pattern: object, path: str = ".", *, regex: bool = False) -> dict[str, Any]:
    """Find lines holding a text (or matching a regular expression) in the project's files (ENG-04).

    Files are visited breadth-first in name order, skipping ``.git``, the profile root,
    dependency and build folders and hidden folders (as the project walk does), links,
    anything but regular files, files larger than ``SEARCH_FILE_MAX_BYTES`` and files that
    look binary (a NUL byte).

    Args:
        root: the canonical project root.
        pattern: the text to find, 1..``SEARCH_PATTERN_MAX_CHARS`` characters; with ``regex``,
            a Python regular expression searched within each line.
        path: a folder or one file to search, relative to the root.
        regex: treat ``pattern`` as a regular expression.

    Returns:
        ``{"matches": [{"path": str, "line": int (1-based), "text": str}], "truncated": bool}``;
        ``text`` is cut to ``SEARCH_LINE_MAX_CHARS``. ``truncated`` is set when more than
        ``SEARCH_MATCHES_MAX`` lines match or more than ``SEARCH_FILES_MAX`` files were in scope.

    Raises:
        ToolError: an empty or too long pattern, an invalid regular expression, or a path
            that is not project content or does not exist.
    """
    if not isinstance(pattern, str) or pattern == "":
        raise ToolError("the search pattern is empty")
    if len(pattern) > SEARCH_PATTERN_MAX_CHARS:
        raise ToolError(f"the search pattern is longer than {SEARCH_PATTERN_MAX_CHARS} characters")
    compiled: re.Pattern[str] | None = None
    if regex:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from exc
    real_root = canonical_root(root)
    target = confine(real_root, path, must_exist=True)
    rel = relative_posix(real_root, target)
    if target.is_dir():
        walk = walk_files(real_root, under="" if rel == "." else rel, files_max=SEARCH_FILES_MAX)
        candidates = [f.path for f in walk.files if not f.is_symlink]
        truncated = walk.truncated
    else:
        candidates, truncated = [rel], False
    matches: list[dict[str, Any]] = []
    for file_rel in candidates:
        text = _searchable_text(real_root / file_rel)
        if text is None:
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            line = line.removesuffix("\r")
            hit = compiled.search(line) is not None if compiled is not None else pattern in line
            if not hit:
                continue
            if len(matches) >= SEARCH_MATCHES_MAX:
                return {"matches": matches, "truncated": True}
            matches.append({"path": file_rel, "line": number, "text": line[:SEARCH_LINE_MAX_CHARS]})
    return {"matches": matches, "truncated": truncated}


def write_file(
    root: Path,
    path: str,
    content: object,
    *,
    checkpoints: WriteLog,
    task_id: str,
    observations: Observations | None = None,
) -> dict[str, Any]:
    """Create or overwrite a project file with ``content``, checkpointed first (ENG-04, ENG-06).

    Args:
        root: the canonical project root.
        path: the file, relative to the root; a new file's folder must already exist.
        content: the complete new text, written as UTF-8, at most ``FILE_WRITE_MAX_BYTES``.
        checkpoints: where the write is recorded before the file changes.
        task_id: the writing task (of this project).
        observations: the task's observations; the written content is recorded there (CLI-10).

    Returns:
        ``{"path": str, "bytes": int, "created": bool}`` (path relative to the root).

    Raises:
        ToolError: the path is not project content (outside, profile root, ``.git``), is a
            folder or another non-regular file, its folder is missing, or a size limit is
            exceeded.
        NotFound: the task does not exist in this project.
    """
    if not isinstance(content, str):
        raise ToolError("content must be a string")
    data = _utf8(content)
    if len(data) > FILE_WRITE_MAX_BYTES:
        raise ToolError(f"the content is larger than {FILE_WRITE_MAX_BYTES} bytes", limit=FILE_WRITE_MAX_BYTES)
    real_root, target, rel = _writable(root, path)
    created = not os.path.lexists(target)
    _write(real_root, target, rel, data, checkpoints=checkpoints, task_id=task_id)
    if observations is not None:
        observations.record(rel, data)
    return {"path": rel, "bytes": len(data), "created": created}


def edit_file(
    root: Path,
    path: str,
    old: object,
    new: object,
    *,
    checkpoints: WriteLog,
    task_id: str,
    observations: Observations | None = None,
) -> dict[str, Any]:
    """Replace the one occurrence of ``old`` with ``new`` in a UTF-8 project file (ENG-04, ENG-06, CLI-10).

    Args:
        root: the canonical project root.
        path: an existing file, relative to the root.
        old: the exact text to replace; it must occur exactly once.
        new: the replacement text.
        checkpoints: where the write is recorded before the file changes.
        task_id: the editing task (of this project).
        observations: the task's observations: a file the task read is edited only while
            its observation is fresh and the content is unchanged since; the result is
            recorded there.

    Returns:
        ``{"path": str, "replacements": 1}``.

    Raises:
        ToolError: the path leaves the project, lies under ``.git`` or is missing; the file
            is not UTF-8; ``old`` is empty, absent or occurs more than once; the file
            before or after the edit is larger than ``FILE_WRITE_MAX_BYTES``; or the file
            changed since the task read it, or an MCP action ran since (read it again first).
        NotFound: the task does not exist in this project.
    """
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError("old and new must be strings")
    if old == "":
        raise ToolError("old must not be empty")
    real_root, target, rel = _writable(root, path)
    current = read_regular(target, max_bytes=FILE_WRITE_MAX_BYTES, label=rel)
    if current is None:
        raise ToolError(f"no such file in the project: {rel}", path=rel)
    if observations is not None:
        observations.check_edit(rel, current.data)
    try:
        text = current.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{rel} is not UTF-8 text", path=rel) from exc
    count = text.count(old)
    if count != 1:
        where = "does not occur" if count == 0 else f"occurs {count} times"
        raise ToolError(f"the text to replace {where} in {rel}; it must occur exactly once", path=rel, count=count)
    data = _utf8(text.replace(old, new, 1))
    if len(data) > FILE_WRITE_MAX_BYTES:
        raise ToolError(f"the edited file would be larger than {FILE_WRITE_MAX_BYTES} bytes", path=rel)
    _write(real_root, target, rel, data, checkpoints=checkpoints, task_id=task_id)
    if observations is not None:
        observations.record(rel, data)
    return {"path": rel, "replacements": 1}


def _writable(root: Path, path: str) -> tuple[Path, Path, str]:
    """Resolve a write target: project content, not under .git, in an existing folder, not a folder."""
    real_root = canonical_root(root)
    target = confine(real_root, path, must_exist=False)
    rel = relative_posix(real_root, target)
    refuse_git_path(rel)
    if not target.parent.is_dir():
        raise ToolError(f"the folder of {rel} does not exist", path=rel)
    if target.is_dir():
        raise ToolError(f"{rel} is a folder", path=rel)
    return real_root, target, rel


def _write(real_root: Path, target: Path, rel: str, data: bytes, *, checkpoints: WriteLog, task_id: str) -> None:
    change_id = checkpoints.record_write(real_root, task_id, rel, data)
    try:
        replace_atomically(target, data)
    except ToolError:
        checkpoints.forget_write(change_id)
        raise


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError("the text holds characters that cannot be written as UTF-8 (lone surrogates)") from exc


def _whole_utf8(data: bytes) -> bytes:
    """Drop an incomplete UTF-8 sequence at the end of ``data`` (at most three bytes)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: keep it only if its sequence is complete
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def _searchable_text(path: Path) -> str | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > SEARCH_FILE_MAX_BYTES:
        return None
    try:
        found = read_regular(path, max_bytes=SEARCH_FILE_MAX_BYTES)
    except ToolError:
        return None
    if found is None or b"\x00" in found.data:
        return None
    return found.data.decode("utf-8", errors="replace")
