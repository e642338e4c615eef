"""Owners: the live connections that delegated work and answer for it (SRV-21, SRV-22, SRV-24, GW-06).

An owner is one stdio connection, one gateway, or one attached relay. It may submit at most
OWNER_JOBS_MAX jobs over its life, all for its one project. When it closes (EOF, protocol
failure, kill) the engine cancels its unfinished jobs and waits for their cleanup. The live
state is kept here; each owner's row (opened, jobs, closed and why) goes to
:attr:`Store.owners <shadowcode.store.Store>`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from shadowcode.errors import PolicyError
from shadowcode.limits import OWNER_JOBS_MAX, OWNER_SOCKETS_MAX
from shadowcode.store import Store

__all__ = ["Owner", "OwnerState", "Owners"]


class OwnerState(Enum):
    """Lifecycle of an owner."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass
class Owner:
    """One owner of delegated jobs.

    Attributes:
        id: ``own_<hex>``, stored on its tasks.
        kind: ``stdio``, ``gateway`` or ``relay``.
        project: the canonical project its jobs are confined to.
        jobs: jobs submitted so far (lifetime count).
        state: open, closing or closed.
    """

    id: str
    kind: str
    project: Path
    jobs: int = 0
    state: OwnerState = OwnerState.OPEN
    task_ids: set[str] = field(default_factory=set[str])


class Owners:
    """The open owners of one engine, within the per-profile socket limit."""

    def __init__(self, store: Store, engine_id: str, *, sockets_max: int = OWNER_SOCKETS_MAX) -> None:
        self._rows = store.owners
        self._engine_id = engine_id
        self._sockets_max = sockets_max
        self.open: dict[str, Owner] = {}

    def create(self, kind: str, project: Path) -> Owner:
        """Register a new owner before any of its work is scheduled (SRV-22).

        Raises:
            PolicyError: OWNER_SOCKETS_MAX owners are already open.
        """
        if len(self.open) >= self._sockets_max:
            raise PolicyError(f"the engine already has {self._sockets_max} owner connections open; close one and retry")
        owner = Owner(id="own_" + secrets.token_hex(8), kind=kind, project=project)
        self._rows.opened(owner.id, engine_id=self._engine_id, kind=kind, project=project)
        self.open[owner.id] = owner
        return owner

    def charge(self, owner: Owner, project: Path) -> None:
        """Count one more job for ``owner`` (SRV-24).

        Raises:
            PolicyError: the owner is closing, the project is not its project, or it used its
                OWNER_JOBS_MAX jobs (restart the connection).
        """
        if owner.state is not OwnerState.OPEN:
            raise PolicyError("this connection is closing; it accepts no new jobs")
        if project != owner.project:
            raise PolicyError("an owner's jobs are confined to its own project")
        if owner.jobs >= OWNER_JOBS_MAX:
            raise PolicyError(
                f"this connection has submitted its {OWNER_JOBS_MAX} jobs; reconnect (or restart the gateway) "
                "to submit more"
            )
        owner.jobs += 1
        self._rows.set_jobs(owner.id, owner.jobs)

    def closed(self, owner: Owner, reason: str) -> None:
        """Record that ``owner`` closed, and why."""
        owner.state = OwnerState.CLOSED
        self.open.pop(owner.id, None)
        self._rows.closed(owner.id, reason)
