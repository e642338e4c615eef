"""Ordered, named schema migrations recorded in ``_migrations`` (STYLE 18).

Migrations are the ``sql/NNNN_name.sql`` files of this package, applied in name order; each
one runs in the same transaction as its ``_migrations`` row. :func:`pending` and
:func:`applied` only read.
"""

from __future__ import annotations

import os
import sqlite3
import time

from shadowcode.errors import MigrationError

__all__ = ["applied", "available", "migrate", "pending"]

_SQL_FOLDER = os.path.join(os.path.dirname(__file__), "sql")


def available() -> list[tuple[str, str]]:
    """All migrations shipped with the package as ``(name, sql)``, in order."""
    from importlib import resources

    folder = resources.files("shadowcode.store") / "sql"
    return [(name, (folder / f"{name}.sql").read_text(encoding="utf-8")) for name in _names()]


def _names() -> list[str]:
    """The names of the shipped migrations, in order; their scripts are read only to apply one.

    Listed from the package's folder when it is one (every engine start does this, and
    ``importlib.resources`` with what it imports costs more than the listing, issue 32),
    else through ``importlib.resources`` (a package read from a zip).
    """
    try:
        found = os.listdir(_SQL_FOLDER)
    except OSError:
        from importlib import resources

        found = [p.name for p in (resources.files("shadowcode.store") / "sql").iterdir()]
    return sorted(name.removesuffix(".sql") for name in found if name.endswith(".sql"))


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations already recorded, in order; empty on a new database."""
    row = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='_migrations'").fetchone()
    if row is None:
        return []
    return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]


def pending(conn: sqlite3.Connection) -> list[str]:
    """Names of shipped migrations not yet applied."""
    done = set(applied(conn))
    return [name for name in _names() if name not in done]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction.

    Returns:
        The names applied, in order (empty when the schema is current: no write happens).

    Raises:
        MigrationError: a migration failed; it is rolled back and later ones are not tried.
    """
    todo = pending(conn)
    if not todo:
        return []
    scripts = dict(available())
    for name in todo:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone() is None:
                for statement in _statements(scripts[name]):
                    conn.execute(statement)
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, int(time.time())))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK") if conn.in_transaction else None
            raise MigrationError(f"migration {name} failed: {exc}", migration=name) from exc
    return todo


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements (``executescript`` would commit)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf)
            buf = ""
    if buf.strip() and not all(ln.strip().startswith("--") or not ln.strip() for ln in buf.splitlines()):
        raise MigrationError("migration ends with an incomplete statement")
    return out
