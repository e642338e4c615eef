"""Project identity and trust (ENG-02).

A project is its canonical path: the workspace with every symlink resolved. It is untrusted
until ``shadowcode trust`` records it with a :class:`~shadowcode.enums.PermissionLevel`. The
rows live in :attr:`Store.projects <shadowcode.store.Store>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError
from shadowcode.store import Store

__all__ = ["Project", "ProjectRegistry"]


@dataclass(frozen=True)
class Project:
    """A canonical project and its trust record.

    Attributes:
        path: canonical absolute path.
        trusted: True once ``shadowcode trust`` marked it.
        level: configured permission level; meaningful only when trusted.
    """

    path: Path
    trusted: bool
    level: PermissionLevel

    def as_dict(self) -> dict[str, object]:
        """``{"path": str, "trusted": bool, "level": str | None}`` (level None when untrusted)."""
        return {"path": str(self.path), "trusted": self.trusted, "level": str(self.level) if self.trusted else None}


class ProjectRegistry:
    """Reads and changes trust records in the store."""

    def __init__(self, store: Store) -> None:
        self._rows = store.projects

    def get(self, path: Path) -> Project:
        """The trust record of an already canonical path (untrusted when unknown)."""
        row = self._rows.get(path)
        if row is None:
            return Project(path=path, trusted=False, level=PermissionLevel.READ_ONLY)
        return Project(path=path, trusted=row.trusted, level=row.level)

    def ensure(self, path: Path) -> None:
        """Record the project row (untrusted) if missing, so other records can reference it."""
        self._rows.ensure(path)

    def recorded(self, path: Path) -> Project:
        """The trust record of an already canonical path, recording it (untrusted) first when new.

        Reads first and writes only for a path never recorded: every tool call asks for its
        project, and an ``INSERT OR IGNORE`` is a write transaction even when it changes nothing.
        """
        row = self._rows.get(path)
        if row is None:
            self._rows.ensure(path)
            return self.get(path)
        return Project(path=path, trusted=row.trusted, level=row.level)

    def trust(self, path: Path, level: PermissionLevel | str) -> Project:
        """Mark a canonical project trusted at ``level`` (ENG-02).

        Raises:
            ConfigError: ``level`` is not a permission level.
        """
        try:
            chosen = PermissionLevel(level)
        except ValueError:
            raise ConfigError(f"unknown permission level {level!r}; use one of {', '.join(PermissionLevel)}") from None
        self._rows.trust(path, chosen)
        return self.get(path)

    def untrust(self, path: Path) -> Project:
        """Remove trust from a canonical project; its records stay."""
        self._rows.untrust(path)
        return self.get(path)

    def trusted(self) -> list[Project]:
        """Every trusted project, by path."""
        return [Project(path=Path(r.path), trusted=True, level=r.level) for r in self._rows.trusted()]
