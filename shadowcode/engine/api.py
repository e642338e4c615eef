"""The one engine API: every operation a frontend may ask of the engine (ENG-03).

Frontends (the MCP server over stdio, the HTTP gateway, the CLI) hold an :class:`EngineApi`
and reach the engine through it only: no store, no policy of their own. Each call names what
is asked (a request type of :mod:`shadowcode.engine.messages`) and who asks (a
:class:`Caller`: the frontend's fixed project, its flags, its owner)::

    async with open_engine(profile) as api:
        note = await api.memory_read(MemoryRef(), Caller(project=root))

Each verb is declared once below, as a method decorated with :func:`verb`: its wire name
(``noun/verb``), its request and result types (from the annotations) and its reply deadline.
From these declarations come the verb table (:func:`verbs`), the daemon's dispatch
(:mod:`shadowcode.engine.daemon`) and the remote client (:mod:`shadowcode.engine.remote`),
so a new verb is its declaration here plus its implementation in
:class:`~shadowcode.engine.local.LocalEngine`. Two implementations:

- :class:`~shadowcode.engine.local.LocalEngine`: in-process, either a temporary engine that
  lives and dies with its frontend or the headless daemon itself;
- :class:`~shadowcode.engine.remote.RemoteEngine`: the profile's headless engine over its
  control socket; owned calls travel on the owner's private socket (SRV-22).

Errors are :class:`~shadowcode.errors.ShadowcodeError` subclasses on both sides: over the
socket they travel as a code plus fields and come back as the same typed error.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import JsonValue

from shadowcode.engine.messages import (
    ApprovalDecision,
    ApprovalRecord,
    BackgroundProcess,
    BackgroundRef,
    BackgroundStopped,
    CheckpointDetail,
    CheckpointQuery,
    CheckpointRef,
    CheckpointSummary,
    Diagnostics,
    DoctorRequest,
    Empty,
    EngineStatus,
    EngineStopping,
    GoalAbandon,
    GoalAdvance,
    GoalCreate,
    GoalRecord,
    GoalRef,
    GoalSummary,
    JobCancelled,
    JobDetail,
    JobQuery,
    JobRef,
    JobSummary,
    McpAdd,
    McpCatalog,
    McpEnable,
    McpGrantChange,
    McpRef,
    McpRemoval,
    McpRemove,
    McpServerInfo,
    MemoryAppend,
    MemoryNote,
    MemoryRef,
    MemoryReplace,
    ModelAdd,
    ModelList,
    OwnerClosed,
    ProjectInfo,
    ProjectMap,
    ProjectRef,
    ProjectTrust,
    RecentJobs,
    Review,
    Rollback,
    RollbackResult,
    SavedMap,
    SessionQuery,
    SessionRecord,
    SqliteQuery,
    SqliteRows,
    SqliteTables,
    SqliteTablesRequest,
    Status,
    TaskRecord,
    TaskRequest,
    TaskSubmitted,
    TestRequest,
    TestSubmitted,
    ToolInfo,
    UnderstandRequest,
    WhyEntry,
    WhyQuery,
)
from shadowcode.enums import EngineMode
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, OPERATION_DEADLINE_SECONDS, OWNER_REPLY_DEADLINE_SECONDS

__all__ = ["Access", "Caller", "EngineApi", "OwnerHandle", "Verb", "verb", "verbs"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_INSPECTION_DEADLINE_SECONDS = OPERATION_DEADLINE_SECONDS + 5.0
"""A remote inspection's reply deadline: past the frontend's own operation deadline (SRV-25), so
that one answers first and names the tool."""


@dataclass(frozen=True, slots=True)
class Access:
    """What a frontend was started with (SRV-09, SRV-11).

    Attributes:
        allow_write: ``mcp serve --allow-write``; True for the interactive CLI.
        allow_approvals: ``--allow-approvals``; only meaningful with ``allow_write``.
    """

    allow_write: bool = False
    allow_approvals: bool = False


class OwnerHandle(Protocol):
    """An owner of delegated jobs as its frontend holds it: an id, and (remote) its private socket."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks the engine.

    Attributes:
        project: the frontend's project folder (canonicalized by the engine); None where the
            call concerns no project (engine status, the CLI's job listings).
        access: the frontend's write and approval flags.
        owner: the frontend's owner, for calls about its own jobs (SRV-22); None otherwise.
        confined: True for MCP connections: jobs and approvals are reached only through this
            caller's owner and project (SRV-11, SRV-16); False for the CLI, which acts for the
            whole profile (ENG-07, ENG-08).
    """

    project: Path | None = None
    access: Access = field(default_factory=Access)
    owner: OwnerHandle | None = None
    confined: bool = False


@dataclass(frozen=True, slots=True)
class Verb:
    """One row of the verb table.

    Attributes:
        name: the method name on :class:`EngineApi`.
        wire: the control-socket method, ``noun/verb``.
        request: the request type.
        result: the result type (any type expression: a dataclass, a list of one, None-able).
        deadline_seconds: how long a remote caller waits for the reply.
    """

    name: str
    wire: str
    request: type[Any]
    result: Any
    deadline_seconds: float


def verb(wire: str, *, deadline_seconds: float = OWNER_REPLY_DEADLINE_SECONDS) -> Callable[[F], F]:
    """Declare an :class:`EngineApi` method as the verb ``wire``.

    The declared method's body is replaced by a call of ``self._invoke(name, request, caller)``,
    which :class:`~shadowcode.engine.remote.RemoteEngine` sends over the socket;
    :class:`~shadowcode.engine.local.LocalEngine` overrides every verb with its implementation.
    """

    def declare(fn: F) -> F:
        name = fn.__name__

        @functools.wraps(fn)
        async def invoke(self: EngineApi, request: Any, caller: Caller = Caller()) -> Any:
            return await self._invoke(name, request, caller)

        invoke.__verb__ = (wire, deadline_seconds)  # type: ignore[attr-defined]
        return invoke  # type: ignore[return-value]

    return declare


class EngineApi:
    """The engine as a frontend sees it. Every verb takes ``(request, caller)``.

    Attributes:
        mode: ``temporary``, ``headless`` or ``attached`` (ENG-03).
    """

    mode: EngineMode = EngineMode.TEMPORARY

    async def _invoke(self, name: str, request: Any, caller: Caller) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement {name}")

    # -- owners (SRV-21, SRV-22, SRV-24): not table verbs, they manage connections ----------

    async def open_owner(self, kind: str, caller: Caller) -> OwnerHandle:
        """Register an owner for ``caller.project`` before any of its work is scheduled (SRV-22).

        Raises:
            PolicyError: OWNER_SOCKETS_MAX owners are open (SRV-24).
            ConfigError: the project folder is not usable.
        """
        raise NotImplementedError

    async def close_owner(self, owner: OwnerHandle, reason: str) -> OwnerClosed:
        """Cancel the owner's unfinished jobs, wait for their cleanup, and record why (SRV-21)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Let go of the engine (a remote one keeps running)."""

    # -- the engine (ENG-03, SRV-23) ---------------------------------------------------------

    @verb("engine/status")
    async def engine_status(self, request: Empty, caller: Caller = Caller()) -> EngineStatus:
        """The engine's id, pid, mode, profile, open owners, running and queued jobs (ENG-03)."""
        ...

    @verb("engine/stop")
    async def engine_stop(self, request: Empty, caller: Caller = Caller()) -> EngineStopping:
        """Stop the headless engine after owned cleanup (ENG-03).

        Raises:
            ConfigError: this engine is a temporary one (it stops with its frontend).
        """
        ...

    @verb("background/list")
    async def background_list(self, request: Empty, caller: Caller = Caller()) -> list[BackgroundProcess]:
        """The engine's background processes (SRV-23)."""
        ...

    @verb("background/stop", deadline_seconds=CLEANUP_DEADLINE_SECONDS)
    async def background_stop(self, request: BackgroundRef, caller: Caller = Caller()) -> BackgroundStopped:
        """Stop one background process: TERM, 150 ms, KILL its group (SRV-23).

        Raises:
            NotFound: no such process.
        """
        ...

    # -- projects, status, models (ENG-01, ENG-02, ENG-05, SRV-20) ----------------------------

    @verb("project/get")
    async def project_get(self, request: Empty, caller: Caller = Caller()) -> ProjectInfo:
        """The caller's project, canonicalized and recorded (untrusted if new) (ENG-02).

        Raises:
            ConfigError: the folder does not exist or is not a folder.
        """
        ...

    @verb("project/trust")
    async def project_trust(self, request: ProjectTrust, caller: Caller = Caller()) -> ProjectInfo:
        """Trust a project folder at a permission level (ENG-02).

        Raises:
            ConfigError: the folder is not usable.
        """
        ...

    @verb("project/untrust")
    async def project_untrust(self, request: ProjectRef, caller: Caller = Caller()) -> ProjectInfo:
        """Remove a project's trust; its records stay (ENG-02)."""
        ...

    @verb("project/list")
    async def project_list(self, request: Empty, caller: Caller = Caller()) -> list[ProjectInfo]:
        """Every trusted project, by path (ENG-02)."""
        ...

    @verb("status/get")
    async def status(self, request: Empty, caller: Caller = Caller()) -> Status:
        """The caller's project, the profile, the engine and its models (SRV-20)."""
        ...

    @verb("model/list")
    async def model_list(self, request: Empty, caller: Caller = Caller()) -> ModelList:
        """The configured models and the default one (ENG-05)."""
        ...

    @verb("model/add")
    async def model_add(self, request: ModelAdd, caller: Caller = Caller()) -> ModelList:
        """Add or replace a model in the profile's settings (ENG-05).

        Raises:
            ConfigError: the model's settings are incomplete for its provider.
        """
        ...

    # -- inspection (SRV-13, SRV-19, SRV-20) ---------------------------------------------------

    @verb("tool/list")
    async def tool_list(self, request: Empty, caller: Caller = Caller()) -> list[ToolInfo]:
        """The native tools a delegated task can be given, and the level each needs (SRV-20)."""
        ...

    @verb("project/review", deadline_seconds=_INSPECTION_DEADLINE_SECONDS)
    async def review(self, request: Empty, caller: Caller = Caller()) -> Review:
        """The uncommitted changes of the project's git working tree; runs no repository program (SRV-20).

        Raises:
            ToolError: git failed or overran its deadline.
        """
        ...

    @verb("project/understand", deadline_seconds=_INSPECTION_DEADLINE_SECONDS)
    async def understand(self, request: UnderstandRequest, caller: Caller = Caller()) -> ProjectMap:
        """A bounded map of the project, saved only when asked (SRV-19).

        Raises:
            PolicyError: ``save`` without write access.
        """
        ...

    @verb("project/doctor", deadline_seconds=_INSPECTION_DEADLINE_SECONDS)
    async def doctor(self, request: DoctorRequest, caller: Caller = Caller()) -> Diagnostics:
        """Diagnostics of the project, profile and engine; never repairs; probes the model only when asked (SRV-19)."""
        ...

    @verb("sqlite/tables", deadline_seconds=_INSPECTION_DEADLINE_SECONDS)
    async def sqlite_tables(self, request: SqliteTablesRequest, caller: Caller = Caller()) -> SqliteTables:
        """The tables and views of a database file inside the project (SRV-13).

        Raises:
            ToolError: a path outside the project, a file that is not a database.
        """
        ...

    @verb("sqlite/query", deadline_seconds=_INSPECTION_DEADLINE_SECONDS)
    async def sqlite_query(self, request: SqliteQuery, caller: Caller = Caller()) -> SqliteRows:
        """One bounded read-only query on a database file inside the project (SRV-13).

        Raises:
            ToolError: anything that is not one read, bad parameters, the row, byte or time bound.
        """
        ...

    @verb("change/why")
    async def why(self, request: WhyQuery, caller: Caller = Caller()) -> list[WhyEntry]:
        """Recorded changes of a path or a task, newest first (SRV-19)."""
        ...

    @verb("session/list")
    async def sessions(self, request: SessionQuery, caller: Caller = Caller()) -> list[SessionRecord]:
        """The project's task sessions, newest first, filtered by project before the limit (SRV-08)."""
        ...

    @verb("checkpoint/list")
    async def checkpoints(self, request: CheckpointQuery, caller: Caller = Caller()) -> list[CheckpointSummary]:
        """The project's checkpoints, newest first (SRV-18)."""
        ...

    @verb("checkpoint/get")
    async def checkpoint(self, request: CheckpointRef, caller: Caller = Caller()) -> CheckpointDetail:
        """One checkpoint of the project with its changes (SRV-18).

        Raises:
            NotFound: no such checkpoint in this project.
        """
        ...

    @verb("plan/get")
    async def plan(self, request: Empty, caller: Caller = Caller()) -> JsonValue:
        """The newest recorded plan of the project, or None (SRV-05)."""
        ...

    @verb("map/get")
    async def saved_map(self, request: Empty, caller: Caller = Caller()) -> SavedMap | None:
        """The project map saved by ``shadow_understand``, or None (SRV-05)."""
        ...

    # -- memory and goals (SRV-12, SRV-14) ------------------------------------------------------

    @verb("memory/read")
    async def memory_read(self, request: MemoryRef, caller: Caller = Caller()) -> MemoryNote:
        """The project note or an exact task's note (SRV-12).

        Raises:
            ToolError: a bad scope and task id combination.
            NotFound: the task is not one of this project.
        """
        ...

    @verb("memory/append")
    async def memory_append(self, request: MemoryAppend, caller: Caller = Caller()) -> MemoryNote:
        """Append a paragraph to a note; needs write access (SRV-12).

        Raises:
            PolicyError: no write access. ToolError: empty text, the note's size bound.
        """
        ...

    @verb("memory/replace")
    async def memory_replace(self, request: MemoryReplace, caller: Caller = Caller()) -> MemoryNote:
        """Replace a note at its current hash; needs write access (SRV-12).

        Raises:
            PolicyError: no write access. ConflictError: a stale hash (nothing changes).
        """
        ...

    @verb("goal/list")
    async def goal_list(self, request: Empty, caller: Caller = Caller()) -> list[GoalSummary]:
        """The project's goals, newest first (SRV-14)."""
        ...

    @verb("goal/get")
    async def goal_get(self, request: GoalRef, caller: Caller = Caller()) -> GoalRecord:
        """One goal of the project with its progress notes (SRV-14).

        Raises:
            NotFound: no such goal in this project.
        """
        ...

    @verb("goal/create")
    async def goal_create(self, request: GoalCreate, caller: Caller = Caller()) -> GoalRecord:
        """Create an active goal; never starts a task; needs write access (SRV-14)."""
        ...

    @verb("goal/advance")
    async def goal_advance(self, request: GoalAdvance, caller: Caller = Caller()) -> GoalRecord:
        """Record progress on an active goal, optionally completing it; needs write access (SRV-14)."""
        ...

    @verb("goal/abandon")
    async def goal_abandon(self, request: GoalAbandon, caller: Caller = Caller()) -> GoalRecord:
        """Abandon an active goal; needs write access (SRV-14)."""
        ...

    # -- delegated work (SRV-10, SRV-11, SRV-15, SRV-16, SRV-17, SRV-18, ENG-07, ENG-08) ------

    @verb("task/create")
    async def task_submit(self, request: TaskRequest, caller: Caller = Caller()) -> TaskSubmitted:
        """Queue an agent task for the caller's project and return its job at once (SRV-15).

        Owned by ``caller.owner``, or detached without one (ENG-08). The requested level is
        lowered to the project's ceiling, and to read_only for an untrusted project or a Plan
        or Review task; above read_only it needs write access (SRV-09, SRV-10).

        Raises:
            ToolError: an empty or oversized prompt. PolicyError: write access, owner limits
            (SRV-24). ConfigError: no usable model (ENG-05).
        """
        ...

    @verb("test/create")
    async def test_submit(self, request: TestRequest, caller: Caller = Caller()) -> TestSubmitted:
        """Queue a test job that calls no model; it asks exact approval of its command (SRV-17).

        Raises:
            PolicyError: no write access. ToolError: no command given and not exactly one detected.
        """
        ...

    @verb("job/list")
    async def jobs(self, request: Empty, caller: Caller = Caller()) -> list[JobSummary]:
        """The caller's owner's jobs, newest first; none before its first delegation (SRV-16)."""
        ...

    @verb("job/recent")
    async def jobs_recent(self, request: RecentJobs, caller: Caller = Caller()) -> list[TaskRecord]:
        """The profile's newest jobs of every owner; unfinished jobs of a stopped engine read interrupted (ENG-08)."""
        ...

    @verb("job/get")
    async def job(self, request: JobQuery, caller: Caller = Caller()) -> JobDetail:
        """One job, a page of its events after the cursor, its pending approvals (SRV-16).

        Raises:
            NotFound: not a job of this caller (its owner and project when confined).
        """
        ...

    @verb("job/cancel", deadline_seconds=CLEANUP_DEADLINE_SECONDS)
    async def job_cancel(self, request: JobRef, caller: Caller = Caller()) -> JobCancelled:
        """Cancel one job and wait for its cleanup (SRV-16).

        Raises:
            NotFound: not a job of this caller. PolicyError: it runs in another engine process.
        """
        ...

    @verb("approval/list")
    async def approvals(self, request: Empty, caller: Caller = Caller()) -> list[ApprovalRecord]:
        """Pending approvals, oldest first: the caller's owner's when confined, else the profile's (ENG-07)."""
        ...

    @verb("approval/resolve")
    async def approval_resolve(self, request: ApprovalDecision, caller: Caller = Caller()) -> ApprovalRecord:
        """Approve or deny one exact pending approval (ENG-07, SRV-11).

        A confined caller reaches only approvals of its owner's jobs, and approving needs a
        frontend started with write and approval access; denying needs neither.

        Raises:
            NotFound: no such approval (of this owner). PolicyError: missing access, or it is
            no longer pending.
        """
        ...

    @verb("task/rollback")
    async def rollback(self, request: Rollback, caller: Caller = Caller()) -> RollbackResult:
        """Restore the files a task changed, after conflict checks; needs write access and confirm (SRV-18).

        Raises:
            ToolError: confirm is not true. PolicyError: no write access. NotFound: not a task of
            this project. ConflictError: a file changed after the task wrote it (nothing changes).
        """
        ...

    # -- external MCP servers (CLI-01, CLI-02, CLI-05) --------------------------------------------

    @verb("mcp/catalog")
    async def mcp_catalog(self, request: Empty, caller: Caller = Caller()) -> McpCatalog:
        """Definitions with hashes and grant states for the caller's project; starts nothing (CLI-01)."""
        ...

    @verb("mcp/add")
    async def mcp_add(self, request: McpAdd, caller: Caller = Caller()) -> McpServerInfo:
        """Register a definition file globally as ``config:NAME``; starts nothing (CLI-01, CLI-05).

        Raises:
            ConfigError: an unreadable or invalid file. ConflictError: replacing without the current hash.
        """
        ...

    @verb("mcp/enable")
    async def mcp_enable(self, request: McpEnable, caller: Caller = Caller()) -> McpGrantChange:
        """Enable a definition for the caller's trusted project at its reviewed hash (CLI-02, CLI-05)."""
        ...

    @verb("mcp/disable")
    async def mcp_disable(self, request: McpRef, caller: Caller = Caller()) -> McpGrantChange:
        """Revoke the caller's project's grant; running tasks keep theirs (CLI-05, CLI-06)."""
        ...

    @verb("mcp/remove")
    async def mcp_remove(self, request: McpRemove, caller: Caller = Caller()) -> McpRemoval:
        """Remove a global definition at its current hash and revoke its grants (CLI-05)."""
        ...


@functools.cache
def verbs() -> dict[str, Verb]:
    """The verb table, by wire name, derived from :class:`EngineApi`'s declarations."""
    table: dict[str, Verb] = {}
    for name, member in vars(EngineApi).items():
        declared = getattr(member, "__verb__", None)
        if declared is None:
            continue
        wire, deadline = declared
        hints = typing.get_type_hints(member)
        table[wire] = Verb(name, wire, hints["request"], hints["return"], deadline)
    return table


@functools.cache
def verb_named(name: str) -> Verb:
    """The verb whose method is ``name``.

    Raises:
        KeyError: no such verb.
    """
    for entry in verbs().values():
        if entry.name == name:
            return entry
    raise KeyError(name)
