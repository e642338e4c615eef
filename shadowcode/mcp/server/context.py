"""What every tool and resource handler of one server connection sees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shadowcode.engine import Access, Engine, Project

__all__ = ["ServerContext"]


@dataclass
class ServerContext:
    """The fixed project and flags of one ``mcp serve`` (SRV-07, SRV-08, SRV-09).

    Attributes:
        engine: the profile's engine (temporary or attached).
        root: the canonical project path, fixed for the connection's life.
        access: the server's ``--allow-write`` / ``--allow-approvals`` flags.
    """

    engine: Engine
    root: Path
    access: Access

    def project(self) -> Project:
        """The project's current trust record (re-read on each call: trust may change outside)."""
        return self.engine.projects.get(self.root)
