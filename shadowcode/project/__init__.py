"""Project inspection: paths, SQLite, project map, test detection, diagnostics, review.

Pure library functions over a canonical project root; each returns JSON-able values and
raises :class:`~shadowcode.errors.ToolError` for input it refuses. The MCP server wraps
them as ``shadow_sqlite``, ``shadow_understand``, ``shadow_doctor``, ``shadow_review`` and
uses test detection for ``shadow_test`` (SRV-13, SRV-17, SRV-19, SRV-20). Nothing here
changes the project.
"""

from __future__ import annotations

__all__: list[str] = []
