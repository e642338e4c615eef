"""What a running task needs from the layers that run it, as small protocols (ENG-04, ENG-06, ENG-07).

The engine passes its own objects (task records, approvals, checkpoints, process manager, MCP
catalog cache); the agent layer names only these protocols, so it never imports the engine.
Method names and signatures are exactly the engine objects'. A record returned by a
collaborator may be a ``dict`` or a frozen dataclass with the same field names; the agent
reads a field through :func:`field_of`, which accepts both.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from shadowcode.mcp.client.definitions import ServerDefinition

__all__ = [
    "ApprovalGate",
    "CatalogCache",
    "CommandOutcome",
    "EventLog",
    "PluginGate",
    "Processes",
    "ServerSnapshot",
    "WriteLog",
    "field_of",
]


def field_of(record: Any, name: str) -> Any:
    """Field ``name`` of a record given as a mapping (``record[name]``) or an object (``record.name``)."""
    if isinstance(record, Mapping):
        return cast("Mapping[str, Any]", record)[name]
    return getattr(record, name)


class EventLog(Protocol):
    """The task's event log and status (ENG-04): the engine's task records."""

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        """Append one event; returns its id."""
        ...

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        """Move the task to ``status`` (the agent sets ``waiting`` and ``running`` only)."""
        ...


class ApprovalGate(Protocol):
    """Exact approvals (ENG-07): the engine's approvals."""

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> Any:
        """Record a pending approval of exactly ``action``; returns the approval record.

        The agent reads only its ``id`` (a string), with :func:`field_of`.
        """
        ...

    async def wait(self, approval_id: str) -> str:
        """Wait until resolved; returns ``"approved"``, ``"denied"`` or ``"expired"``."""
        ...

    def expire(self, task_id: str) -> None:
        """Expire the task's pending approvals."""
        ...


class WriteLog(Protocol):
    """Where a write is recorded before the file changes (ENG-06): the engine's checkpoints."""

    def record_write(self, project: Path, task_id: str, rel_path: str, new_content: bytes | None) -> int:
        """Record the file's current content before the write; returns the change id."""
        ...

    def forget_write(self, change_id: int) -> None:
        """Drop a recorded change whose write then failed."""
        ...


class CommandOutcome(Protocol):
    """What one finished command reports (the fields the agent reads)."""

    @property
    def exit_code(self) -> int | None: ...
    @property
    def signal(self) -> int | None: ...
    @property
    def output(self) -> str: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def pid(self) -> int: ...


class Processes(Protocol):
    """Commands and background processes (ENG-04, SRV-21, SRV-23): ``shadowcode.agent.processes.ProcessManager``."""

    async def run(
        self, argv: list[str], cwd: Path, *, env: dict[str, str], timeout_seconds: float, output_max_bytes: int = ...
    ) -> CommandOutcome:
        """Run one command to completion or its deadline."""
        ...

    def start_background(self, argv: list[str], cwd: Path, env: dict[str, str], project: Path) -> dict[str, Any]:
        """Start a background process of ``project``; returns its description."""
        ...

    async def stop_background(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """Stop one background process; returns its final description."""
        ...


class CatalogCache(Protocol):
    """The tool catalogs kept per project and definition hash (CLI-08): part of the engine's MCP registry."""

    def cached_tools(self, project: Path, definition: ServerDefinition) -> list[dict[str, Any]] | None:
        """The catalog last read from a server with this definition's hash, or None."""
        ...

    def save_tools(self, project: Path, definition: ServerDefinition, tools: list[dict[str, Any]]) -> None:
        """Keep the catalog just read from the server."""
        ...


class ServerSnapshot(Protocol):
    """The enabled servers a Build task keeps, fixed at submission (CLI-06)."""

    @property
    def project(self) -> Path: ...
    @property
    def servers(self) -> tuple[ServerDefinition, ...]: ...


class PluginGate(Protocol):
    """Whether a plugin's server may still be used by a running task (CW-12): part of the engine's MCP registry."""

    def plugin_problem(self, project: Path, definition: ServerDefinition, *, check_bundle: bool = True) -> str | None:
        """Why ``definition`` (a plugin's server) may no longer be used in ``project``, or None.

        ``check_bundle`` hashes the bundle again (drift); without it only the plugin's trust and
        grant are looked up.
        """
        ...
