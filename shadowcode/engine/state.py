"""What the in-process engine's verb handlers work with (ENG-03).

:class:`EngineState` holds one engine's profile, store, records, process manager, owners and
job runner; :mod:`shadowcode.engine.verbs` handlers receive it with each request and the
:class:`~shadowcode.engine.api.Caller`. The policy every handler shares lives here too:
resolving the caller's project (ENG-02) and the write rule (SRV-08, SRV-09).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from shadowcode.agent.processes import ProcessManager
from shadowcode.engine.api import Access, Caller
from shadowcode.engine.approval_states import ApprovalStates
from shadowcode.engine.approvals import Approvals
from shadowcode.engine.checkpoints import Checkpoints
from shadowcode.engine.goals import Goals
from shadowcode.engine.history import History
from shadowcode.engine.mcp.pending_logins import PendingLogins
from shadowcode.engine.memory import MemoryNotes
from shadowcode.engine.owners import Owners
from shadowcode.engine.projects import Project, ProjectRegistry
from shadowcode.engine.runner import JobRunner
from shadowcode.engine.tasks import TaskRecords
from shadowcode.enums import EngineMode, PermissionLevel
from shadowcode.errors import PolicyError, ToolError
from shadowcode.profile import Profile
from shadowcode.project.paths import canonical_project
from shadowcode.store import Store

if TYPE_CHECKING:
    from shadowcode.engine.mcp.registry import McpRegistry
    from shadowcode.settings import Settings

__all__ = ["EngineState", "require_write"]


def require_write(project: Project, access: Access, what: str) -> None:
    """Refuse a change unless the frontend allows writes and the project is trusted above read_only (SRV-09).

    Args:
        project: the caller's project.
        access: the frontend's flags.
        what: the change, for the message (``"appending a memory note"``).

    Raises:
        PolicyError: naming the missing condition and how to grant it.
    """
    if not access.allow_write:
        raise PolicyError(f"{what} needs write access: this server is read-only (start it with --allow-write)")
    if not project.trusted:
        raise PolicyError(f"{what} needs a trusted project: run `shadowcode trust --level workspace {project.path}`")
    if project.level == PermissionLevel.READ_ONLY:
        raise PolicyError(f"{what} is above the project's configured level read_only")


@dataclass
class EngineState:
    """One running engine's parts.

    Attributes:
        profile: the profile it serves.
        store: its SQLite store.
        id: this engine instance (``eng_<hex>``), stored on its tasks and owners.
        mode: ``temporary`` or ``headless``.
        records: tasks and their events.
        approvals: exact approvals and waiting for them.
        checkpoints: write checkpoints and rollback.
        processes: command children and background processes.
        owners: the open owners.
        runner: the job queue and the running jobs.
        approval_states: the states signed for hosts asked to approve (SRV-29); its key lives
            and dies with this engine.
        logins: the OAuth sign-ins started and not yet taken (CW-08).
    """

    profile: Profile
    store: Store
    id: str
    mode: EngineMode
    records: TaskRecords
    approvals: Approvals
    checkpoints: Checkpoints
    processes: ProcessManager
    owners: Owners
    runner: JobRunner
    approval_states: ApprovalStates = field(default_factory=ApprovalStates)
    logins: PendingLogins = field(default_factory=PendingLogins)

    @property
    def projects(self) -> ProjectRegistry:
        """Trust records (ENG-02)."""
        return ProjectRegistry(self.store)

    @property
    def memory(self) -> MemoryNotes:
        """Project and task notes (SRV-12)."""
        return MemoryNotes(self.store)

    @property
    def goals(self) -> Goals:
        """Durable goals (SRV-14)."""
        return Goals(self.store)

    @property
    def mcp_servers(self) -> McpRegistry:
        """External MCP server definitions and per-project grants (CLI-01, CLI-02, CLI-05)."""
        from shadowcode.engine.mcp.registry import McpRegistry  # its parser loads with the first use

        return McpRegistry(self.store)

    @property
    def history(self) -> History:
        """Sessions, checkpoints, change history, plans and the saved map (SRV-05, SRV-18, SRV-19)."""
        return History(self.store)

    def settings(self) -> Settings:
        """The profile's settings, read again on each call (a running engine sees ``models add``)."""
        return self.profile.settings()

    def project_at(self, folder: Path | str) -> Project:
        """Canonicalize ``folder``, record it (untrusted if new) and return its trust record (ENG-02).

        Raises:
            ConfigError: the folder does not exist or is not a folder.
        """
        return self.projects.recorded(canonical_project(folder))

    def project(self, caller: Caller) -> Project:
        """The caller's project, canonical, recorded and with its current trust (trust may change outside).

        Raises:
            ToolError: the caller named no project.
            ConfigError: the folder does not exist or is not a folder.
        """
        if caller.project is None:
            raise ToolError("this request needs a project")
        return self.project_at(caller.project)
