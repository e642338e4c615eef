"""The native tools a delegated task can be given, and the level each needs (ENG-04, SRV-20).

The list comes from the one tool registry, :mod:`shadowcode.agent.tool_specs`.
"""

from __future__ import annotations

from shadowcode.agent.tool_specs import TOOL_SPECS, listing

__all__ = ["NATIVE_TOOLS", "native_tools"]

NATIVE_TOOLS: tuple[tuple[str, str, str], ...] = tuple((s.name, s.level.value, s.summary) for s in TOOL_SPECS)
"""``(name, level, one-line description)`` of every tool, in the listing's order."""


def native_tools() -> list[dict[str, str]]:
    """``[{"name", "level", "description"}]`` in a fixed order (SRV-20)."""
    return listing()
