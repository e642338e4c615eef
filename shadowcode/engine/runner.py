"""The job runner of one engine: the queue, agent tasks and test jobs as they run (ENG-04, SRV-15, SRV-17, SRV-21).

A job is queued with the :class:`~shadowcode.engine.scheduler.Scheduler` and, once a slot is
free, runs inside its own cancel scope: an agent task drives the model turn loop
(:func:`shadowcode.agent.loop.run_agent`) with the task's native and MCP tools; a test job
asks exact approval of its command and runs it, calling no model. Status and events are
recorded as the job moves, a failure of one job never stops the engine, and a cancelled job
records why it was cancelled (its owner's close, an explicit cancel, the engine's stop).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from shadowcode.engine.scheduler import Scheduler
from shadowcode.enums import TaskMode, TaskStatus
from shadowcode.errors import PolicyError, ShadowcodeError
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, MODEL_SLOTS_PER_MODEL_MAX

if TYPE_CHECKING:
    from shadowcode.agent.processes import ProcessManager
    from shadowcode.agent.providers import ModelProvider
    from shadowcode.agent.toolbox import TaskEnv
    from shadowcode.engine.approvals import Approvals
    from shadowcode.engine.checkpoints import Checkpoints
    from shadowcode.engine.mcp.registry import Snapshot
    from shadowcode.engine.tasks import TaskRecords
    from shadowcode.profile import Profile
    from shadowcode.settings import ModelSettings
    from shadowcode.store import Store

__all__ = ["JobRunner"]

logger = logging.getLogger(__name__)

CANCELLED = "cancelled"
"""The reason recorded when nothing more specific is known."""


class JobRunner:
    """Queues and runs one engine's jobs. Use :meth:`running` around the engine's life.

    Args:
        engine_id: the engine's id, recorded on each job's start event.
        profile: where model scripts and secrets are looked up.
        store: the profile's store (the MCP servers of a task keep their catalogs there).
        records: tasks and their events.
        approvals: exact approvals.
        checkpoints: where writes are recorded before they happen.
        processes: command children and background processes.
    """

    def __init__(
        self,
        *,
        engine_id: str,
        profile: Profile,
        store: Store,
        records: TaskRecords,
        approvals: Approvals,
        checkpoints: Checkpoints,
        processes: ProcessManager,
    ) -> None:
        self.engine_id = engine_id
        self.profile = profile
        self.store = store
        self.records = records
        self.approvals = approvals
        self.checkpoints = checkpoints
        self.processes = processes
        self._scheduler: Scheduler | None = None
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._providers: dict[str, tuple[object, ModelProvider]] = {}
        self._retired: list[ModelProvider] = []
        self._reasons: dict[str, str] = {}

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[JobRunner, None]:
        """Run the queue; leaving cancels every job, waits for its cleanup and closes the model providers."""
        async with anyio.create_task_group() as tg:
            self._scheduler = Scheduler(tg)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self.cancel_all("the engine stopped")
                    await self._close_providers()
                tg.cancel_scope.cancel()

    @property
    def scheduler(self) -> Scheduler:
        """The queue (only while running)."""
        if self._scheduler is None:
            raise ShadowcodeError("the engine is not running")
        return self._scheduler

    def queued(self) -> list[str]:
        """Ids of jobs waiting for a slot, in order."""
        return self.scheduler.queued()

    def running_jobs(self) -> list[str]:
        """Ids of jobs running now."""
        return self.scheduler.running()

    # -- submitting ---------------------------------------------------------------------

    def queue_agent(self, task: Any, model: ModelSettings, servers: Snapshot | None) -> None:
        """Queue an agent task recorded as ``task`` (ENG-04, SRV-15)."""
        self.scheduler.submit(
            task.id,
            lambda: self._guarded(task.id, self._agent_body(task, model, servers)),
            on_dequeued_cancel=lambda: self._finish_cancelled(task.id, while_queued=True),
        )

    def queue_test(self, task: Any, argv: list[str]) -> None:
        """Queue a test job recorded as ``task``: exact approval of ``argv``, then the command (SRV-17)."""
        self.scheduler.submit(
            task.id,
            lambda: self._guarded(task.id, self._test_body(task, argv)),
            on_dequeued_cancel=lambda: self._finish_cancelled(task.id, while_queued=True),
        )

    # -- cancelling (SRV-16, SRV-21, SRV-22) --------------------------------------------------

    async def cancel(self, task_id: str, reason: str) -> bool:
        """Cancel one job and wait (bounded) for its cleanup; ``reason`` is recorded on the job.

        Returns:
            True when the job was queued or running here and finished its cleanup in time.
        """
        self._reasons.setdefault(task_id, reason)
        self._expire_cancelled(task_id)
        return await self.scheduler.cancel(task_id, wait_seconds=CLEANUP_DEADLINE_SECONDS)

    def stop_starting(self) -> None:
        """Start no more queued jobs; they are cancelled by the shutdown that follows."""
        if self._scheduler is not None:
            self._scheduler.close()

    async def cancel_all(self, reason: str) -> None:
        """Cancel every queued then every running job, waiting (bounded) for their cleanup."""
        if self._scheduler is None:
            return
        for task_id in [*self._scheduler.queued(), *self._scheduler.running()]:
            self._reasons.setdefault(task_id, reason)
            self._expire_cancelled(task_id)
        await self._scheduler.cancel_all(wait_seconds=CLEANUP_DEADLINE_SECONDS)

    def _expire_cancelled(self, task_id: str) -> None:
        """Expire the job's pending approvals with its cancellation reason, before the job itself
        stops waiting for them (ENG-07): a later approve or deny then says why."""
        self.approvals.expire(task_id, f"its job was cancelled: {self._reasons[task_id]}")

    def _finish_cancelled(self, task_id: str, *, while_queued: bool = False) -> None:
        why = self._reasons.pop(task_id, CANCELLED)
        if while_queued:
            why += " while it was queued"
        self.approvals.expire(task_id, f"its job was cancelled: {why}")
        if self.records.get(task_id).status.active:
            self.records.set_status(task_id, TaskStatus.CANCELLED, error=why)
            self.records.event(task_id, "task.cancelled", {"reason": why})

    # -- running ------------------------------------------------------------------------

    async def _guarded(self, task_id: str, body: Awaitable[str]) -> None:
        """Run a job body with status bookkeeping; cancellation and failures are recorded, never raised."""
        self.records.set_status(task_id, TaskStatus.RUNNING)
        self.records.event(task_id, "task.started", {"engine": self.engine_id})
        try:
            answer = await body
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self._finish_cancelled(task_id)
            raise
        except ShadowcodeError as exc:
            self.records.set_status(task_id, TaskStatus.FAILED, error=exc.message)
            self.records.event(task_id, "task.failed", {"error": exc.message})
        except Exception as exc:  # noqa: BLE001 - one task's bug never stops the engine
            logger.exception("job failed unexpectedly")
            message = f"internal error ({type(exc).__name__}); see the engine's stderr"
            self.records.set_status(task_id, TaskStatus.FAILED, error=message)
            self.records.event(task_id, "task.failed", {"error": message})
        else:
            self.records.set_status(task_id, TaskStatus.DONE, answer=answer)
            self.records.event(task_id, "task.done", {"answer": answer})
        finally:
            self._reasons.pop(task_id, None)
            self.approvals.expire(task_id, "its job ended")

    def _task_env(self, task: Any) -> TaskEnv:
        # The agent's stack loads with the first job, not with every engine (a CLI verb opens one).
        from shadowcode.agent.toolbox import TaskEnv
        from shadowcode.engine.childenv import child_env

        return TaskEnv(
            task_id=task.id,
            owner=task.owner,
            project=Path(task.project),
            mode=task.mode,
            level=task.permission_level,
            records=self.records,
            approvals=self.approvals,
            checkpoints=self.checkpoints,
            processes=self.processes,
            env=child_env(),
        )

    async def _agent_body(self, task: Any, model: ModelSettings, servers: Snapshot | None) -> str:
        from shadowcode.agent.loop import run_agent

        env = self._task_env(task)
        async with AsyncExitStack() as stack:
            if servers is not None and servers.servers:
                # Imported here: the MCP client stack costs seconds to import, and a command-line
                # verb's temporary engine that runs no MCP task should not pay for it.
                from shadowcode.engine.mcp.registry import McpRegistry
                from shadowcode.engine.mcp.task_servers import TaskServers, inline_tools_setting

                # Leaving the stack closes the task's MCP connections and waits for their cleanup,
                # before _guarded records the outcome (CLI-19).
                registry = McpRegistry(self.store)
                env.mcp = await stack.enter_async_context(
                    TaskServers(
                        snapshot=servers,
                        catalog=registry,
                        plugins=registry,
                        profile=self.profile,
                        task_id=task.id,
                        records=self.records,
                        inline_tools=inline_tools_setting(self.profile.settings()),
                    )
                )
            answer = await run_agent(env, self.provider(model), task.prompt, self._limiter(model.name))
        if task.mode == TaskMode.PLAN:
            self.records.event(task.id, "plan", {"plan": answer, "prompt": task.prompt})
        return str(answer)

    async def _test_body(self, task: Any, argv: list[str]) -> str:
        from shadowcode.agent.toolbox import run_approved_command

        env = self._task_env(task)
        result = await run_approved_command(env, argv, Path(task.project), kind="test")
        if "error" in result:
            raise PolicyError(str(result["error"]))
        status = "passed" if result["exit_code"] == 0 else f"failed (exit {result['exit_code']})"
        return f"tests {status}"

    # -- model providers (ENG-05) ----------------------------------------------------------

    def provider(self, settings: ModelSettings) -> ModelProvider:
        """The open provider for ``settings``, reopened when the model's definition changed.

        A long-lived engine must see ``models add`` replacing a model, or an edited model
        script, the way a fresh temporary engine would (ENG-05). The provider it replaces
        stays open for the tasks still using it and is closed with the engine.
        """
        from shadowcode.agent.providers import open_provider

        key = (settings, _script_stamp(settings, self.profile))
        known = self._providers.get(settings.name)
        if known is not None and known[0] == key:
            return known[1]
        provider = open_provider(settings, self.profile)
        if known is not None:
            self._retired.append(known[1])
        self._providers[settings.name] = (key, provider)
        return provider

    def _limiter(self, model: str) -> anyio.CapacityLimiter:
        limiter = self._limiters.get(model)
        if limiter is None:
            limiter = self._limiters[model] = anyio.CapacityLimiter(MODEL_SLOTS_PER_MODEL_MAX)
        return limiter

    async def _close_providers(self) -> None:
        for provider in [*(p for _, p in self._providers.values()), *self._retired]:
            try:
                await provider.aclose()
            except Exception:  # noqa: BLE001 - closing must go on
                logger.exception("closing a model provider failed")


def _script_stamp(settings: ModelSettings, profile: Profile) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of a scripted model's script file, or None (no script, unreadable)."""
    from shadowcode.agent.providers._paths import profile_relative

    if not settings.script:
        return None
    try:
        st = profile_relative(settings.script, profile).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
