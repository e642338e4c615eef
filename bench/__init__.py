"""The side-by-side benchmark of ShadowCode's stdio server against its peers.

Run it with ``bash ci/bench`` (set-up, build, every figure) or ``python -m bench --help``
for the options. The figures, and how to read them, are described in ``bench/README.md``.
"""

from __future__ import annotations

__all__: list[str] = []
