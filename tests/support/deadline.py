"""Run a call that must not block, and fail (not hang) the test when it does."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pytest

__all__ = ["AT_ONCE_SECONDS", "at_once"]

T = TypeVar("T")

AT_ONCE_SECONDS = 5.0
"""Seconds a call that must answer at once may take on a loaded machine."""


def at_once(call: Callable[[], T], *, fifos: Iterable[Path] = (), seconds: float = AT_ONCE_SECONDS) -> T:
    """Run ``call`` on a daemon thread and return its result or raise its error.

    Args:
        call: the work under test.
        fifos: FIFOs the call might block on; on a timeout each gets a writer that opens and
            closes at once, so the stuck thread can finish.
        seconds: the deadline.

    Returns:
        What ``call`` returned.
    """
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed back to the test below
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"the call did not return within {seconds:g} s: it blocked")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
