"""Trusted plugin bundles: table ``plugins`` (CW-12).

A row is the reviewed snapshot of one bundle: its folder, content digest and exact manifest
bytes. Its servers' grants live in ``mcp_grants`` under ids ``plugin:<identity>``
(:meth:`shadowcode.store.mcp_servers.McpServerRepository.revoke_ids` deletes them).
Validation and policy live in :mod:`shadowcode.engine.plugins`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from shadowcode.store.database import Database
from shadowcode.store.records import Record

__all__ = ["PluginRecord", "PluginRepository"]


@dataclass(frozen=True, slots=True)
class PluginRecord(Record):
    """One trusted plugin: name, bundle folder, trusted content digest, manifest bytes, when trusted (epoch seconds)."""

    name: str
    root: str
    digest: str
    manifest: bytes
    trusted_at: int


class PluginRepository:
    """Rows of ``plugins``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def all(self) -> list[PluginRecord]:
        """Every trusted plugin, by name."""
        rows = self._db.rows("SELECT name, root, digest, manifest, trusted_at FROM plugins ORDER BY name")
        return [PluginRecord(**(r | _manifest(r))) for r in rows]

    def get(self, name: str) -> PluginRecord | None:
        """The trusted plugin ``name``, or None."""
        row = self._db.row("SELECT name, root, digest, manifest, trusted_at FROM plugins WHERE name = ?", (name,))
        return None if row is None else PluginRecord(**(row | _manifest(row)))

    def put(self, name: str, root: str, digest: str, manifest: bytes) -> None:
        """Trust (or trust again) plugin ``name`` at this snapshot."""
        self._db.execute(
            "INSERT INTO plugins (name, root, digest, manifest, trusted_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET root = excluded.root, digest = excluded.digest, "
            "manifest = excluded.manifest, trusted_at = excluded.trusted_at",
            (name, root, digest, manifest, int(time.time())),
        )

    def remove(self, name: str) -> None:
        """Forget plugin ``name`` (its servers' grants are deleted by ``McpServerRepository.revoke_ids``)."""
        self._db.execute("DELETE FROM plugins WHERE name = ?", (name,))


def _manifest(row: dict[str, Any]) -> dict[str, Any]:
    """A plugin row's manifest as bytes."""
    return {"manifest": bytes(row["manifest"])}
