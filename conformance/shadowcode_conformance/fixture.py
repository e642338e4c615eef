"""Loading the sample-project factory: ``make_sample_project(dest) -> Path`` from a file.

By default the factory is ``fixtures/sample_project.py`` under the run's resource root (this
package's source folder, or the installed package's cached copy: see :mod:`shadowcode_conformance.resources`); another
file defining the same function can be given with ``--fixture``. The file is imported by path,
so it need not be on ``sys.path``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import cast

from shadowcode_conformance.errors import UsageError

__all__ = ["ProjectFactory", "default_fixture_path", "load_project_factory"]

ProjectFactory = Callable[[Path], Path]
"""``make_sample_project(dest)``: fill ``dest`` (not yet existing) and return the project path."""


def default_fixture_path(repo_root: Path) -> Path:
    """``<repo_root>/fixtures/sample_project.py``.

    ``repo_root``: :func:`shadowcode_conformance.resources.resource_root`.
    """
    return repo_root / "fixtures" / "sample_project.py"


def load_project_factory(path: Path) -> ProjectFactory:
    """Import ``path`` and return its ``make_sample_project`` function.

    Args:
        path: a Python file defining ``make_sample_project(dest: Path) -> Path``.

    Returns:
        The function.

    Raises:
        UsageError: the file is missing, cannot be imported, or lacks the function.
    """
    if not path.is_file():
        raise UsageError(f"sample project factory not found: {path}")
    spec = importlib.util.spec_from_file_location(f"_conformance_fixture_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (ImportError, SyntaxError, OSError) as exc:
        raise UsageError(f"cannot import {path}: {exc}") from exc
    factory: object = getattr(module, "make_sample_project", None)
    if not callable(factory):
        raise UsageError(f"{path} defines no make_sample_project(dest) function")
    return cast(ProjectFactory, factory)  # a user's module: its signature is its documented contract
