"""The engine in this process: the in-process implementation of the engine API (ENG-03).

A :class:`LocalEngine` is either a temporary engine, opened by a frontend that found no
headless engine and closed with it, or the headless daemon itself
(:mod:`shadowcode.engine.daemon`), which also serves relayed MCP sessions in-process. Each
verb of :class:`~shadowcode.engine.api.EngineApi` is implemented by one handler in
:mod:`shadowcode.engine.verbs`; this module holds the engine's life and its owners.

Leaving :meth:`LocalEngine.running` closes every owner (cancelling its jobs), cancels all
remaining work, waits for its cleanup and stops background processes: a temporary engine
leaves nothing behind (SRV-07, SRV-23).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from shadowcode.agent.processes import ProcessManager
from shadowcode.engine.api import Caller, EngineApi, OwnerClosed, OwnerHandle
from shadowcode.engine.approvals import Approvals
from shadowcode.engine.checkpoints import Checkpoints
from shadowcode.engine.owners import Owner, Owners, OwnerState
from shadowcode.engine.runner import JobRunner
from shadowcode.engine.state import EngineState
from shadowcode.engine.tasks import TaskRecords
from shadowcode.engine.verbs import handler
from shadowcode.enums import EngineMode
from shadowcode.errors import ProtocolError, ShadowcodeError
from shadowcode.profile import Profile
from shadowcode.store import Store

__all__ = ["LocalEngine"]

logger = logging.getLogger(__name__)


class LocalEngine(EngineApi):
    """The engine of ``profile`` in this process. Use it inside :meth:`running`.

    Args:
        profile: the profile it serves; its folders are created if missing.
        mode: ``temporary`` (inside a frontend) or ``headless`` (the daemon).

    Raises:
        StoreError: the profile's store cannot be opened or migrated.
    """

    def __init__(self, profile: Profile, *, mode: EngineMode = EngineMode.TEMPORARY) -> None:
        profile.ensure()
        self.mode = mode
        self._ran = False
        store = Store(profile.db_path)
        engine_id = "eng_" + secrets.token_hex(8)
        records = TaskRecords(store)
        approvals = Approvals(store)
        checkpoints = Checkpoints(store)
        processes = ProcessManager()
        runner = JobRunner(
            engine_id=engine_id,
            profile=profile,
            store=store,
            records=records,
            approvals=approvals,
            checkpoints=checkpoints,
            processes=processes,
        )
        self.state = EngineState(
            profile=profile,
            store=store,
            id=engine_id,
            mode=mode,
            records=records,
            approvals=approvals,
            checkpoints=checkpoints,
            processes=processes,
            owners=Owners(store, engine_id),
            runner=runner,
        )

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[LocalEngine, None]:
        """Run the engine; leaving closes owners, cancels all work and waits for its cleanup."""
        state = self.state
        if self._ran:
            raise ShadowcodeError("this engine has already run; open a new one")
        self._ran = True
        state.store.owners.engine_started(state.id, os.getpid(), state.mode)
        state.records.sweep_orphans()
        try:
            async with state.runner.running(), state.logins.running():
                try:
                    yield self
                finally:
                    with anyio.CancelScope(shield=True):
                        # A slot freed by a cancelled job must not start a queued one meanwhile.
                        state.runner.stop_starting()
                        for owner in list(state.owners.open.values()):
                            await self.close_owner(owner, "the engine stopped")
                        await state.runner.cancel_all("the engine stopped")
                        await state.processes.aclose()
        except BaseExceptionGroup as group:
            # The frontend's own error, raised inside the task group: hand it back unwrapped.
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], ShadowcodeError):
                raise group.exceptions[0] from None
            raise
        finally:
            state.store.owners.engine_stopped(state.id)

    async def aclose(self) -> None:
        """Close the store; use after :meth:`running` has ended."""
        self.state.store.close()

    async def call_verb(self, name: str, request: Any, caller: Caller) -> Any:
        return await handler(name)(self.state, request, caller)

    # -- owners (SRV-21, SRV-22, SRV-24) -------------------------------------------------

    async def open_owner(self, kind: str, caller: Caller) -> OwnerHandle:
        """Register an owner for the caller's project before any of its work is scheduled (SRV-22)."""
        return self.state.owners.create(kind, self.state.project(caller).path)

    async def close_owner(self, owner: OwnerHandle, reason: str) -> OwnerClosed:
        """Cancel the owner's unfinished jobs (queued ones first), wait for their cleanup, record the close (SRV-21)."""
        if not isinstance(owner, Owner):
            raise ProtocolError("this owner does not belong to this engine")
        state = self.state
        if owner.state is OwnerState.CLOSED:
            return OwnerClosed(owner.id, reason, [])
        owner.state = OwnerState.CLOSING
        cancelled: list[str] = []
        queued = set(state.runner.queued())
        # Queued jobs first: cancelling a running one frees a slot a queued one would take (SRV-22).
        for task_id in sorted(owner.task_ids, key=lambda t: (t not in queued, t)):
            if state.records.get(task_id).status.active:
                await state.runner.cancel(task_id, f"its owner closed ({reason})")
                cancelled.append(task_id)
        state.owners.closed(owner, reason)
        if cancelled:
            logger.warning("owner %s closed (%s): cancelled %s", owner.id, reason, ", ".join(cancelled))
        return OwnerClosed(owner.id, reason, cancelled)
