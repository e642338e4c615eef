"""One live connection to each of some external MCP servers, to report on them (CW-03, CW-04).

Each server is reached exactly the way a Build task reaches it: through
:class:`~shadowcode.engine.mcp.task_servers.TaskServers` holding a one-server snapshot, so the same
transport choice, child environment (CLI-12), ``env_refs`` resolution and redaction (CLI-04),
limits and deadlines (CLI-13) and cleanup (CLI-19) apply. The cached catalog is neither read
(the point is a live discovery) nor written, no approval is asked (nothing is called), and
nothing is recorded in any task's history.

Servers are probed concurrently; every connection is closed and its cleanup awaited before
:func:`probe_servers` returns, so a probe lasts at most the slowest server's initialization
and discovery deadlines plus its cleanup.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from shadowcode.agent.ports import ApprovalGate, Processes, WriteLog
from shadowcode.agent.toolbox import TaskEnv
from shadowcode.engine.mcp.task_catalog import filter_warnings
from shadowcode.engine.mcp.task_servers import TaskServers
from shadowcode.errors import UpstreamServerError
from shadowcode.mcp.client.definitions import ServerDefinition

if TYPE_CHECKING:
    from shadowcode.profile import Profile

__all__ = ["ProbeOutcome", "probe_servers"]

_PROBE_TASK = "mcp-probe"


@dataclass(frozen=True)
class ProbeOutcome:
    """What connecting one server found.

    Attributes:
        definition: the definition probed.
        protocol_version: the negotiated revision, when connected.
        tools: the discovered catalog (``tools/list`` entries as JSON, configured values
            redacted), or None when it did not connect.
        error: why it did not connect (redacted), or None.
        cleanup: how its process group ended, or None when nothing was started.
        warnings: ``enabled_tools`` entries naming no tool the server listed (CW-02).
    """

    definition: ServerDefinition
    protocol_version: str | None
    tools: list[dict[str, Any]] | None
    error: str | None
    cleanup: str | None
    warnings: tuple[str, ...] = ()


class _Snapshot:
    """A snapshot of one server (the ``ServerSnapshot`` port)."""

    def __init__(self, project: Path, definition: ServerDefinition) -> None:
        self.project = project
        self.servers = (definition,)


class _NoCache:
    """A catalog cache that has nothing and keeps nothing: a probe always discovers live."""

    def cached_tools(self, project: Path, definition: ServerDefinition) -> list[dict[str, Any]] | None:
        return None

    def save_tools(self, project: Path, definition: ServerDefinition, tools: list[dict[str, Any]]) -> None:
        return None


class _Quiet:
    """An event log that keeps nothing: a probe is no task and has no history."""

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        return 0

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        return None


class _Unused:
    """Collaborators a probe never reaches (it calls no tool, writes nothing, runs no command)."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"an MCP probe does not use {name}")


async def _probe_one(
    definition: ServerDefinition, project: Path, profile: Profile, env: dict[str, str]
) -> ProbeOutcome:
    quiet = _Quiet()
    unused = _Unused()
    task_env = TaskEnv(
        task_id=_PROBE_TASK,
        owner=None,
        project=project,
        mode="build",
        level="workspace",
        records=quiet,
        approvals=cast(ApprovalGate, unused),
        checkpoints=cast(WriteLog, unused),
        processes=cast(Processes, unused),
        env=dict(env),
    )
    servers = TaskServers(
        snapshot=_Snapshot(project, definition),
        catalog=_NoCache(),
        profile=profile,
        task_id=_PROBE_TASK,
        records=quiet,
        inline_tools=0,
    )
    async with servers:
        with suppress(UpstreamServerError):
            # A required server that cannot connect stops a task; a probe reports it like any other.
            await servers.prepare(task_env)
        await servers.connect_all()  # a probe connects lazy and booting servers alike, and waits (CW-10)
        (state,) = servers.states()
        conn = state.conn
        connected = state.unavailable is None and state.tools is not None and state.lost is None
        protocol_version = conn.protocol_version if conn is not None and connected else None
        error = None
        warnings = filter_warnings(definition.spec, state.listed) if connected and state.listed is not None else []
        if not connected:
            error = (conn.error if conn is not None else None) or state.unavailable or state.lost or "no connection"
    # Leaving the context closed the connection and waited for its cleanup (CLI-19).
    return ProbeOutcome(
        definition=definition,
        protocol_version=protocol_version,
        tools=state.tools if connected else None,
        error=error,
        cleanup=conn.cleanup if conn is not None else None,
        warnings=tuple(warnings),
    )


async def probe_servers(
    definitions: Sequence[ServerDefinition], *, project: Path, profile: Profile, env: dict[str, str]
) -> list[ProbeOutcome]:
    """Connect each server once, concurrently, read its catalog, close it and wait for its cleanup (CW-03, CW-04).

    Args:
        definitions: the granted definitions to probe (their hashes were checked by the caller).
        project: the canonical project (the servers' working directory).
        profile: where ``env_refs`` secrets are looked up (after the environment).
        env: the scrubbed base environment Build tasks give their servers (CLI-12).

    Returns:
        One outcome per definition, in the given order.
    """
    outcomes: list[ProbeOutcome | None] = [None] * len(definitions)

    async def run(index: int, definition: ServerDefinition) -> None:
        outcomes[index] = await _probe_one(definition, project, profile, env)

    async with anyio.create_task_group() as tg:
        for index, definition in enumerate(definitions):
            tg.start_soon(run, index, definition)
    return [o for o in outcomes if o is not None]
