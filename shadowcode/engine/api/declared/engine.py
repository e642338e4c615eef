"""The verbs of the engine API's engine part, as :class:`EngineVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.engine`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.engine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS

if TYPE_CHECKING:
    from shadowcode.engine.api.engine import (
        BackgroundProcess,
        BackgroundRef,
        BackgroundStopped,
        EngineStatus,
        EngineStopping,
    )

__all__ = ["EngineVerbs"]


class EngineVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("engine/status")
    async def engine_status(self, request: Empty, caller: Caller = NOBODY) -> EngineStatus:
        """The engine's id, pid, mode, profile, open owners, running and queued jobs (ENG-03)."""
        ...

    @verb("engine/stop")
    async def engine_stop(self, request: Empty, caller: Caller = NOBODY) -> EngineStopping:
        """Stop the headless engine after owned cleanup (ENG-03).

        Raises:
            ConfigError: this engine is a temporary one (it stops with its frontend).
        """
        ...

    @verb("background/list")
    async def background_list(self, request: Empty, caller: Caller = NOBODY) -> list[BackgroundProcess]:
        """The engine's background processes (SRV-23)."""
        ...

    @verb("background/stop", deadline_seconds=CLEANUP_DEADLINE_SECONDS)
    async def background_stop(self, request: BackgroundRef, caller: Caller = NOBODY) -> BackgroundStopped:
        """Stop one background process: TERM, 150 ms, KILL its group (SRV-23).

        Raises:
            NotFound: no such process.
        """
        ...
