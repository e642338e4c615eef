"""What one task last saw of each project file, so an edit never lands on unseen content (CLI-10).

A task *observes* a file when it reads it (``read_file``) or writes it (``write_file``,
``edit_file``): the observation is the SHA-256 of the whole file's content at that moment,
keyed by the path relative to the project root (after symlinks are resolved). Each
observation is in one of two states:

- ``fresh``: the task's picture of the file is current as far as the task knows;
- ``stale``: an MCP action ran since (:meth:`Observations.invalidate_all`); an external
  server may have changed any file, so the task must read the file again before editing it.

``edit_file`` asks :meth:`Observations.check_edit` before changing a file: it refuses a
stale observation, and a file whose content differs from what the task last saw. A file the
task never read may still be edited; the edit's exact-match of the old text guards it.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from enum import StrEnum

from shadowcode.errors import ToolError

__all__ = ["Observation", "ObservationState", "Observations"]


class ObservationState(StrEnum):
    """Whether a task's last look at a file still counts (CLI-10)."""

    FRESH = "fresh"
    STALE = "stale"


@dataclass(frozen=True)
class Observation:
    """One file as the task last saw it.

    Attributes:
        sha256: lowercase hex SHA-256 of the whole content then.
        state: ``fresh``, or ``stale`` after an MCP action.
    """

    sha256: str
    state: ObservationState


class Observations:
    """The observations of one task, by project-relative path; safe to share between threads."""

    def __init__(self) -> None:
        self._seen: dict[str, Observation] = {}
        self._lock = threading.Lock()

    def record(self, path: str, content: bytes) -> None:
        """Note that the task now knows ``content`` as the whole of ``path`` (read or written).

        Args:
            path: POSIX path relative to the project root, symlinks resolved.
            content: the file's complete content.
        """
        observation = Observation(hashlib.sha256(content).hexdigest(), ObservationState.FRESH)
        with self._lock:
            self._seen[path] = observation

    def forget(self, path: str) -> None:
        """Drop what the task knew of ``path`` (it read only part of a file too large to track)."""
        with self._lock:
            self._seen.pop(path, None)

    def get(self, path: str) -> Observation | None:
        """The task's observation of ``path``, or None when it never read or wrote it."""
        with self._lock:
            return self._seen.get(path)

    def invalidate_all(self) -> None:
        """Mark every observation stale: an MCP action is about to run or has run (CLI-10)."""
        with self._lock:
            self._seen = {p: Observation(o.sha256, ObservationState.STALE) for p, o in self._seen.items()}

    def check_edit(self, path: str, current: bytes) -> None:
        """Refuse an edit of ``path`` whose content the task has not seen as it is now (CLI-10).

        Args:
            path: POSIX path relative to the project root, symlinks resolved.
            current: the file's complete content right before the edit.

        Raises:
            ToolError: the observation is stale, or the content changed since the task last
                read or wrote it. A path never observed passes.
        """
        seen = self.get(path)
        if seen is None:
            return
        if seen.state is ObservationState.STALE:
            raise ToolError(
                f"{path} may have changed since the task read it (an MCP tool ran since); read it again first",
                path=path,
            )
        if hashlib.sha256(current).hexdigest() != seen.sha256:
            raise ToolError(f"{path} changed since the task last read it; read it again first", path=path)
