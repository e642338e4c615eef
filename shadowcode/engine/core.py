"""The running engine: owners, the task queue, agent and test jobs, approvals, rollback.

:class:`EngineCore` is the one place delegated work is decided and run; every frontend (the
stdio server, the HTTP gateway, the CLI, the headless daemon's sockets) calls it. Policy lives
here: write access, trust and permission ceilings (SRV-09, SRV-10), owner confinement and
limits (SRV-11, SRV-24), exact approvals (ENG-07). Use it as an async context manager
(:meth:`EngineCore.running`); leaving it cancels every task, waits for their cleanup and
stops background processes (a temporary engine leaves nothing behind, SRV-07, SRV-23).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from shadowcode.engine import Engine
from shadowcode.engine.approvals import Approvals
from shadowcode.engine.owners import Owner, Owners, OwnerState
from shadowcode.engine.policy import Access, agent_request, require_write, within_ceiling
from shadowcode.engine.projects import Project
from shadowcode.engine.tasks import TaskRecords
from shadowcode.enums import EngineMode, PermissionLevel, TaskMode, TaskStatus
from shadowcode.errors import ConfigError, NotFound, PolicyError, ShadowcodeError, ToolError
from shadowcode.limits import (
    CLEANUP_DEADLINE_SECONDS,
    JOB_EVENTS_PAGE_MAX,
    MODEL_SLOTS_PER_MODEL_MAX,
    PROMPT_MAX_BYTES,
)

if TYPE_CHECKING:
    from shadowcode.agent.providers import ModelProvider
    from shadowcode.engine.mcp_servers import Snapshot
    from shadowcode.engine.scheduler import Scheduler
    from shadowcode.profile import ModelSettings, Profile
    from shadowcode.store.tasks import TaskRecord

__all__ = ["EngineCore"]

logger = logging.getLogger(__name__)


class EngineCore:
    """Runs delegated work for one profile. Create it over an open :class:`Engine`.

    Attributes:
        id: this engine instance's id (``eng_<hex>``), stored on its tasks and owners.
        mode: ``temporary`` (inside a frontend) or ``headless`` (the daemon).
    """

    def __init__(self, engine: Engine, *, mode: str = "temporary") -> None:
        from shadowcode.engine.checkpoints import Checkpoints
        from shadowcode.engine.processes import ProcessManager

        self.engine = engine
        self.mode = mode
        self.id = "eng_" + secrets.token_hex(8)
        self.records = TaskRecords(engine.store)
        self.approvals = Approvals(engine.store)
        self.checkpoints = Checkpoints(engine.store)
        self.processes = ProcessManager()
        self.owners = Owners(engine.store, self.id)
        self._scheduler: Scheduler | None = None
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._providers: dict[str, tuple[object, ModelProvider]] = {}
        self._retired: list[ModelProvider] = []

    # -- lifecycle ---------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[EngineCore]:
        """Start the engine; on exit cancel all work, wait for cleanup, stop background processes."""
        from shadowcode.engine.scheduler import Scheduler

        store = self.engine.store
        store.owners.engine_started(self.id, os.getpid(), EngineMode(self.mode))
        self.records.sweep_orphans()
        try:
            async with anyio.create_task_group() as tg:
                self._scheduler = Scheduler(tg)
                try:
                    yield self
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._shutdown()
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The frontend's own error, raised inside the task group: hand it back unwrapped.
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], ShadowcodeError):
                raise group.exceptions[0] from None
            raise
        finally:
            store.owners.engine_stopped(self.id)

    async def _shutdown(self) -> None:
        for owner in list(self.owners.open.values()):
            await self.close_owner(owner, "engine closed")
        if self._scheduler is not None:
            await self._scheduler.cancel_all(wait_seconds=CLEANUP_DEADLINE_SECONDS)
        await self.processes.aclose()
        for provider in [*(p for _, p in self._providers.values()), *self._retired]:
            try:
                await provider.aclose()
            except Exception:  # noqa: BLE001 - closing must go on
                logger.exception("closing a model provider failed")

    @property
    def scheduler(self) -> Scheduler:
        """The task queue (only while running)."""
        if self._scheduler is None:
            raise ShadowcodeError("the engine is not running")
        return self._scheduler

    # -- owners (SRV-21, SRV-22, SRV-24) -----------------------------------------------

    async def open_owner(self, kind: str, project: Path) -> Owner:
        """Register an owner for ``project`` before any of its work is scheduled (SRV-22)."""
        return self.owners.create(kind, project)

    async def close_owner(self, owner: Owner, reason: str) -> dict[str, Any]:
        """Cancel the owner's unfinished jobs, wait for their cleanup, and record the close (SRV-21).

        Returns:
            ``{"owner", "reason", "cancelled": [job ids]}``.
        """
        if owner.state is OwnerState.CLOSED:
            return {"owner": owner.id, "reason": reason, "cancelled": []}
        owner.state = OwnerState.CLOSING
        cancelled = []
        queued = set(self.scheduler.queued())
        # Queued jobs first: cancelling a running one frees a slot a queued one would take.
        for task_id in sorted(owner.task_ids, key=lambda t: (t not in queued, t)):
            if self.records.get(task_id).status.active:
                await self.scheduler.cancel(task_id, wait_seconds=CLEANUP_DEADLINE_SECONDS)
                cancelled.append(task_id)
        self.owners.closed(owner, reason)
        if cancelled:
            logger.warning("owner %s closed (%s): cancelled %s", owner.id, reason, ", ".join(cancelled))
        return {"owner": owner.id, "reason": reason, "cancelled": cancelled}

    # -- submissions (SRV-10, SRV-15, SRV-17, ENG-04, ENG-08) ---------------------------

    async def submit_task(
        self,
        *,
        owner: Owner | None,
        project: Project,
        prompt: str,
        mode: TaskMode | str = TaskMode.BUILD,
        level: PermissionLevel | str = PermissionLevel.READ_ONLY,
        model: str | None = None,
        access: Access,
    ) -> dict[str, Any]:
        """Queue an agent task and return its job at once (the id is not a claim of completion).

        The requested ``level`` is lowered to the project's configured level (never raised) and
        to ``read_only`` for an untrusted project or a Plan/Review task; anything above
        ``read_only`` needs write access (SRV-09, SRV-10).

        Returns:
            ``{"job_id", "status": "queued", "mode", "permission_level", "requested_level", "model", "notes": [str]}``.

        Raises:
            ToolError: empty or oversized prompt, unknown mode or level.
            PolicyError: write access missing, owner limits (SRV-24).
            ConfigError: no usable model configured (ENG-05).
        """
        mode, level = agent_request(mode, level)
        text = prompt.strip()
        if not text:
            raise ToolError("the prompt is empty")
        size = len(prompt.encode("utf-8"))
        if size > PROMPT_MAX_BYTES:
            raise ToolError(f"the prompt is {size} bytes; the limit is {PROMPT_MAX_BYTES} bytes")
        effective, notes = self._effective_level(project, mode, level)
        if effective is not PermissionLevel.READ_ONLY:
            require_write(project, access, f"a {effective} task")
        chosen = self._model_settings(model)
        if owner is not None:
            self.owners.charge(owner, project.path)
        task = self.records.create(
            project=project.path,
            owner=owner.id if owner else None,
            mode=mode,
            prompt=prompt,
            permission_level=effective,
            model=chosen.name,
            engine_id=self.id,
        )
        if owner is not None:
            owner.task_ids.add(task.id)
        for note in notes:
            self.records.event(task.id, "task.note", {"note": note})
        servers = self._mcp_snapshot(project, mode, effective)
        for note in servers.notes if servers is not None else ():
            self.records.event(task.id, "task.note", {"note": note})
        self.scheduler.submit(
            task.id,
            lambda: self._run_agent_task(task, chosen, servers),
            on_dequeued_cancel=lambda: self._finish_cancelled(task.id, "cancelled while queued"),
        )
        return {
            "job_id": task.id,
            "status": TaskStatus.QUEUED.value,
            "mode": mode.value,
            "permission_level": effective.value,
            "requested_level": level.value,
            "model": chosen.name,
            "notes": notes,
        }

    async def submit_test(
        self, *, owner: Owner | None, project: Project, command: list[str] | None, access: Access
    ) -> dict[str, Any]:
        """Queue a test job: the detected (or given) command, after exact approval, no model (SRV-17).

        Returns:
            ``{"job_id", "status": "queued", "command": [argv]}``.

        Raises:
            PolicyError: write access missing (it runs a command).
            ToolError: no command given and not exactly one detected.
        """
        from shadowcode.agent.toolbox import detect_single_test_command

        require_write(project, access, "a test job")
        if command is not None and (not command or not all(isinstance(a, str) and a for a in command)):
            raise ToolError("command must be a non-empty array of non-empty strings")
        argv = list(command) if command else detect_single_test_command(project.path)
        if owner is not None:
            self.owners.charge(owner, project.path)
        task = self.records.create(
            project=project.path,
            owner=owner.id if owner else None,
            mode=TaskMode.TEST,
            prompt=" ".join(argv),
            permission_level=PermissionLevel.WORKSPACE,
            model=None,
            engine_id=self.id,
        )
        if owner is not None:
            owner.task_ids.add(task.id)
        self.scheduler.submit(
            task.id,
            lambda: self._run_test_job(task, argv),
            on_dequeued_cancel=lambda: self._finish_cancelled(task.id, "cancelled while queued"),
        )
        return {"job_id": task.id, "status": TaskStatus.QUEUED.value, "command": argv}

    def _effective_level(
        self, project: Project, mode: TaskMode, requested: PermissionLevel
    ) -> tuple[PermissionLevel, list[str]]:
        notes: list[str] = []
        ceiling = PermissionLevel(project.level) if project.trusted else PermissionLevel.READ_ONLY
        effective = requested
        if not within_ceiling(requested, ceiling):
            effective = ceiling
            why = "configured level" if project.trusted else "untrusted project's level"
            notes.append(f"permission level lowered from {requested} to {ceiling}, the project's {why}")
        if not mode.writes and effective is not PermissionLevel.READ_ONLY:
            notes.append(f"{mode} tasks never write: running at {PermissionLevel.READ_ONLY}")
            effective = PermissionLevel.READ_ONLY
        return effective, notes

    def _model_settings(self, name: str | None) -> ModelSettings:
        settings = self.engine.settings()
        if not settings.models:
            raise ConfigError(
                "no model is configured: add one with `shadowcode models add` or in "
                f"{self.engine.profile.settings_path}"
            )
        wanted = name or settings.default_model or settings.models[0].name
        for entry in settings.models:
            if entry.name == wanted:
                return entry
        known = ", ".join(m.name for m in settings.models)
        raise ConfigError(f"no model named {wanted!r} is configured (configured: {known})")

    def _provider(self, settings: ModelSettings) -> ModelProvider:
        """The open provider for ``settings``, reopened when the model's definition changed.

        A long-lived engine must see ``models add`` replacing a model, or an edited model
        script, the way a fresh temporary engine would (ENG-05). The provider it replaces
        stays open for the tasks still using it and is closed with the engine.
        """
        from shadowcode.agent.providers import open_provider

        key = (settings, _script_stamp(settings, self.engine.profile))
        known = self._providers.get(settings.name)
        if known is not None and known[0] == key:
            return known[1]
        provider = open_provider(settings, self.engine.profile)
        if known is not None:
            self._retired.append(known[1])
        self._providers[settings.name] = (key, provider)
        return provider

    def _limiter(self, model: str) -> anyio.CapacityLimiter:
        limiter = self._limiters.get(model)
        if limiter is None:
            limiter = self._limiters[model] = anyio.CapacityLimiter(MODEL_SLOTS_PER_MODEL_MAX)
        return limiter

    # -- running jobs --------------------------------------------------------------------

    def _task_env(self, task: TaskRecord) -> Any:
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

    def _mcp_snapshot(self, project: Project, mode: TaskMode, level: PermissionLevel) -> Snapshot | None:
        """The enabled MCP servers a Build task above read_only in a trusted project keeps (CLI-06, CLI-09)."""
        if mode is not TaskMode.BUILD or level is PermissionLevel.READ_ONLY or not project.trusted:
            return None
        from shadowcode.engine.mcp_servers import McpRegistry

        return McpRegistry(self.engine.store).snapshot(project.path)

    async def _run_agent_task(self, task: TaskRecord, model: ModelSettings, servers: Snapshot | None = None) -> None:
        from shadowcode.agent.loop import run_agent

        await self._guarded(task.id, self._agent_body(task, model, run_agent, servers))

    async def _agent_body(
        self, task: TaskRecord, model: ModelSettings, run_agent: Any, servers: Snapshot | None = None
    ) -> str:
        from contextlib import AsyncExitStack

        env = self._task_env(task)
        async with AsyncExitStack() as stack:
            if servers is not None and servers.servers:
                from shadowcode.engine.mcp_servers import McpRegistry
                from shadowcode.mcp.client.pool import TaskServers, inline_tools_setting

                # Leaving the stack closes the task's MCP connections and waits for their cleanup,
                # before _guarded records the outcome (CLI-19).
                env.mcp = await stack.enter_async_context(
                    TaskServers(
                        snapshot=servers,
                        registry=McpRegistry(self.engine.store),
                        profile=self.engine.profile,
                        task_id=task.id,
                        records=self.records,
                        inline_tools=inline_tools_setting(self.engine.settings()),
                    )
                )
            answer = await run_agent(env, self._provider(model), task.prompt, self._limiter(model.name))
        if task.mode is TaskMode.PLAN:
            self.records.event(task.id, "plan", {"plan": answer, "prompt": task.prompt})
        return str(answer)

    async def _run_test_job(self, task: TaskRecord, argv: list[str]) -> None:
        await self._guarded(task.id, self._test_body(task, argv))

    async def _test_body(self, task: TaskRecord, argv: list[str]) -> str:
        from shadowcode.agent.toolbox import run_approved_command

        env = self._task_env(task)
        result = await run_approved_command(env, argv, Path(task.project), kind="test")
        if "error" in result:
            raise PolicyError(str(result["error"]))
        status = "passed" if result["exit_code"] == 0 else f"failed (exit {result['exit_code']})"
        return f"tests {status}"

    async def _guarded(self, task_id: str, body: Any) -> None:
        """Run a job body with status bookkeeping; cancellation and failures are recorded, never raised."""
        self.records.set_status(task_id, TaskStatus.RUNNING)
        self.records.event(task_id, "task.started", {"engine": self.id})
        try:
            answer = await body
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self._finish_cancelled(task_id, "cancelled")
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
            self.approvals.expire(task_id)

    def _finish_cancelled(self, task_id: str, why: str) -> None:
        self.approvals.expire(task_id)
        if self.records.get(task_id).status.active:
            self.records.set_status(task_id, TaskStatus.CANCELLED, error=why)
            self.records.event(task_id, "task.cancelled", {"reason": why})

    # -- inspection and control (SRV-16, SRV-11, SRV-18) ----------------------------------

    def _owned(self, task_id: str, owner: Owner | None, project: Path) -> TaskRecord:
        task = self.records.get(task_id, project)
        if owner is not None and task.owner != owner.id:
            raise NotFound(f"no job {task_id!r} created by this connection", task_id=task_id)
        return task

    async def jobs(self, owner: Owner) -> list[dict[str, Any]]:
        """The owner's jobs, newest first (SRV-16)."""
        return [_job_summary(t) for t in self.records.for_owner(owner.id)]

    async def job(self, task_id: str, *, owner: Owner | None, project: Path, cursor: int = 0) -> dict[str, Any]:
        """One job with a page of its events after ``cursor`` and its pending approvals (SRV-16).

        Returns:
            ``{"job": {...}, "events": [...], "next_cursor": int | None, "pending_approvals": [...]}``.
        """
        task = self._owned(task_id, owner, project)
        events = self.records.events(task_id, after=cursor, limit=JOB_EVENTS_PAGE_MAX)
        return {
            "job": _job_summary(task) | {"answer": task.answer, "error": task.error},
            "events": [e.as_dict() for e in events],
            "next_cursor": events[-1].id if len(events) == JOB_EVENTS_PAGE_MAX else None,
            "pending_approvals": [a.as_dict() for a in self.approvals.pending(task_id=task_id)],
        }

    async def cancel(self, task_id: str, *, owner: Owner | None, project: Path) -> dict[str, Any]:
        """Cancel one job and wait for its cleanup (SRV-16).

        Raises:
            NotFound: not a job of this owner/project.
            PolicyError: the job runs in another engine process.
        """
        task = self._owned(task_id, owner, project)
        if not task.status.active:
            return {"job_id": task_id, "status": task.status.value, "cancelled": False}
        if task.engine_id != self.id:
            raise PolicyError(f"job {task_id} runs in another engine; cancel it there")
        await self.scheduler.cancel(task_id, wait_seconds=CLEANUP_DEADLINE_SECONDS)
        return {"job_id": task_id, "status": self.records.get(task_id).status.value, "cancelled": True}

    async def resolve_approval(
        self, approval_id: str, decision: str, *, owner: Owner | None, by: str
    ) -> dict[str, Any]:
        """Approve or deny one exact pending approval; with ``owner``, only one of its own jobs (SRV-11)."""
        return self.approvals.resolve(approval_id, decision, by=by, owner=owner.id if owner else None).as_dict()

    async def rollback(self, task_id: str, *, project: Project, access: Access, confirm: bool) -> dict[str, Any]:
        """Restore the files a task changed, after conflict checks (SRV-18, ENG-06).

        Raises:
            ToolError: ``confirm`` is not true.
            PolicyError: write access missing.
            NotFound: not a task of this project.
            ConflictError: a file changed after the task wrote it (nothing is changed).
        """
        if confirm is not True:
            raise ToolError("rollback needs confirm: true")
        require_write(project, access, "a rollback")
        self.records.get(task_id, project.path)
        return self.checkpoints.rollback(project.path, task_id)


def _job_summary(task: TaskRecord) -> dict[str, Any]:
    return {
        "id": task.id,
        "mode": task.mode.value,
        "status": task.status.value,
        "prompt": task.prompt,
        "permission_level": task.permission_level.value,
        "model": task.model,
        "created_at": task.created_at,
        "finished_at": task.finished_at,
    }


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
