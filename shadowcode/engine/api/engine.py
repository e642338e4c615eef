"""The engine API: the engine itself and its background processes.

Covers ENG-03, SRV-23.

The request and result types of this part, and its verbs as :class:`EngineVerbs` declares them;
their in-process handlers are in :mod:`shadowcode.engine.verbs.engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb
from shadowcode.enums import EngineMode
from shadowcode.limits import (
    CLEANUP_DEADLINE_SECONDS,
)

__all__ = ["BackgroundProcess", "BackgroundRef", "BackgroundStopped", "EngineStatus", "EngineStopping", "EngineVerbs"]


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """What ``engine/status`` reports: the engine's id and pid, and its owners and jobs (ENG-03)."""

    id: str
    pid: int
    mode: EngineMode
    profile: str
    owners: int
    running_jobs: list[str]
    queued_jobs: list[str]


@dataclass(frozen=True, slots=True)
class EngineStopping:
    """The engine accepted a stop; it stops after owned cleanup (ENG-03)."""

    stopping: bool = True


@dataclass(frozen=True, slots=True)
class BackgroundRef:
    """One background process by id (SRV-23)."""

    id: str


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    """A background process started by an approved tool (SRV-23)."""

    id: str
    pid: int | None
    argv: list[str]
    cwd: str
    project: str
    started_at: int
    running: bool
    exit_code: int | None
    signal: int | None


@dataclass(frozen=True, slots=True)
class BackgroundStopped:
    """A stopped background process: how it ended and the last of its output (SRV-23)."""

    id: str
    pid: int | None
    exit_code: int | None
    signal: int | None
    output: str
    truncated: bool


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
