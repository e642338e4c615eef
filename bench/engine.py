"""The headless engine the attached figures need, started and stopped by the benchmark.

With the profile's engine running, ``mcp serve`` relays stdio into it instead of loading the
SDK (the attached fast path). The benchmark starts ``shadowcode engine`` over a profile root
of its own, so the other ShadowCode targets keep measuring the temporary-engine path, and
stops it (process group included) when the run ends, however it ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from bench.process import ServerProcess

__all__ = ["ENGINE_READY_PATTERN", "ENGINE_READY_TIMEOUT_SECONDS", "headless_engine"]

ENGINE_READY_PATTERN: Final = r"shadowcode engine ready: .*pid (\d+)"
"""The engine's stderr line once its socket accepts connections; the group is its pid."""

ENGINE_READY_TIMEOUT_SECONDS: Final = 90.0
"""How long the engine may take to be ready (a first start from the archive extracts it)."""


def headless_engine(argv: list[str], *, env: dict[str, str], cwd: Path, stderr_path: Path) -> ServerProcess:
    """A ``shadowcode engine`` process to use as a context manager.

    Args:
        argv: the command that starts the engine (``[python, archive, "engine"]`` or the
            source equivalent).
        env: its environment; ``SHADOWCODE_HOME`` picks the profile root.
        cwd: its working folder.
        stderr_path: where its stderr goes.

    Returns:
        A :class:`ServerProcess`; entering it starts the engine and waits until it is ready,
        leaving it stops the engine.
    """
    return ServerProcess(
        "headless engine",
        argv,
        env=env,
        cwd=cwd,
        stderr_path=stderr_path,
        ready=ENGINE_READY_PATTERN,
        ready_timeout_seconds=ENGINE_READY_TIMEOUT_SECONDS,
    )
