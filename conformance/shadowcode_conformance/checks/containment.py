"""``shadow_sqlite`` reads the live database, and only inside the project (SRV-13, SRV-08).

* ``sqlite_live_and_contained``: a WAL-mode database gets a row committed while the check
  holds its writer open (so the row is only in the write-ahead log, not checkpointed):
  ``shadow_sqlite`` must count it. A link inside the project to another of its databases is
  read; a link to a database outside the project, a linked folder leading out, a ``..``
  path and a database inside ``.git`` are refused, and the outside database is unchanged.

The target is driven only through ``trust`` and ``mcp serve``; the databases are the check's own.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any, cast

import anyio.to_thread

from shadowcode_conformance.checks.boundaries import refused, serve, trust
from shadowcode_conformance.context import Context
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["sqlite_live_and_contained"]

_LIVE_DB = "data/live.db"
_ROWS = 3


def _make(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t(i INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO t(i) VALUES (?)", [(i,) for i in range(1, rows + 1)])
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _open_writer(path: Path) -> sqlite3.Connection:
    """A connection that committed one more row which stays in the WAL while it is open."""
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO t(i) VALUES (?)", (_ROWS + 1,))
    conn.commit()
    return conn


def _count(got: dict[str, Any]) -> Any:
    """The single value of a one-row, one-column result (a row is a list or an object); None otherwise."""
    rows = got.get("rows")
    if not isinstance(rows, list) or len(cast("list[object]", rows)) != 1:
        return None
    row: object = cast("list[object]", rows)[0]
    values: list[object] = (
        list(cast("dict[str, object]", row).values())
        if isinstance(row, dict)
        else cast("list[object]", row)
        if isinstance(row, list)
        else []
    )
    return values[0] if values else None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@check("containment:sqlite_live_and_contained", covers=["SRV-13", "SRV-08"], timeout_seconds=120)
async def sqlite_live_and_contained(ctx: Context) -> CheckResult:
    """Live WAL rows are seen; links and paths leading out of the project are refused (SRV-13, SRV-08)."""
    live = ctx.project / _LIVE_DB
    outside = ctx.scratch / "outside" / "secret.db"
    await anyio.to_thread.run_sync(_make, live, _ROWS)
    await anyio.to_thread.run_sync(_make, outside, _ROWS)
    (ctx.project / "data" / "alias.db").symlink_to(live)
    (ctx.project / "data" / "outside-link.db").symlink_to(outside)
    (ctx.project / "linked-folder").symlink_to(outside.parent, target_is_directory=True)
    await anyio.to_thread.run_sync(_make, ctx.project / ".git" / "hidden.db", _ROWS)
    outside_before = _digest(outside)
    if problem := await trust(ctx, ctx.project):
        return CheckResult(False, problem)
    writer = await anyio.to_thread.run_sync(_open_writer, live)
    problems: list[str] = []
    try:
        async with serve(ctx, ctx.project) as s:
            count = {"action": "query", "sql": "SELECT count(*) AS c FROM t"}
            seen = _count(await s.ok("shadow_sqlite", count | {"path": _LIVE_DB}))
            if seen != _ROWS + 1:
                problems.append(f"{_LIVE_DB} counted {seen} rows; {_ROWS + 1} are committed (the last in the WAL)")
            alias = _count(await s.ok("shadow_sqlite", count | {"path": "data/alias.db"}))
            if alias != _ROWS + 1:
                problems.append(f"data/alias.db, a link to {_LIVE_DB} inside the project, counted {alias} rows")
            rel_outside = os.path.relpath(outside.resolve(), ctx.project)
            for path in ("data/outside-link.db", "linked-folder/secret.db", rel_outside, ".git/hidden.db"):
                await refused(s, "shadow_sqlite", {"action": "tables", "path": path})
                await refused(s, "shadow_sqlite", count | {"path": path})
            problems.extend(s.problems)
    finally:
        await anyio.to_thread.run_sync(writer.close)
    if _digest(outside) != outside_before:
        problems.append("the database outside the project changed")
    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(True, "the WAL row was counted; a link inside was read; links, .. and .git leading out refused")
