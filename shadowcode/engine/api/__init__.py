"""The one engine API: every operation a frontend may ask of the engine (ENG-03).

Frontends (the MCP server over stdio, the HTTP gateway, the CLI) hold an :class:`EngineApi`
and reach the engine through it only: no store, no policy of their own. Each call names what
is asked (a request type) and who asks (a
:class:`Caller`: the frontend's fixed project, its flags, its owner)::

    async with open_engine(profile) as api:
        note = await api.memory_read(MemoryRef(), Caller(project=root))

Each verb is declared once, as a method decorated with :func:`verb` in the module of its
part (:mod:`.engine`, :mod:`.projects`, :mod:`.inspection`, :mod:`.notes`, :mod:`.jobs`,
:mod:`.servers`, :mod:`.plugins`, each beside its request and result types): its wire name (``noun/verb``), its
request and result types (from the annotations) and its reply deadline.
From these declarations come the verb table (:func:`verbs`), the daemon's dispatch
(:mod:`shadowcode.engine.daemon`) and the remote client (:mod:`shadowcode.engine.remote`),
so a new verb is its declaration in its part plus its handler in
:mod:`shadowcode.engine.verbs`. Two implementations:

- :class:`~shadowcode.engine.local.LocalEngine`: in-process, either a temporary engine that
  lives and dies with its frontend or the headless daemon itself;
- :class:`~shadowcode.engine.remote.RemoteEngine`: the profile's headless engine over its
  control socket; owned calls travel on the owner's private socket (SRV-22).

Every request and result type is importable from here. Where the API shows a record as it is
stored (a task, an event, an approval, a goal, a checkpoint) the type is the store's own record,
re-exported, so frontends import it from here and never from the store.

Errors are :class:`~shadowcode.errors.ShadowcodeError` subclasses on both sides: over the
socket they travel as a code plus fields and come back as the same typed error.
"""

from __future__ import annotations

import functools
import typing

from shadowcode.engine.api._base import (
    Access,
    ApiBase,
    Caller,
    Empty,
    OwnerClosed,
    OwnerHandle,
    Verb,
    verb,
)
from shadowcode.engine.api.engine import (
    BackgroundProcess,
    BackgroundRef,
    BackgroundStopped,
    EngineStatus,
    EngineStopping,
    EngineVerbs,
)
from shadowcode.engine.api.inspection import (
    Check,
    CheckpointQuery,
    CheckpointRef,
    Diagnostics,
    DoctorRequest,
    InspectionVerbs,
    ProjectMap,
    SessionQuery,
    SqliteQuery,
    SqliteTablesRequest,
    ToolInfo,
    UnderstandRequest,
    WhyQuery,
)
from shadowcode.engine.api.jobs import (
    ApprovalAnswer,
    ApprovalAsk,
    ApprovalAsked,
    ApprovalDecision,
    JobCancelled,
    JobDetail,
    JobQuery,
    JobRef,
    JobState,
    JobSummary,
    JobVerbs,
    JobView,
    RecentJobs,
    Rollback,
    RollbackPlan,
    RollbackPreview,
    RollbackResult,
    TaskRequest,
    TaskSubmitted,
    TestRequest,
    TestSubmitted,
)
from shadowcode.engine.api.notes import (
    GoalAbandon,
    GoalAdvance,
    GoalCreate,
    GoalRef,
    MemoryAppend,
    MemoryNote,
    MemoryRef,
    MemoryReplace,
    NoteVerbs,
)
from shadowcode.engine.api.plugins import (
    PluginChange,
    PluginInfo,
    PluginList,
    PluginName,
    PluginPath,
    PluginReview,
    PluginTrust,
    PluginVerbs,
)
from shadowcode.engine.api.projects import (
    ModelAdd,
    ModelList,
    ProjectInfo,
    ProjectRef,
    ProjectTrust,
    ProjectVerbs,
    Status,
)
from shadowcode.engine.api.servers import (
    McpAdd,
    McpCatalog,
    McpConnectReport,
    McpDoctorReport,
    McpEnable,
    McpFinding,
    McpGrantChange,
    McpGrantState,
    McpImport,
    McpImportEntry,
    McpImportFile,
    McpImportNote,
    McpImportReport,
    McpRef,
    McpRemoval,
    McpRemove,
    McpServerInfo,
    McpServerQuery,
    McpServerTools,
    McpSignedIn,
    McpSignedOut,
    McpSignIn,
    McpSignInRef,
    McpSignInStarted,
    McpTool,
    McpValidate,
    McpValidation,
    ServerVerbs,
)
from shadowcode.project.documents import ProjectMapDocument, Review, ReviewChange, SqliteRows, SqliteTable, SqliteTables
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.checkpoints import ChangeRecord, CheckpointDetail, CheckpointSummary, WhyEntry
from shadowcode.store.goals import GoalRecord, GoalSummary, ProgressNote
from shadowcode.store.projects import SavedMap
from shadowcode.store.tasks import EventRecord, SessionRecord, TaskRecord

__all__ = [
    "Access",
    "ApiBase",
    "ApprovalAnswer",
    "ApprovalAsk",
    "ApprovalAsked",
    "ApprovalDecision",
    "ApprovalRecord",
    "BackgroundProcess",
    "BackgroundRef",
    "BackgroundStopped",
    "Caller",
    "ChangeRecord",
    "Check",
    "CheckpointDetail",
    "CheckpointQuery",
    "CheckpointRef",
    "CheckpointSummary",
    "Diagnostics",
    "DoctorRequest",
    "Empty",
    "EngineApi",
    "EngineStatus",
    "EngineStopping",
    "EngineVerbs",
    "EventRecord",
    "GoalAbandon",
    "GoalAdvance",
    "GoalCreate",
    "GoalRecord",
    "GoalRef",
    "GoalSummary",
    "InspectionVerbs",
    "JobCancelled",
    "JobDetail",
    "JobQuery",
    "JobRef",
    "JobState",
    "JobSummary",
    "JobVerbs",
    "JobView",
    "McpAdd",
    "McpCatalog",
    "McpConnectReport",
    "McpDoctorReport",
    "McpEnable",
    "McpFinding",
    "McpGrantChange",
    "McpGrantState",
    "McpImport",
    "McpImportEntry",
    "McpImportFile",
    "McpImportNote",
    "McpImportReport",
    "McpRef",
    "McpRemoval",
    "McpRemove",
    "McpServerInfo",
    "McpServerQuery",
    "McpServerTools",
    "McpSignIn",
    "McpSignInRef",
    "McpSignInStarted",
    "McpSignedIn",
    "McpSignedOut",
    "McpTool",
    "McpValidate",
    "McpValidation",
    "MemoryAppend",
    "MemoryNote",
    "MemoryRef",
    "MemoryReplace",
    "ModelAdd",
    "ModelList",
    "NoteVerbs",
    "OwnerClosed",
    "OwnerHandle",
    "PluginChange",
    "PluginInfo",
    "PluginList",
    "PluginName",
    "PluginPath",
    "PluginReview",
    "PluginTrust",
    "PluginVerbs",
    "ProgressNote",
    "ProjectInfo",
    "ProjectMap",
    "ProjectMapDocument",
    "ProjectRef",
    "ProjectTrust",
    "ProjectVerbs",
    "RecentJobs",
    "Review",
    "ReviewChange",
    "Rollback",
    "RollbackPlan",
    "RollbackPreview",
    "RollbackResult",
    "SavedMap",
    "ServerVerbs",
    "SessionQuery",
    "SessionRecord",
    "SqliteQuery",
    "SqliteRows",
    "SqliteTable",
    "SqliteTables",
    "SqliteTablesRequest",
    "Status",
    "TaskRecord",
    "TaskRequest",
    "TaskSubmitted",
    "TestRequest",
    "TestSubmitted",
    "ToolInfo",
    "UnderstandRequest",
    "Verb",
    "WhyEntry",
    "WhyQuery",
    "verb",
    "verb_named",
    "verbs",
]


class EngineApi(EngineVerbs, ProjectVerbs, InspectionVerbs, NoteVerbs, JobVerbs, ServerVerbs, PluginVerbs):
    """The engine as a frontend sees it: every verb of every part. Every verb takes ``(request, caller)``.

    Attributes:
        mode: ``temporary``, ``headless`` or ``attached`` (ENG-03).
    """


@functools.cache
def verbs() -> dict[str, Verb]:
    """The verb table, by wire name, derived from the declarations of :class:`EngineApi`'s parts."""
    table: dict[str, Verb] = {}
    for part in reversed(EngineApi.__mro__):
        for name, member in vars(part).items():
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
