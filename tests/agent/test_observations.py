"""A task's file observations: fresh after a read or write, stale after an MCP action (CLI-10)."""

from __future__ import annotations

import pytest

from shadowcode.agent.observations import Observations, ObservationState
from shadowcode.errors import ToolError

pytestmark = pytest.mark.req("CLI-10")


@pytest.mark.req("CLI-10")
def test_a_path_never_observed_may_be_edited() -> None:
    seen = Observations()
    assert seen.get("a.py") is None
    seen.check_edit("a.py", b"anything")


@pytest.mark.req("CLI-10")
def test_an_edit_of_unchanged_content_passes_and_of_changed_content_is_refused() -> None:
    seen = Observations()
    seen.record("a.py", b"one")
    assert seen.get("a.py") is not None and seen.get("a.py").state is ObservationState.FRESH  # type: ignore[union-attr]
    seen.check_edit("a.py", b"one")
    with pytest.raises(ToolError, match="a.py changed since the task last read it; read it again first"):
        seen.check_edit("a.py", b"two")


@pytest.mark.req("CLI-10")
def test_invalidate_all_makes_every_observation_stale_until_read_again() -> None:
    seen = Observations()
    seen.record("a.py", b"one")
    seen.record("b.py", b"two")
    seen.invalidate_all()
    assert {seen.get(p).state for p in ("a.py", "b.py")} == {ObservationState.STALE}  # type: ignore[union-attr]
    with pytest.raises(ToolError, match="an MCP tool ran since.*read it again first"):
        seen.check_edit("a.py", b"one")
    seen.record("a.py", b"one")
    seen.check_edit("a.py", b"one")
    with pytest.raises(ToolError, match="read it again first"):
        seen.check_edit("b.py", b"two")


@pytest.mark.req("CLI-10")
def test_forget_drops_an_observation() -> None:
    seen = Observations()
    seen.record("a.py", b"one")
    seen.forget("a.py")
    seen.forget("never.py")
    seen.check_edit("a.py", b"other")
