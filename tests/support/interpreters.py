"""Find the CPython interpreters installed on this machine, by version (PKG-01 tests).

A ``pythonX.Y`` on ``PATH`` may be a pyenv shim that fails unless that version is selected, so
every candidate is run once and kept only when it answers with the asked version. Candidates,
in order: ``pythonX.Y`` on ``PATH``, then ``$PYENV_ROOT`` (or ``pyenv root``, or ``~/.pyenv``)
``/versions/X.Y*/bin/pythonX.Y``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ARCHIVE_PYTHONS", "default_python_version", "find_python"]

ARCHIVE_PYTHONS = ("3.11", "3.12", "3.13", "3.14")
"""The CPython versions ``dist/shadowcode.pyz`` carries compiled modules for."""

_PROBE_TIMEOUT_SECONDS = 30


def default_python_version() -> str:
    """The version of the interpreter running the tests, as ``X.Y``."""
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _pyenv_root() -> Path | None:
    if root := os.environ.get("PYENV_ROOT"):
        return Path(root)
    if pyenv := shutil.which("pyenv"):
        done = subprocess.run(
            [pyenv, "root"], capture_output=True, text=True, encoding="utf-8", timeout=_PROBE_TIMEOUT_SECONDS
        )
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip())
    home = Path.home() / ".pyenv"
    return home if home.is_dir() else None


def _answers_as(executable: str, version: str) -> bool:
    try:
        done = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=_PROBE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


@functools.cache
def find_python(version: str) -> str | None:
    """The path of a working CPython ``version`` (``"3.12"``), or None when none is installed.

    Args:
        version: ``X.Y``.

    Returns:
        An absolute path to an interpreter that reported ``version`` when run, or None.
    """
    candidates: list[str] = []
    if on_path := shutil.which(f"python{version}"):
        candidates.append(on_path)
    if (root := _pyenv_root()) is not None:
        for folder in sorted((root / "versions").glob(f"{version}.*"), reverse=True):
            candidates.append(str(folder / "bin" / f"python{version}"))
    return next((c for c in candidates if _answers_as(c, version)), None)
