"""Modules imported on first use, so a stdio session that never needs them never pays for them (issue 32).

``mcp_types`` builds some hundred pydantic models when imported (about a tenth of a second
and several MiB); a stdio session answered from the recorded discovery and the direct
``tools/call`` path never touches one. The modules that need it bind
``types = lazy_module("mcp_types")`` at run time (and the real import for the type checker),
and the first attribute read imports it, with the standard library's
:class:`importlib.util.LazyLoader`.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, imported when one of its attributes is first read.

    Args:
        name: an absolute module name.

    Returns:
        The module already imported, or one registered in ``sys.modules`` whose body runs on
        first attribute access.

    Raises:
        ModuleNotFoundError: ``name`` cannot be found (checked at once, not on first use).
    """
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
