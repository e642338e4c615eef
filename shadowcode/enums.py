"""The small closed vocabularies every layer shares: permission levels, task modes and states, import hosts.

Each is a ``StrEnum``, so a member compares equal to its wire and database spelling
(``PermissionLevel.READ_ONLY == "read_only"``) and serializes as that string.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ApprovalStatus", "EngineMode", "ImportHost", "PermissionLevel", "TaskMode", "TaskStatus"]


class PermissionLevel(StrEnum):
    """What a trusted project, or one task in it, may do (ENG-02, SRV-10).

    Ordered: a task may lower its project's configured level, never raise it.
    """

    READ_ONLY = "read_only"
    WORKSPACE = "workspace"
    ELEVATED = "elevated"

    def within(self, ceiling: PermissionLevel) -> bool:
        """True when this level is at most ``ceiling`` (SRV-10)."""
        order = list(PermissionLevel)
        return order.index(self) <= order.index(ceiling)


class TaskMode(StrEnum):
    """What a job is: an agent task in one of three modes, or a test job that calls no model (ENG-04, SRV-17)."""

    BUILD = "build"
    PLAN = "plan"
    REVIEW = "review"
    TEST = "test"

    @property
    def writes(self) -> bool:
        """Only Build tasks and test jobs may change anything; Plan and Review never write (ENG-04)."""
        return self in (TaskMode.BUILD, TaskMode.TEST)


class TaskStatus(StrEnum):
    """A job's state: ``queued → running ⇄ waiting → done | failed | cancelled``; ``interrupted``
    marks work whose engine ended without finishing it (SRV-15, SRV-16)."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def active(self) -> bool:
        """True while the job is unfinished (queued, running or waiting for an approval)."""
        return self in (TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.WAITING)


class ApprovalStatus(StrEnum):
    """An exact approval's state (ENG-07): pending until approved, denied, or expired with its task."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


class EngineMode(StrEnum):
    """How a frontend reaches its engine (ENG-03): one inside its own process that closes with it
    (``temporary``), the headless daemon itself (``headless``), or the daemon over its socket (``attached``)."""

    TEMPORARY = "temporary"
    HEADLESS = "headless"
    ATTACHED = "attached"


class ImportHost(StrEnum):
    """The MCP hosts whose config files ``mcp import`` reads, in ``--from`` order (CW-01).

    One table for the parser (:mod:`shadowcode.mcp.client.imports.formats`) and the command
    that prints its report (:mod:`shadowcode.cli.mcp_import`), which may not import each other.
    """

    CLAUDE = "claude"
    CURSOR = "cursor"
    CODEX = "codex"
    VSCODE = "vscode"
    GEMINI = "gemini"
    QWEN = "qwen"
    CLINE = "cline"
    OPENCODE = "opencode"
    KILO = "kilo"
    CONTINUE = "continue"
    ZED = "zed"
    WINDSURF = "windsurf"
    GENERIC = "generic"

    @property
    def label(self) -> str:
        """How reports name the host (``VS Code``; ``mcp.json`` for any mcp.json-style file)."""
        return _IMPORT_HOST_LABELS[self]


_IMPORT_HOST_LABELS: dict[ImportHost, str] = {
    ImportHost.CLAUDE: "Claude Code",
    ImportHost.CURSOR: "Cursor",
    ImportHost.CODEX: "Codex",
    ImportHost.VSCODE: "VS Code",
    ImportHost.GEMINI: "Gemini CLI",
    ImportHost.QWEN: "Qwen Code",
    ImportHost.CLINE: "Cline",
    ImportHost.OPENCODE: "opencode",
    ImportHost.KILO: "Kilo",
    ImportHost.CONTINUE: "Continue",
    ImportHost.ZED: "Zed",
    ImportHost.WINDSURF: "Windsurf",
    ImportHost.GENERIC: "mcp.json",
}
