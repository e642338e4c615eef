"""Static project diagnostics for shadow_doctor (SRV-19).

Every check only looks: nothing is created, repaired or run (``git`` is looked up on
``PATH`` but not started). The model probe is a separate concern of the caller.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from shadowcode.limits import DOCTOR_LARGE_FILE_BYTES
from shadowcode.project.files import canonical_root, in_profile_root, is_inside
from shadowcode.project.paths import ProjectWalk, walk_files
from shadowcode.project.test_detection import detect_test_commands
from shadowcode.project.understand import MANIFEST_KINDS

__all__ = ["CHECK_NAMES", "MCP_DEFINITION_SUFFIXES", "project_checks"]

Status = Literal["ok", "warn", "fail"]

CHECK_NAMES: tuple[str, ...] = (
    "readable",
    "writable",
    "git",
    "manifests",
    "test_commands",
    "large_files",
    "shadowcode_folder",
)
"""Names of the checks, in the order :func:`project_checks` reports them."""

MCP_DEFINITION_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".json")
"""Suffixes of project MCP definition files counted in ``.shadowcode/mcp/``."""


def _check(name: str, status: Status, detail: str) -> dict[str, Any]:
    return {"name": name, "status": status, "detail": detail}


def _readable(root: Path) -> dict[str, Any]:
    try:
        with os.scandir(root) as listing:
            next(listing, None)
    except OSError as exc:
        return _check("readable", "fail", f"the project folder cannot be listed: {exc.strerror}")
    return _check("readable", "ok", "the project folder can be listed and read")


def _writable(root: Path) -> dict[str, Any]:
    if os.access(root, os.W_OK | os.X_OK):
        return _check("writable", "ok", "the project folder is writable by this user")
    return _check("writable", "warn", "the project folder is read-only for this user; tasks cannot write here")


def _git(root: Path) -> dict[str, Any]:
    repo: Path | None = None
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            repo = folder
            break
    if repo is None:
        return _check("git", "warn", "not a git repository; review shows no changes and there is no git baseline")
    where = "the project root" if repo == root else f"{repo} (a parent folder)"
    if shutil.which("git") is None:
        return _check("git", "warn", f"a git repository at {where}, but git is not installed")
    return _check("git", "ok", f"a git repository at {where}")


def _manifests(walk: ProjectWalk) -> dict[str, Any]:
    found = [item.path for item in walk.files if PurePosixPath(item.path).name in MANIFEST_KINDS]
    if not found:
        return _check("manifests", "warn", "no build or package manifest found (pyproject.toml, package.json, ...)")
    return _check("manifests", "ok", "found: " + ", ".join(found))


def _tests(root: Path) -> dict[str, Any]:
    candidates = detect_test_commands(root)
    if not candidates:
        return _check("test_commands", "warn", "no test command detected; shadow_test needs an explicit command")
    shown = "; ".join(f"{c['name']}: {' '.join(c['command'])}" for c in candidates)
    if len(candidates) == 1:
        return _check("test_commands", "ok", f"one test command detected: {shown}")
    return _check(
        "test_commands",
        "warn",
        f"{len(candidates)} test commands detected ({shown}); shadow_test needs an explicit command",
    )


def _large_files(walk: ProjectWalk) -> dict[str, Any]:
    large = sorted(
        (item for item in walk.files if not item.is_symlink and item.size_bytes > DOCTOR_LARGE_FILE_BYTES),
        key=lambda item: (-item.size_bytes, item.path),
    )
    scope = " (walk stopped at its limit)" if walk.truncated else ""
    if not large:
        return _check("large_files", "ok", f"no file above {DOCTOR_LARGE_FILE_BYTES} bytes{scope}")
    listed = ", ".join(f"{item.path} ({item.size_bytes} bytes)" for item in large)
    return _check("large_files", "warn", f"{len(large)} file(s) above {DOCTOR_LARGE_FILE_BYTES} bytes{scope}: {listed}")


def _shadowcode_folder(root: Path) -> dict[str, Any]:
    folder = root / ".shadowcode"
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return _check("shadowcode_folder", "ok", "no .shadowcode/ folder; nothing is configured for this project")
    except OSError as exc:
        return _check("shadowcode_folder", "fail", f".shadowcode/ cannot be inspected: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        if not is_inside(root, folder):
            return _check("shadowcode_folder", "fail", ".shadowcode is a link that leads outside the project")
        info = folder.stat()
    if not stat.S_ISDIR(info.st_mode):
        return _check("shadowcode_folder", "fail", ".shadowcode exists but is not a folder")
    if in_profile_root(canonical_root(folder)):
        return _check(
            "shadowcode_folder",
            "ok",
            ".shadowcode/ is the profile folder (SHADOWCODE_HOME), not project content; it is not inspected",
        )
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError as exc:
        return _check("shadowcode_folder", "fail", f".shadowcode/ cannot be listed: {exc.strerror}")
    parts = [f"{len(names)} entries"]
    mcp = folder / "mcp"
    if mcp.is_dir() and is_inside(root, mcp):
        try:
            count = sum(1 for entry in os.scandir(mcp) if entry.name.endswith(MCP_DEFINITION_SUFFIXES))
        except OSError as exc:
            return _check("shadowcode_folder", "fail", f".shadowcode/mcp/ cannot be listed: {exc.strerror}")
        parts.append(f"{count} MCP definition file(s) in mcp/")
    if not os.access(folder, os.W_OK):
        return _check("shadowcode_folder", "warn", ".shadowcode/ is read-only: " + ", ".join(parts))
    return _check("shadowcode_folder", "ok", ".shadowcode/ present: " + ", ".join(parts))


def project_checks(root: Path) -> list[dict[str, Any]]:
    """Run the static diagnostics of a project without changing anything (SRV-19).

    Args:
        root: the canonical project root.

    Returns:
        ``[{"name": str, "status": "ok"|"warn"|"fail", "detail": str}]`` in the order of
        :data:`CHECK_NAMES`. A root that is not a readable folder yields only the
        ``readable`` check, failed.
    """
    root = canonical_root(root)
    if not root.is_dir():
        return [_check("readable", "fail", "the project path is not a folder")]
    readable = _readable(root)
    if readable["status"] == "fail":
        return [readable]
    walk = walk_files(root)
    return [
        readable,
        _writable(root),
        _git(root),
        _manifests(walk),
        _tests(root),
        _large_files(walk),
        _shadowcode_folder(root),
    ]
