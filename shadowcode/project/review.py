"""The working-tree review behind shadow_review (SRV-20).

Runs ``git`` read-only: no shell, ``--no-optional-locks`` and ``GIT_OPTIONAL_LOCKS=0`` so
``status`` never refreshes the index on disk, the plumbing ``diff-index`` (which never
writes) for the line counts, the file-system monitor and external diff/textconv
programs switched off, inherited variables that would point git at another repository
removed, each command killed (with its process group) after
``REVIEW_GIT_TIMEOUT_SECONDS`` and its output read up to ``REVIEW_GIT_OUTPUT_MAX_BYTES``.
Changes are limited to the project folder, even when it sits inside a larger repository.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.errors import ToolError
from shadowcode.limits import REVIEW_CHANGES_MAX, REVIEW_GIT_OUTPUT_MAX_BYTES, REVIEW_GIT_TIMEOUT_SECONDS
from shadowcode.project.paths import canonical_root

__all__ = ["STATUS_NAMES", "review"]

STATUS_NAMES: dict[str, str] = {
    "M": "modified",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
    "U": "unmerged",
}
"""Git's one-letter change codes and the words ``changes[].status`` uses; untracked
files are ``"untracked"`` and merge conflicts ``"unmerged"``."""

_STRIPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
)
_STDERR_KEPT_BYTES = 2048


@dataclass(frozen=True)
class _GitOutput:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool


def _git_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _STRIPPED_ENV}
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "LC_ALL": "C",
        }
    )
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command's process group; only called before the leader is reaped, so the
    group id cannot have been reused."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_bounded(proc: subprocess.Popen[bytes], deadline: float, max_bytes: int) -> tuple[bytes, bool, bool]:
    """Read stdout until EOF, ``max_bytes + 1`` bytes or the deadline.

    Returns:
        ``(data, truncated, timed_out)``.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False, True
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False, False
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True, False


def _filter_overrides(git: str, root: Path, timeout_seconds: float) -> list[str]:
    """``-c`` arguments that switch off every content filter the repository's config defines.

    A repository's own config may name clean/smudge/process filters; ``git status`` runs them
    on changed files, which would let an inspected project run commands. Reading the config
    runs nothing; the overrides empty each filter so git compares raw bytes instead.
    """
    found = _run_git(git, root, ["config", "-z", "--get-regexp", r"^filter\."], timeout_seconds, 64 * 1024, [])
    names = set()
    for record in _records(found.stdout, found.truncated):
        key = record.split("\n", 1)[0]
        name, _, _var = key.removeprefix("filter.").rpartition(".")
        if name:
            names.add(name)
    overrides: list[str] = []
    for name in sorted(names):
        for var, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            overrides += ["-c", f"filter.{name}.{var}={value}"]
    return overrides


def _run_git(
    git: str,
    root: Path,
    args: list[str],
    timeout_seconds: float,
    output_max_bytes: int,
    overrides: list[str] | None = None,
) -> _GitOutput:
    if overrides is None:
        overrides = _filter_overrides(git, root, timeout_seconds)
    argv = [git, "--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false", *overrides, *args]
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                env=_git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"git could not be started: {exc.strerror}") from exc
        deadline = time.monotonic() + timeout_seconds
        try:
            data, truncated, timed_out = _read_bounded(proc, deadline, output_max_bytes)
            if truncated or timed_out:
                _kill_group(proc)
            try:
                returncode = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                returncode = proc.wait()
        finally:
            if proc.returncode is None:
                _kill_group(proc)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if timed_out:
            raise ToolError(f"git {args[0]} did not finish within {timeout_seconds:g} s and was stopped")
        err.seek(0)
        stderr = err.read(_STDERR_KEPT_BYTES).decode("utf-8", errors="replace").strip()
    return _GitOutput(returncode=returncode, stdout=data, stderr=stderr, truncated=truncated)


def _records(data: bytes, truncated: bool) -> list[str]:
    """Split NUL-terminated records, dropping a last record cut short by the byte limit."""
    parts = data.split(b"\0")
    if truncated or not parts[-1]:
        parts = parts[:-1]
    return [part.decode("utf-8", errors="replace") for part in parts]


def _project_path(path: str, prefix: str) -> str:
    return path[len(prefix) :] if prefix and path.startswith(prefix) else path


def _parse_status(records: list[str], prefix: str) -> tuple[dict[str, str | None], list[dict[str, Any]]]:
    header: dict[str, str | None] = {"branch": None, "head": None}
    changes: list[dict[str, Any]] = []
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if record.startswith("# branch.head "):
            name = record.removeprefix("# branch.head ")
            header["branch"] = None if name == "(detached)" else name
        elif record.startswith("# branch.oid "):
            oid = record.removeprefix("# branch.oid ")
            header["head"] = None if oid == "(initial)" else oid[:12]
        elif record.startswith("? "):
            changes.append({"path": _project_path(record[2:], prefix), "status": "untracked", "staged": False})
        elif record[:2] in {"1 ", "2 ", "u "}:
            kind = record[0]
            fields = record.split(" ", {"1": 8, "2": 9, "u": 10}[kind])
            code = fields[1]
            staged, unstaged = code[0], code[1]
            letter = "U" if kind == "u" else (staged if staged != "." else unstaged)
            entry: dict[str, Any] = {
                "path": _project_path(fields[-1], prefix),
                "status": STATUS_NAMES.get(letter, "modified"),
                "staged": kind != "u" and staged != ".",
            }
            if kind == "2" and index < len(records):
                entry["from"] = _project_path(records[index], prefix)
                index += 1
            changes.append(entry)
    return header, changes


def _parse_numstat(records: list[str]) -> dict[str, int]:
    stat = {"files": 0, "insertions": 0, "deletions": 0, "binary_files": 0}
    for record in records:
        fields = record.split("\t", 2)
        if len(fields) != 3:
            continue
        stat["files"] += 1
        if fields[0] == "-" or fields[1] == "-":
            stat["binary_files"] += 1
            continue
        try:
            stat["insertions"] += int(fields[0])
            stat["deletions"] += int(fields[1])
        except ValueError:
            continue
    return stat


def _not_git(note: str) -> dict[str, Any]:
    return {"git": False, "branch": None, "changes": [], "diffstat": {}, "truncated": False, "note": note}


def review(
    root: Path,
    *,
    changes_max: int = REVIEW_CHANGES_MAX,
    timeout_seconds: float = REVIEW_GIT_TIMEOUT_SECONDS,
    output_max_bytes: int = REVIEW_GIT_OUTPUT_MAX_BYTES,
) -> dict[str, Any]:
    """Summarise the uncommitted changes of the project's git working tree (SRV-20).

    Read-only: nothing in the repository or the working tree is written.

    Args:
        root: the canonical project root.
        changes_max: changed paths listed at most; more set ``truncated``.
        timeout_seconds: deadline of each git command.
        output_max_bytes: bytes read from each git command's output.

    Returns:
        For a git project ``{"git": true, "branch": str|None (None when detached),
        "head": str|None (abbreviated commit, None before the first commit), "changes":
        [{"path": str (relative to the project), "status": str, "staged": bool,
        "from"?: str}], "changes_total": int, "diffstat": {"files", "insertions",
        "deletions", "binary_files", "untracked": int, "against": "HEAD"|"empty tree"},
        "truncated": bool}``. Otherwise ``{"git": false, "branch": null, "changes": [],
        "diffstat": {}, "truncated": false, "note": str}``.

    Raises:
        ToolError: git could not be started or a git command overran its deadline.
    """
    root = canonical_root(root)
    git = shutil.which("git")
    if git is None:
        return _not_git("git is not installed, so there is no change review")
    probe = _run_git(git, root, ["rev-parse", "--is-inside-work-tree", "--show-prefix"], timeout_seconds, 4096)
    lines = probe.stdout.decode("utf-8", errors="replace").splitlines()
    if probe.returncode != 0 or not lines or lines[0] != "true":
        reason = probe.stderr.splitlines()[0] if probe.stderr else "not a git working tree"
        return _not_git(f"not reviewed with git: {reason}")
    prefix = lines[1] if len(lines) > 1 else ""

    status = _run_git(
        git,
        root,
        ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--", "."],
        timeout_seconds,
        output_max_bytes,
    )
    if status.returncode != 0 and not status.truncated:
        raise ToolError(f"git status failed: {status.stderr or status.returncode}")
    header, changes = _parse_status(_records(status.stdout, status.truncated), prefix)

    # Plumbing on purpose: porcelain ``git diff`` refreshes the index file even with optional
    # locks off, and a review must not write.
    if header["head"] is not None:
        against, base = "HEAD", ["HEAD"]
    else:
        empty = _run_git(git, root, ["hash-object", "-t", "tree", "--stdin"], timeout_seconds, 4096)
        against, base = "empty tree", ["--cached", empty.stdout.decode("ascii", errors="replace").strip()]
    diff_args = ["diff-index", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", *base]
    diff = _run_git(git, root, [*diff_args, "--", "."], timeout_seconds, output_max_bytes)
    diffstat: dict[str, Any] = _parse_numstat(_records(diff.stdout, diff.truncated)) if diff.returncode == 0 else {}
    diffstat["untracked"] = sum(1 for change in changes if change["status"] == "untracked")
    diffstat["against"] = against

    return {
        "git": True,
        "branch": header["branch"],
        "head": header["head"],
        "changes": changes[:changes_max],
        "changes_total": len(changes),
        "diffstat": diffstat,
        "truncated": status.truncated or diff.truncated or len(changes) > changes_max,
    }
