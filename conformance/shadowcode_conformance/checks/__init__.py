"""The checks: one module per kind of probe; each registers itself with ``@check``."""

from __future__ import annotations

__all__: list[str] = []
