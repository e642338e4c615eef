"""Errors of the conformance runner.

The runner is its own distribution and imports nothing from the implementation it
checks, so it has its own small tree::

    ConformanceError        exit 1
    └── UsageError          exit 2   bad command line, unknown fixture, empty selection

A failing check is not an error: it is a result with ``ok: False``.
"""

from __future__ import annotations

__all__ = ["ConformanceError", "UsageError"]


class ConformanceError(Exception):
    """Base of every deliberate runner error.

    Args:
        message: one sentence for a person.
    """

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class UsageError(ConformanceError):
    """The command line cannot be run as given (exit 2)."""

    exit_code = 2
