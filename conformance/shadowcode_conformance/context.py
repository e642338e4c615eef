"""What a check receives: the target command, private directories, and process helpers.

Each check gets a fresh :class:`Context`: a temporary ``SHADOWCODE_HOME``, a fresh copy
of the sample project, a scratch directory and a deadline. Every process it starts sees
the private ``SHADOWCODE_HOME``, which is also how stragglers are found and killed when
the check ends (CONF-01). :attr:`Context.engine` says whether the runner started the
profile's headless engine before the check (``--attached``), so a check can tell which
path its stdio servers are expected to take.
"""

from __future__ import annotations

import enum
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from anyio.abc import Process

from shadowcode_conformance.processes import Completed, run_command, spawn

__all__ = ["LEGACY_REVISIONS", "MODERN_REVISION", "Context", "EngineMode"]

MODERN_REVISION = "2026-07-28"
"""The protocol revision negotiated without a handshake (SRV-03)."""

LEGACY_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Revisions reached through ``initialize`` (SRV-03)."""


class EngineMode(enum.StrEnum):
    """Which engine a check's stdio servers find when they start (ENG-03, SRV-07).

    The value is what ``shadow_status`` reports as ``engine.mode`` for such a server.
    """

    TEMPORARY = "temporary"
    """No engine runs for the profile: each frontend opens its own and closes it on exit."""

    ATTACHED = "attached"
    """The runner started ``<target> engine`` in the check's profile; frontends attach to it."""


@dataclass
class Context:
    """Everything one check may use; owned by that check alone.

    Attributes:
        target: the target command as an argv list (e.g. ``["python3", "dist/shadowcode.pyz"]``).
        home: a fresh empty directory set as ``SHADOWCODE_HOME`` for every process.
        project: a fresh copy of the sample project (canonical path).
        scratch: a private directory for anything else; removed after the check.
        env: the complete environment for started processes.
        cwd: working directory for started processes (where relative target paths resolve).
        repo_root: the folder holding ``node_probes/`` and ``fixtures/``
            (:func:`shadowcode_conformance.resources.resource_root`).
        deadline: ``time.monotonic()`` value at which the check is cut off.
        engine: :attr:`EngineMode.ATTACHED` when the runner started ``<target> engine`` in
            ``home`` before the check and keeps it running until the check ends;
            :attr:`EngineMode.TEMPORARY` otherwise (always for a check registered with
            ``own_engine=True``).
        revisions: protocol revisions recorded by the check, label to revision.
        url: the Streamable HTTP endpoint under test (``--url``), or None.
        bearer: a bearer token to send to ``url`` (read from ``--bearer-env``), or None.
        profile: the profile being run (``"shadowcode"`` or ``"generic"``).
    """

    target: list[str]
    home: Path
    project: Path
    scratch: Path
    env: dict[str, str]
    cwd: Path
    repo_root: Path
    deadline: float
    engine: EngineMode = EngineMode.TEMPORARY
    revisions: dict[str, str] = field(default_factory=dict[str, str])
    url: str | None = None
    bearer: str | None = None
    profile: str = "shadowcode"

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    def record_revision(self, label: str, revision: str) -> None:
        """Note that ``label`` (a check or probe name) negotiated ``revision`` (SRV-03)."""
        self.revisions[label] = revision

    def target_argv(self, *args: str, workspace: Path | str | None = None) -> list[str]:
        """The target followed by ``--workspace W`` (default: the project) and ``args``."""
        where = self.project if workspace is None else workspace
        return [*self.target, "--workspace", str(where), *args]

    def serve_argv(self, *flags: str) -> list[str]:
        """``<target> --workspace P mcp serve FLAGS...`` for the sample project."""
        return self.target_argv("mcp", "serve", *flags)

    async def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes = b"",
        timeout_seconds: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Completed:
        """Run a command to completion, bounded by ``timeout_seconds`` and the deadline.

        Args:
            argv: program and arguments (no shell).
            stdin: bytes fed before stdin is closed.
            timeout_seconds: bound for this command; the remaining check time when None.
            env: variables added to the check's environment for this command only.

        Returns:
            A :class:`~shadowcode_conformance.processes.Completed`.

        Raises:
            OSError: the program could not be started.
        """
        bound = self.remaining() if timeout_seconds is None else min(timeout_seconds, self.remaining())
        merged = self.env if env is None else {**self.env, **env}
        return await run_command(argv, env=merged, cwd=self.cwd, timeout_seconds=bound, stdin=stdin)

    @asynccontextmanager
    async def spawn(self, argv: Sequence[str]) -> AsyncGenerator[Process, None]:
        """Start a command for an interactive exchange; it is stopped when the block ends.

        Yields:
            The anyio ``Process`` with piped stdin, stdout and stderr.

        Raises:
            OSError: the program could not be started.
        """
        async with spawn(argv, env=self.env, cwd=self.cwd) as proc:
            yield proc

    async def trust(self, level: str = "workspace") -> Completed:
        """Trust the sample project: ``<target> --workspace P trust --level LEVEL P`` (ENG-02)."""
        return await self.run(self.target_argv("trust", "--level", level, str(self.project)), timeout_seconds=30)
