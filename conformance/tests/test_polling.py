"""Polls that start a ``<target>`` command back off while nothing changes (CONF-01)."""

from __future__ import annotations

import pytest

from shadowcode_conformance.limits import PROCESS_POLL_FIRST_SECONDS, PROCESS_POLL_MAX_SECONDS
from shadowcode_conformance.polling import Backoff


@pytest.mark.req("CONF-01")
def test_the_pause_doubles_up_to_the_cap_and_a_reset_starts_again() -> None:
    pause = Backoff()
    seen = [pause.next() for _ in range(6)]
    assert seen[0] == PROCESS_POLL_FIRST_SECONDS
    assert all(b == min(a * 2, PROCESS_POLL_MAX_SECONDS) for a, b in zip(seen, seen[1:], strict=False))
    assert seen[-1] == PROCESS_POLL_MAX_SECONDS
    pause.reset()
    assert pause.next() == PROCESS_POLL_FIRST_SECONDS
