"""Agent tasks: the model turn loop, the model providers it asks, and the native tools (ENG-04, ENG-05).

Submodules are imported where they are needed; importing this package loads nothing else,
so the command-line entry point stays cheap.
"""

from __future__ import annotations

__all__: list[str] = []
