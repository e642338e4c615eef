"""The SQLite store: the only package that imports ``sqlite3`` or runs SQL on the profile database (ENG-03).

:class:`Store` is the open profile database (:class:`~shadowcode.store.database.Database`:
WAL mode, migrations, :meth:`~shadowcode.store.database.Database.atomic`) plus one repository
per table group, each returning frozen dataclasses named after the columns:

=====================  ==========================================  ==============================
attribute              tables                                      module
=====================  ==========================================  ==============================
``store.projects``     projects, project_maps                      :mod:`shadowcode.store.projects`
``store.tasks``        tasks, events                               :mod:`shadowcode.store.tasks`
``store.approvals``    approvals                                   :mod:`shadowcode.store.approvals`
``store.goals``        goals, goal_progress                        :mod:`shadowcode.store.goals`
``store.memory``       memory                                      :mod:`shadowcode.store.memory`
``store.checkpoints``  checkpoints, changes, blobs                 :mod:`shadowcode.store.checkpoints`
``store.owners``       engines, owners                             :mod:`shadowcode.store.owners`
``store.mcp_servers``  mcp_definitions, mcp_grants, mcp_catalogs   :mod:`shadowcode.store.mcp_servers`
``store.plugins``      plugins                                     :mod:`shadowcode.store.plugins`
=====================  ==========================================  ==============================

A repository returns None (or an empty list) for what is not there; the engine decides
whether that is an error. ``sqlite3.Error`` becomes :class:`~shadowcode.errors.StoreError` here.
Use :meth:`Store.atomic` around several writes that must happen together.
"""

from __future__ import annotations

from pathlib import Path

from shadowcode.store.approvals import ApprovalRepository
from shadowcode.store.checkpoints import CheckpointRepository
from shadowcode.store.database import Database
from shadowcode.store.goals import GoalRepository
from shadowcode.store.mcp_servers import McpServerRepository
from shadowcode.store.memory import MemoryRepository
from shadowcode.store.owners import OwnerRepository
from shadowcode.store.plugins import PluginRepository
from shadowcode.store.projects import ProjectRepository
from shadowcode.store.tasks import TaskRepository

__all__ = ["Store"]


class Store(Database):
    """The open profile database and its repositories, safe to share between threads.

    Args:
        path: database file; its directory must exist. ``":memory:"`` for tests.

    Attributes:
        projects: trust records and saved maps (ENG-02).
        tasks: tasks and their events (ENG-04, SRV-15, SRV-16).
        approvals: exact approvals (ENG-07).
        goals: goals and their progress notes (SRV-14).
        memory: project and task notes (SRV-12).
        checkpoints: checkpoints, changes and blobs (ENG-06).
        owners: engine instances and owners (SRV-21, SRV-22).
        mcp_servers: MCP registrations, grants and catalogs (CLI-01, CLI-02, CLI-08).
        plugins: trusted plugin bundles (CW-12).

    Raises:
        StoreError: the file cannot be opened or migrated.
    """

    def __init__(self, path: Path | str) -> None:
        super().__init__(path)
        self.projects = ProjectRepository(self)
        self.tasks = TaskRepository(self)
        self.approvals = ApprovalRepository(self)
        self.goals = GoalRepository(self)
        self.memory = MemoryRepository(self)
        self.checkpoints = CheckpointRepository(self)
        self.owners = OwnerRepository(self)
        self.mcp_servers = McpServerRepository(self)
        self.plugins = PluginRepository(self)
