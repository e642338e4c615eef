"""ShadowCode: a coding-agent engine whose native MCP surfaces are the product.

The package keeps its top-level import cheap: hosts spawn ``shadowcode mcp serve`` for
every session, so nothing here imports the ``mcp`` SDK, the engine or the store.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
