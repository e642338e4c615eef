"""Project identity and trust (ENG-02).

A project is its canonical path: the workspace with every symlink resolved. It is untrusted
until ``shadowcode trust`` records it with a permission level.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shadowcode.errors import ConfigError
from shadowcode.store import Store

__all__ = ["LEVELS", "Level", "Project", "ProjectRegistry", "canonical_project"]

Level = Literal["read_only", "workspace", "elevated"]
LEVELS: tuple[Level, ...] = ("read_only", "workspace", "elevated")


def canonical_project(path: Path | str) -> Path:
    """Resolve a workspace to its canonical absolute path (symlinks resolved) (ENG-02).

    Raises:
        ConfigError: the path does not exist or is not a directory.
    """
    raw = Path(path).expanduser()
    try:
        resolved = raw.resolve(strict=True)
    except (FileNotFoundError, RuntimeError) as exc:
        raise ConfigError(f"workspace {str(raw)!r} does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"workspace {str(raw)!r} cannot be read: {exc.strerror}") from exc
    if not resolved.is_dir():
        raise ConfigError(f"workspace {str(raw)!r} is not a directory")
    return resolved


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
    level: Level

    def as_dict(self) -> dict[str, object]:
        """``{"path": str, "trusted": bool, "level": str | None}`` (level None when untrusted)."""
        return {"path": str(self.path), "trusted": self.trusted, "level": self.level if self.trusted else None}


class ProjectRegistry:
    """Reads and changes trust records in the store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, path: Path) -> Project:
        """The trust record of an already canonical path (untrusted when unknown)."""
        row = self._store.row("SELECT trusted, level FROM projects WHERE path = ?", (str(path),))
        if row is None:
            return Project(path=path, trusted=False, level="read_only")
        return Project(path=path, trusted=bool(row["trusted"]), level=row["level"])

    def ensure(self, path: Path) -> None:
        """Record the project row (untrusted) if missing, so other records can reference it."""
        self._store.execute(
            "INSERT OR IGNORE INTO projects (path, created_at) VALUES (?, ?)", (str(path), int(time.time()))
        )

    def trust(self, path: Path, level: Level) -> Project:
        """Mark a canonical project trusted at ``level`` (ENG-02)."""
        if level not in LEVELS:
            raise ConfigError(f"unknown permission level {level!r}; use one of {', '.join(LEVELS)}")
        now = int(time.time())
        with self._store.atomic():
            self.ensure(path)
            self._store.execute(
                "UPDATE projects SET trusted = 1, level = ?, trusted_at = ? WHERE path = ?", (level, now, str(path))
            )
        return self.get(path)

    def untrust(self, path: Path) -> Project:
        """Remove trust from a canonical project; its records stay."""
        self._store.execute("UPDATE projects SET trusted = 0, level = 'read_only' WHERE path = ?", (str(path),))
        return self.get(path)

    def trusted(self) -> list[Project]:
        """Every trusted project, by path."""
        rows = self._store.rows("SELECT path, level FROM projects WHERE trusted = 1 ORDER BY path")
        return [Project(path=Path(r["path"]), trusted=True, level=r["level"]) for r in rows]
