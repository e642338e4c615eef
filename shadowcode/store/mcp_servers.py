"""External MCP server registrations, per-project grants and cached tool catalogs: tables
``mcp_definitions``, ``mcp_grants`` and ``mcp_catalogs`` (CLI-01, CLI-02, CLI-05, CLI-08).

A registration keeps the exact bytes of a global definition file (``config:NAME``); a grant binds
a project, a definition id and the SHA-256 reviewed; a catalog is the JSON array of (already
redacted) tools one definition hash last listed, keyed by project (``""`` for a global
definition), definition id and hash, decoded here. Parsing and policy live in
:mod:`shadowcode.engine.mcp.registry`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowcode.store.database import Database
from shadowcode.store.records import Record, decode_json, encode_json

__all__ = ["McpDefinitionRecord", "McpServerRepository"]


@dataclass(frozen=True, slots=True)
class McpDefinitionRecord(Record):
    """One global registration: the exact registered bytes, their format (``json`` or ``yaml``) and SHA-256 hex."""

    name: str
    content: bytes
    format: str
    sha256: str
    added_at: int
    updated_at: int


class McpServerRepository:
    """Rows of ``mcp_definitions``, ``mcp_grants`` and ``mcp_catalogs``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- global registrations -----------------------------------------------------------

    def definitions(self) -> list[McpDefinitionRecord]:
        """Every global registration, by name."""
        rows = self._db.rows(
            "SELECT name, content, format, sha256, added_at, updated_at FROM mcp_definitions ORDER BY name"
        )
        return [McpDefinitionRecord(**(r | _content(r))) for r in rows]

    def definition_hash(self, name: str) -> str | None:
        """The stored hash of registration ``name``, or None."""
        row = self._db.row("SELECT sha256 FROM mcp_definitions WHERE name = ?", (name,))
        return None if row is None else str(row["sha256"])

    def put_definition(self, name: str, content: bytes, fmt: str, sha256: str) -> None:
        """Insert registration ``name``, or replace its content, format and hash (``added_at`` kept)."""
        now = int(time.time())
        self._db.execute(
            "INSERT INTO mcp_definitions (name, content, format, sha256, added_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET content = excluded.content, "
            "format = excluded.format, sha256 = excluded.sha256, updated_at = excluded.updated_at",
            (name, content, fmt, sha256, now, now),
        )

    def remove_definition(self, name: str, definition_id: str) -> int:
        """Delete registration ``name`` with its grants in every project and its cached catalogs.

        Returns:
            The number of grants revoked.
        """
        with self._db.atomic():
            self._db.execute("DELETE FROM mcp_definitions WHERE name = ?", (name,))
            revoked = self._db.execute("DELETE FROM mcp_grants WHERE definition_id = ?", (definition_id,))
            self._db.execute("DELETE FROM mcp_catalogs WHERE definition_id = ?", (definition_id,))
        return revoked

    # -- grants -------------------------------------------------------------------------

    def grants(self, project: Path | str) -> dict[str, str]:
        """The project's grants: definition id → granted hash."""
        rows = self._db.rows("SELECT definition_id, sha256 FROM mcp_grants WHERE project = ?", (str(project),))
        return {r["definition_id"]: r["sha256"] for r in rows}

    def grant(self, project: Path | str, definition_id: str, sha256: str) -> None:
        """Grant (or re-grant at a new hash) ``definition_id`` to the project."""
        self._db.execute(
            "INSERT INTO mcp_grants (project, definition_id, sha256, granted_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (project, definition_id) DO UPDATE SET sha256 = excluded.sha256, "
            "granted_at = excluded.granted_at",
            (str(project), definition_id, sha256, int(time.time())),
        )

    def revoke(self, project: Path | str, definition_id: str) -> bool:
        """Delete the project's grant of ``definition_id``; False when there was none."""
        return bool(
            self._db.execute(
                "DELETE FROM mcp_grants WHERE project = ? AND definition_id = ?", (str(project), definition_id)
            )
        )

    def revoke_ids(self, definition_ids: list[str], project: Path | str | None = None) -> int:
        """Delete the grants of these definition ids in ``project``, or in every project (with their
        cached catalogs) when None (a plugin disabled or revoked, CW-12); returns the grants deleted."""
        revoked = 0
        with self._db.atomic():
            for def_id in definition_ids:
                if project is None:
                    revoked += self._db.execute("DELETE FROM mcp_grants WHERE definition_id = ?", (def_id,))
                    self._db.execute("DELETE FROM mcp_catalogs WHERE definition_id = ?", (def_id,))
                else:
                    revoked += self._db.execute(
                        "DELETE FROM mcp_grants WHERE project = ? AND definition_id = ?", (str(project), def_id)
                    )
        return revoked

    # -- cached tool catalogs -----------------------------------------------------------

    def cached_tools(self, catalog_key: str, definition_id: str, sha256: str) -> list[dict[str, Any]] | None:
        """The tools last saved for this definition hash, or None.

        Args:
            catalog_key: the canonical project for a project definition, ``""`` for a global one.
            definition_id: ``config:NAME`` or ``project:<relative path>``.
            sha256: the definition's content hash.
        """
        row = self._db.row(
            "SELECT tools FROM mcp_catalogs WHERE project = ? AND definition_id = ? AND sha256 = ?",
            (catalog_key, definition_id, sha256),
        )
        return None if row is None else list(decode_json(row["tools"], "tool catalog"))

    def save_tools(self, catalog_key: str, definition_id: str, sha256: str, tools: list[dict[str, Any]]) -> None:
        """Keep the (already redacted) tools listed for this definition hash, replacing an older listing."""
        self._db.execute(
            "INSERT INTO mcp_catalogs (project, definition_id, sha256, tools, fetched_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, definition_id, sha256) DO UPDATE SET tools = excluded.tools, "
            "fetched_at = excluded.fetched_at",
            (catalog_key, definition_id, sha256, encode_json(tools), int(time.time())),
        )


def _content(row: dict[str, Any]) -> dict[str, Any]:
    """A definition row's content as bytes."""
    return {"content": bytes(row["content"])}
