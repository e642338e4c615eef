"""What every tool and resource handler of one server connection sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from shadowcode.engine import Access, Engine, Project
from shadowcode.errors import NotAvailable

if TYPE_CHECKING:
    from shadowcode.engine.core import EngineCore
    from shadowcode.engine.owners import Owner

__all__ = ["ServerContext"]


@dataclass
class ServerContext:
    """The fixed project and flags of one ``mcp serve`` (SRV-07, SRV-08, SRV-09).

    Attributes:
        engine: the profile's records (store, settings).
        root: the canonical project path, fixed for the connection's life.
        access: the server's ``--allow-write`` / ``--allow-approvals`` flags.
        core: the running engine that takes delegated work, or None where none is running.
        owner_kind: how this connection's owner is recorded (``stdio``, ``gateway``).
        owner: this connection's owner, opened by the first delegated job (SRV-22).
    """

    engine: Engine
    root: Path
    access: Access
    core: EngineCore | None = None
    owner_kind: str = "stdio"
    owner: Owner | None = field(default=None)

    @property
    def engine_mode(self) -> str:
        """How this connection reaches its engine: ``temporary`` (one inside this process) or
        ``attached`` (the profile's headless engine, over its socket or through the stdio relay)."""
        if self.core is None:
            return self.engine.mode
        if self.owner_kind == "relay":
            return "attached"
        return str(self.core.mode)

    def project(self) -> Project:
        """The project's current trust record (re-read on each call: trust may change outside)."""
        return self.engine.projects.get(self.root)

    def running_core(self) -> EngineCore:
        """The engine that runs delegated work.

        Raises:
            NotAvailable: this server has no running engine.
        """
        if self.core is None:
            raise NotAvailable("delegated work is not available: this server runs without an engine")
        return self.core

    async def ensure_owner(self) -> Owner:
        """This connection's owner, registered with the engine on first use (SRV-22)."""
        if self.owner is None:
            self.owner = await self.running_core().open_owner(self.owner_kind, self.root)
        return self.owner
