"""The engine: policy, records and (later) tasks, behind one facade every frontend uses.

This package never imports ``shadowcode.mcp.server`` or ``shadowcode.cli``. A frontend opens
the profile's engine with :meth:`Engine.open`; when no headless engine runs (ENG-03) it is a
temporary in-process engine that closes, with everything it started, when the frontend exits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from shadowcode.engine.goals import Goals
from shadowcode.engine.history import History
from shadowcode.engine.memory import MemoryNotes
from shadowcode.engine.policy import Access, require_write
from shadowcode.engine.projects import Project, ProjectRegistry, canonical_project
from shadowcode.profile import Profile, Settings
from shadowcode.store import Store

__all__ = ["Access", "Engine", "Project", "canonical_project", "require_write"]


@dataclass
class Engine:
    """An open engine over one profile.

    Attributes:
        profile: the selected profile.
        store: its SQLite store.
        mode: ``"temporary"`` (in-process, closes with its frontend) or ``"headless"``.
    """

    profile: Profile
    store: Store
    mode: str = "temporary"

    @classmethod
    def open(cls, profile: Profile) -> Engine:
        """Open ``profile``'s engine: a temporary in-process one (the headless daemon comes later).

        Raises:
            StoreError: the store cannot be opened or migrated.
        """
        profile.ensure()
        return cls(profile=profile, store=Store(profile.db_path))

    def close(self) -> None:
        """Close the store; the temporary engine ends here."""
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

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
    def history(self) -> History:
        """Sessions, checkpoints, change history, plans (SRV-05, SRV-18, SRV-19)."""
        return History(self.store)

    def settings(self) -> Settings:
        """The profile's settings (reloaded on each call)."""
        return self.profile.settings()

    def project(self, workspace: Path | str) -> Project:
        """Canonicalize ``workspace``, record it (untrusted if new) and return its trust record.

        Raises:
            ConfigError: the workspace is missing or not a directory.
        """
        path = canonical_project(workspace)
        self.projects.ensure(path)
        return self.projects.get(path)
