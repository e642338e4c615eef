"""Pauses between polls that each start a ``<target>`` command.

Such a poll costs a whole interpreter start, so a check that waits long should poll less
often: the pause doubles from ``PROCESS_POLL_FIRST_SECONDS`` to ``PROCESS_POLL_MAX_SECONDS``
while nothing changes, and goes back to the first pause when a poll found something (the
next event of a task tends to follow soon, as one approval follows another).
"""

from __future__ import annotations

import anyio

from shadowcode_conformance.limits import PROCESS_POLL_FIRST_SECONDS, PROCESS_POLL_MAX_SECONDS

__all__ = ["Backoff"]


class Backoff:
    """Growing pauses: ``0.3, 0.6, 1.2, 2.0, 2.0, ...`` seconds, back to 0.3 after :meth:`reset`."""

    def __init__(self) -> None:
        self._seconds = PROCESS_POLL_FIRST_SECONDS

    def next(self) -> float:
        """The pause to take now, in seconds; the one after it is twice as long, up to the cap."""
        seconds = self._seconds
        self._seconds = min(seconds * 2, PROCESS_POLL_MAX_SECONDS)
        return seconds

    def reset(self) -> None:
        """Start again from the first pause (a poll found something)."""
        self._seconds = PROCESS_POLL_FIRST_SECONDS

    async def sleep(self) -> None:
        """Sleep for :meth:`next` seconds."""
        await anyio.sleep(self.next())
