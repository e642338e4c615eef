"""The connection to a profile database, shared by every repository of the store (ENG-03).

:class:`Database` opens the profile database in WAL mode, applies migrations, and offers
:meth:`Database.atomic` (``BEGIN`` at the top level, ``SAVEPOINT`` when nested) and four
statement helpers that only the repositories of :mod:`shadowcode.store` call; nothing
outside the package runs SQL against the profile database (``tests/test_layering.py``).
``sqlite3.Error`` becomes :class:`StoreError` here.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from shadowcode.errors import StoreError
from shadowcode.store.migrations import migrate, pending

__all__ = ["Database"]


class Database:
    """One connection to a profile database, safe to share between threads (a lock serializes use).

    Args:
        path: database file; its directory must exist. ``":memory:"`` for tests.

    Raises:
        StoreError: the file cannot be opened or migrated.
    """

    def __init__(self, path: Path | str) -> None:
        try:
            self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            migrate(self._conn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        self._lock = threading.RLock()
        self._depth = 0

    def close(self) -> None:
        """Close the connection; further use raises StoreError."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def atomic(self) -> Generator[None, None, None]:
        """A transaction: ``BEGIN IMMEDIATE`` at the top level, a ``SAVEPOINT`` when nested.

        Raises:
            StoreError: a statement inside failed (the transaction or savepoint is rolled back).
        """
        with self._lock:
            depth = self._depth
            name = f"sp{depth}"
            try:
                self._conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT {name}")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot start a transaction: {exc}") from exc
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                self._conn.execute("ROLLBACK" if depth == 0 else f"ROLLBACK TO {name}")
                if depth:
                    self._conn.execute(f"RELEASE {name}")
                raise
            self._depth -= 1
            try:
                self._conn.execute("COMMIT" if depth == 0 else f"RELEASE {name}")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot commit: {exc}") from exc

    def pending_migrations(self) -> list[str]:
        """Names of shipped migrations this database has not applied (read-only; empty when current).

        Raises:
            StoreError: the schema state cannot be read.
        """
        with self._lock:
            try:
                return pending(self._conn)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the schema state: {exc}") from exc

    def change_stamp(self) -> tuple[int, int] | None:
        """A value that moves whenever the database may have changed since it was last taken (ENG-03).

        ``(PRAGMA data_version, total_changes)``: the first moves when another connection
        commits, the second when this one changes a row (committed or not, so a rollback moves
        it too). None inside a transaction, where nothing read may be remembered.

        Raises:
            StoreError: the database cannot be read.
        """
        with self._lock:
            if self._conn.in_transaction:
                return None
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc
            return int(version), self._conn.total_changes

    # -- statements: for the repositories of shadowcode.store only --------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement; returns the number of rows changed."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).rowcount
            except sqlite3.Error as exc:
                raise StoreError(f"store write failed: {exc}") from exc

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one INSERT; returns the new rowid."""
        with self._lock:
            try:
                cur = self._conn.execute(sql, params)
            except sqlite3.Error as exc:
                raise StoreError(f"store write failed: {exc}") from exc
            return int(cur.lastrowid or 0)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run one query; returns every row as a dict keyed by column name."""
        with self._lock:
            try:
                return [dict(r) for r in self._conn.execute(sql, params).fetchall()]
            except sqlite3.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc

    def row(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        """Run one query; returns its first row as a dict, or None."""
        found = self.rows(sql, params)
        return found[0] if found else None
