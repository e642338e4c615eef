"""The engine API: the engine itself and its background processes.

Covers ENG-03, SRV-23.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.engine` and handled in process in :mod:`shadowcode.engine.verbs.engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.enums import EngineMode

__all__ = ["BackgroundProcess", "BackgroundRef", "BackgroundStopped", "EngineStatus", "EngineStopping"]


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
