"""Write policy shared by every frontend (SRV-08, SRV-09).

A frontend states what it was started with as an :class:`Access`; the engine combines it
with the project's trust record. Changes need all three: the frontend allows writes, the
project is trusted, and its configured level is above ``read_only``.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.errors import PolicyError, ToolError

__all__ = ["Access", "agent_request", "require_write", "within_ceiling"]

_AGENT_MODES = (TaskMode.BUILD, TaskMode.PLAN, TaskMode.REVIEW)


@dataclass(frozen=True)
class Access:
    """What a frontend was started with.

    Attributes:
        allow_write: ``--allow-write`` (MCP server) or an interactive CLI (True).
        allow_approvals: ``--allow-approvals``; only meaningful with ``allow_write``.
    """

    allow_write: bool = False
    allow_approvals: bool = False


def require_write(project: Project, access: Access, what: str) -> None:
    """Refuse a change unless the frontend allows writes and the project is trusted above read_only.

    Args:
        project: the fixed project.
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


def within_ceiling(requested: PermissionLevel | str, ceiling: PermissionLevel | str) -> bool:
    """True when ``requested`` is at most ``ceiling`` (SRV-10: a task may lower, never raise).

    Raises:
        ValueError: either is not a permission level.
    """
    return PermissionLevel(requested).within(PermissionLevel(ceiling))


def agent_request(mode: TaskMode | str, level: PermissionLevel | str) -> tuple[TaskMode, PermissionLevel]:
    """Check an agent task's requested mode and permission level (ENG-04, SRV-10).

    Returns:
        ``(mode, level)`` as their enums.

    Raises:
        ToolError: the mode is not build, plan or review (test jobs are not agent tasks), or the
            level is not a permission level.
    """
    if mode not in _AGENT_MODES:
        raise ToolError(f"unknown mode {mode!r}; use build, plan or review")
    try:
        return TaskMode(mode), PermissionLevel(level)
    except ValueError:
        raise ToolError(f"unknown permission level {level!r}; use one of {', '.join(PermissionLevel)}") from None
