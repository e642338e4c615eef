"""Detect the commands that run a project's tests, from its files alone (SRV-17, SRV-19).

Nothing is executed: detection reads a few small files (each at most
``UNDERSTAND_READ_MAX_BYTES``) and lists the project's test folders. ``shadow_test``
without a command needs exactly one candidate; ``shadow_doctor`` and the project map
report them all.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from shadowcode.json_values import json_object
from shadowcode.limits import UNDERSTAND_ENTRIES_MAX, UNDERSTAND_READ_MAX_BYTES
from shadowcode.project.files import read_optional
from shadowcode.project.paths import walk_files

__all__ = ["MAKEFILE_NAMES", "NPM_PLACEHOLDER_MARK", "detect_test_commands", "makefile_has_target"]

NPM_PLACEHOLDER_MARK = "no test specified"
"""Text of the ``scripts.test`` that ``npm init`` writes, which runs no tests."""

MAKEFILE_NAMES: tuple[str, ...] = ("GNUmakefile", "makefile", "Makefile")
"""Makefile names in the order GNU make looks for them."""

_PY_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_PY_TEST_DIRS: tuple[str, ...] = ("tests", "test")
_PY_TEST_DIR_FILES_MAX = 500


def _read(root: Path, rel: str) -> str | None:
    """The whole text of a small regular file of the project, else None (never blocks)."""
    found = read_optional(root, rel, max_bytes=UNDERSTAND_READ_MAX_BYTES)
    if found is None or found.truncated:
        return None
    return found.data.decode("utf-8", errors="replace")


def _exists(root: Path, rel: str) -> bool:
    """True when ``rel`` is a regular file of project content (opened without blocking)."""
    return read_optional(root, rel, max_bytes=0) is not None


def _pytest_reasons(root: Path) -> list[str]:
    reasons: list[str] = []
    if _exists(root, "pytest.ini"):
        reasons.append("pytest.ini")
    pyproject = _read(root, "pyproject.toml")
    if pyproject is not None:
        try:
            tool = tomllib.loads(pyproject).get("tool", {})
        except tomllib.TOMLDecodeError:
            tool = {}
        if isinstance(tool, dict) and "pytest" in tool:
            reasons.append("pyproject.toml has [tool.pytest]")
    setup_cfg = _read(root, "setup.cfg")
    if setup_cfg is not None and _ini_has_section(setup_cfg, "tool:pytest"):
        reasons.append("setup.cfg has [tool:pytest]")
    tox_ini = _read(root, "tox.ini")
    if tox_ini is not None and _ini_has_section(tox_ini, "pytest"):
        reasons.append("tox.ini has [pytest]")
    for folder in _PY_TEST_DIRS:
        walk = walk_files(root, under=folder, files_max=_PY_TEST_DIR_FILES_MAX, entries_max=UNDERSTAND_ENTRIES_MAX)
        if any(_PY_TEST_FILE.search(item.path) for item in walk.files):
            reasons.append(f"{folder}/ holds test_*.py files")
            break
    return reasons


def _ini_has_section(text: str, section: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return f"[{section}]" in text
    return parser.has_section(section)


def _python_command(root: Path) -> list[str]:
    venv_python = root / ".venv" / "bin" / "python"
    if venv_python.exists():
        return [".venv/bin/python", "-m", "pytest"]
    return ["python3", "-m", "pytest"]


def _npm_candidate(root: Path) -> dict[str, Any] | None:
    text = _read(root, "package.json")
    if text is None:
        return None
    try:
        manifest = json_object(json.loads(text))
    except ValueError:
        return None
    scripts = json_object(manifest.get("scripts")) if manifest is not None else None
    script = scripts.get("test") if scripts is not None else None
    if not isinstance(script, str) or not script.strip() or NPM_PLACEHOLDER_MARK in script:
        return None
    runner = "npm"
    if _exists(root, "pnpm-lock.yaml"):
        runner = "pnpm"
    elif _exists(root, "yarn.lock"):
        runner = "yarn"
    return {"name": runner, "command": [runner, "test"], "reason": f"package.json scripts.test: {script[:200]}"}


def makefile_has_target(text: str, target: str) -> bool:
    """Tell whether a Makefile defines ``target`` as a rule (not a variable).

    Args:
        text: the Makefile's content.
        target: the rule name, e.g. ``"test"``.

    Returns:
        True when a rule line (not a recipe line, comment or ``:=``/``::=`` assignment)
        names ``target`` before its colon.
    """
    for line in text.splitlines():
        if not line or line[0] in "\t#":
            continue
        colon = line.find(":")
        if colon <= 0:
            continue
        after = line[colon + 1 : colon + 3]
        if after.startswith("=") or after == ":=":
            continue
        head = line[:colon]
        if "=" in head:
            continue
        if target in head.split():
            return True
    return False


def detect_test_commands(root: Path) -> list[dict[str, Any]]:
    """List the commands that would run this project's tests (SRV-17).

    Candidates, in this order and at most one each: ``pytest`` (pytest.ini,
    ``[tool.pytest...]`` in pyproject.toml, ``[tool:pytest]`` in setup.cfg, ``[pytest]``
    in tox.ini, or ``tests/``/``test/`` holding ``test_*.py``; run through
    ``.venv/bin/python`` when the project has one, else ``python3``), ``npm``/``pnpm``/
    ``yarn`` (a real ``scripts.test`` in package.json, not the ``npm init`` placeholder),
    ``cargo`` (Cargo.toml), ``go`` (go.mod) and ``make`` (a Makefile with a ``test``
    rule). Nothing is run.

    Args:
        root: the canonical project root.

    Returns:
        ``[{"name": str, "command": [str], "reason": str}]``; ``command`` is an argv list
        meant to run with the project root as working directory.
    """
    found: list[dict[str, Any]] = []
    reasons = _pytest_reasons(root)
    if reasons:
        found.append({"name": "pytest", "command": _python_command(root), "reason": "; ".join(reasons)})
    npm = _npm_candidate(root)
    if npm is not None:
        found.append(npm)
    if _exists(root, "Cargo.toml"):
        found.append({"name": "cargo", "command": ["cargo", "test"], "reason": "Cargo.toml"})
    if _exists(root, "go.mod"):
        found.append({"name": "go", "command": ["go", "test", "./..."], "reason": "go.mod"})
    for name in MAKEFILE_NAMES:
        text = _read(root, name)
        if text is not None:
            if makefile_has_target(text, "test"):
                found.append({"name": "make", "command": ["make", "test"], "reason": f"{name} has a test rule"})
            break
    return found
