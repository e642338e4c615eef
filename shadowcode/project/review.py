"""The working-tree review behind shadow_review (SRV-20).

Runs ``git`` read-only: no shell, ``--no-optional-locks`` and ``GIT_OPTIONAL_LOCKS=0`` so
``status`` never refreshes the index on disk, and the plumbing ``diff-index`` (which never
writes) for the line counts. Each command is killed (with its process group) after
``REVIEW_GIT_TIMEOUT_SECONDS`` and its output read up to ``REVIEW_GIT_OUTPUT_MAX_BYTES``.
Changes are limited to the project folder, even when it sits inside a larger repository.

The repository may be someone else's, and its configuration (``.git/config``, the files it
includes, a submodule's own config) can name programs git would start. A review runs none of
them:

* the environment is built from scratch: ``PATH``, ``LC_ALL=C``, an empty private ``HOME``,
  no system or global configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``), no
  inherited ``GIT_*`` variable, no terminal prompt, no transport at all
  (``GIT_ALLOW_PROTOCOL`` empty, ``GIT_NO_LAZY_FETCH``), so a partial clone's missing objects
  are never fetched through the repository's upload-pack, ssh, remote helper or credential
  helper;
* git itself lists the configuration key names it will read (includes followed, at most
  ``REVIEW_GIT_CONFIG_NAMES_MAX_BYTES``, else the review is refused) and every filter driver
  named there gets empty ``clean``, ``smudge`` and ``process`` commands through ``-c``;
* fixed ``-c`` overrides switch off the file-system monitor, point ``core.hooksPath`` at an
  empty folder, clear credential helpers and the askpass program; ``--no-pager``,
  ``--no-ext-diff`` and ``--no-textconv`` keep pagers and diff programs out, and
  ``--ignore-submodules=dirty`` keeps git from running inside submodules (a submodule's new
  commits are still reported).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.errors import ToolError
from shadowcode.limits import (
    REVIEW_CHANGES_MAX,
    REVIEW_GIT_CONFIG_NAMES_MAX_BYTES,
    REVIEW_GIT_OUTPUT_MAX_BYTES,
    REVIEW_GIT_TIMEOUT_SECONDS,
)
from shadowcode.process_group import kill_group, read_output
from shadowcode.project.documents import Review, ReviewChange
from shadowcode.project.files import canonical_root

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

_STDERR_KEPT_BYTES = 2048
_SUBMODULES = "--ignore-submodules=dirty"
_FILTER_VARIABLES = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))


@dataclass(frozen=True)
class _GitOutput:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool






class _Git:
    """One review's git: a scratch HOME and hooks folder, a clean environment, the overrides.

    Args:
        git: the git executable.
        root: the canonical project root (the working directory of every command).
        scratch: an empty private folder that lives as long as this object is used.
        timeout_seconds: deadline of each command.
    """

    def __init__(self, git: str, root: Path, scratch: Path, timeout_seconds: float) -> None:
        self.git = git
        self.root = root
        self.timeout_seconds = timeout_seconds
        home = scratch / "home"
        hooks = scratch / "hooks"
        home.mkdir()
        hooks.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ALLOW_PROTOCOL": "",
            "GIT_NO_LAZY_FETCH": "1",
        }
        self.fixed = [
            *("-c", "core.fsmonitor=false"),
            *("-c", f"core.hooksPath={hooks}"),
            *("-c", "core.quotePath=false"),
            *("-c", "core.pager=cat"),
            *("-c", "core.askPass="),
            *("-c", "credential.helper="),
            *("-c", "submodule.recurse=false"),
            *("-c", "status.submoduleSummary=false"),
        ]
        self.drivers: list[str] | None = None

    def neutralise_drivers(self, names_max_bytes: int) -> str | None:
        """List the configuration git will read and empty every filter driver it names.

        Args:
            names_max_bytes: bytes of key names read at most.

        Returns:
            None when done; otherwise why git could not read the configuration (its first
            error line), meaning the folder cannot be reviewed with git.

        Raises:
            ToolError: the key names exceed ``names_max_bytes``, a driver name holds ``=``
                (it could not be overridden exactly), or git overran its deadline.
        """
        # Without the fixed overrides, so the names are exactly those of the repository's files
        # (reading configuration starts nothing).
        listing = self._run(["config", "--list", "--name-only", "-z", "--includes"], names_max_bytes, None)
        if listing.truncated:
            raise ToolError(
                f"the repository's configuration names more than {names_max_bytes} bytes of keys; "
                "it is not reviewed, so that none of the programs it may name can run",
                limit=names_max_bytes,
            )
        if listing.returncode != 0:
            return listing.stderr.splitlines()[0] if listing.stderr else f"git config exited {listing.returncode}"
        names: set[str] = set()
        for key in _records(listing.stdout, False):
            section, _, rest = key.partition(".")
            name, dot, _variable = rest.rpartition(".")
            if section.lower() == "filter" and dot and name:
                names.add(name)
        overrides: list[str] = []
        for name in sorted(names):
            if "=" in name:
                raise ToolError(
                    f"the repository's configuration names a filter driver with '=' in its name ({name!r}); "
                    "it is not reviewed, because that driver could not be switched off"
                )
            for variable, value in _FILTER_VARIABLES:
                overrides += ["-c", f"filter.{name}.{variable}={value}"]
        self.drivers = overrides
        return None

    def run(self, args: list[str], output_max_bytes: int) -> _GitOutput:
        """Run one git command with every override; call :meth:`neutralise_drivers` first."""
        if self.drivers is None:
            raise RuntimeError("neutralise_drivers() must run before any other git command")
        return self._run(args, output_max_bytes, [*self.fixed, *self.drivers])

    def _run(self, args: list[str], output_max_bytes: int, overrides: list[str] | None) -> _GitOutput:
        argv = [self.git, "--no-pager", "--no-optional-locks", *(overrides or []), *args]
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=self.root,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ToolError(f"git could not be started: {exc.strerror}") from exc
            deadline = time.monotonic() + self.timeout_seconds
            try:
                data, truncated, timed_out = read_output(proc, deadline, output_max_bytes)
                if truncated or timed_out:
                    kill_group(proc)
                try:
                    returncode = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    kill_group(proc)
                    returncode = proc.wait()
            finally:
                if proc.returncode is None:
                    kill_group(proc)
                    proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
            if timed_out:
                raise ToolError(f"git {args[0]} did not finish within {self.timeout_seconds:g} s and was stopped")
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


def _parse_status(records: list[str], prefix: str) -> tuple[dict[str, str | None], list[ReviewChange]]:
    header: dict[str, str | None] = {"branch": None, "head": None}
    changes: list[ReviewChange] = []
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
            entry: ReviewChange = {
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


def _not_git(note: str) -> Review:
    return {"git": False, "branch": None, "changes": [], "diffstat": {}, "truncated": False, "note": note}


def review(
    root: Path,
    *,
    changes_max: int = REVIEW_CHANGES_MAX,
    timeout_seconds: float = REVIEW_GIT_TIMEOUT_SECONDS,
    output_max_bytes: int = REVIEW_GIT_OUTPUT_MAX_BYTES,
    config_names_max_bytes: int = REVIEW_GIT_CONFIG_NAMES_MAX_BYTES,
) -> Review:
    """Summarise the uncommitted changes of the project's git working tree (SRV-20).

    Read-only, and runs no program the repository configures (see the module docstring):
    nothing in the repository or the working tree is written.

    Args:
        root: the canonical project root.
        changes_max: changed paths listed at most; more set ``truncated``.
        timeout_seconds: deadline of each git command.
        output_max_bytes: bytes read from each git command's output.
        config_names_max_bytes: bytes of configuration key names read to find the
            repository's filter drivers; more refuse the review.

    Returns:
        For a git project ``{"git": true, "branch": str|None (None when detached),
        "head": str|None (abbreviated commit, None before the first commit), "changes":
        [{"path": str (relative to the project), "status": str, "staged": bool,
        "from"?: str}], "changes_total": int, "diffstat": {"files", "insertions",
        "deletions", "binary_files", "untracked": int, "against": "HEAD"|"empty tree"},
        "truncated": bool}``. Otherwise ``{"git": false, "branch": null, "changes": [],
        "diffstat": {}, "truncated": false, "note": str}``.

    Raises:
        ToolError: git could not be started, a git command overran its deadline, or the
            repository's configuration cannot be neutralised (too many key names, a filter
            driver named with ``=``).
    """
    root = canonical_root(root)
    executable = shutil.which("git")
    if executable is None:
        return _not_git("git is not installed, so there is no change review")
    with tempfile.TemporaryDirectory(prefix="shadowcode-review-") as scratch:
        git = _Git(executable, root, Path(scratch), timeout_seconds)
        unreadable = git.neutralise_drivers(config_names_max_bytes)
        if unreadable is not None:
            return _not_git(f"not reviewed with git: {unreadable}")
        return _review(git, changes_max, output_max_bytes)


def _review(git: _Git, changes_max: int, output_max_bytes: int) -> Review:
    probe = git.run(["rev-parse", "--is-inside-work-tree", "--show-prefix"], 4096)
    lines = probe.stdout.decode("utf-8", errors="replace").splitlines()
    if probe.returncode != 0 or not lines or lines[0] != "true":
        reason = probe.stderr.splitlines()[0] if probe.stderr else "not a git working tree"
        return _not_git(f"not reviewed with git: {reason}")
    prefix = lines[1] if len(lines) > 1 else ""

    status = git.run(
        ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", _SUBMODULES, "--", "."],
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
        empty = git.run(["hash-object", "-t", "tree", "--stdin"], 4096)
        against, base = "empty tree", ["--cached", empty.stdout.decode("ascii", errors="replace").strip()]
    diff_args = ["diff-index", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", _SUBMODULES]
    diff = git.run([*diff_args, *base, "--", "."], output_max_bytes)
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
