"""What every tool and resource handler of one server connection sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from shadowcode.engine.api import Access, Caller, EngineApi, OwnerHandle

__all__ = ["ServerContext"]


@dataclass
class ServerContext:
    """The fixed project and flags of one ``mcp serve`` connection, and its engine (SRV-07, SRV-08, SRV-09).

    Attributes:
        api: the engine: a temporary one in this process, the headless one (attached), or
            the headless daemon serving a relayed session in its own process.
        root: the canonical project path, fixed for the connection's life.
        access: the server's ``--allow-write`` / ``--allow-approvals`` / ``--approve-in-host`` flags.
        owner_kind: how this connection's owner is recorded (``stdio``, ``gateway``, ``relay``).
        owner: this connection's owner, opened by the first delegated job (SRV-22).
        approval_page: ``--approval-page``: ask in URL mode whenever the client declares it (SRV-30).
    """

    api: EngineApi
    root: Path
    access: Access
    owner_kind: str = "stdio"
    owner: OwnerHandle | None = field(default=None)
    approval_page: bool = False

    @property
    def engine_mode(self) -> str:
        """How this connection reaches its engine: ``temporary`` (one inside this process) or
        ``attached`` (the profile's headless engine, over its socket or through the stdio relay)."""
        return "attached" if self.owner_kind == "relay" else str(self.api.mode)

    def caller(self) -> Caller:
        """This connection as the engine sees it: confined to its project and its owner's jobs (SRV-08, SRV-16)."""
        return Caller(project=self.root, access=self.access, owner=self.owner, confined=True)

    async def owning_caller(self) -> Caller:
        """:meth:`caller` after registering this connection's owner with the engine on first use (SRV-22)."""
        if self.owner is None:
            self.owner = await self.api.open_owner(self.owner_kind, self.caller())
        return self.caller()
