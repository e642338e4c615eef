"""The environment given to processes the engine starts (CLI-12, ENG-04).

Children get PATH, HOME, locale, terminal and XDG basics, plus explicit entries. Provider
credentials, ShadowCode's own control variables and dynamic-library or interpreter path
overrides are never inherited.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["INHERITED", "child_env"]

INHERITED: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "LANG", "LANGUAGE",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME",
)  # fmt: skip


def child_env(extra: Mapping[str, str] | None = None, *, source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment: INHERITED names and ``LC_*`` from ``source`` (default os.environ), then ``extra``."""
    src = os.environ if source is None else source
    env = {k: v for k, v in src.items() if k in INHERITED or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    if extra:
        env.update(extra)
    return env
