"""Read-only inspection of a SQLite database file inside the project (SRV-13).

This module checks everything that needs no database (the path, the SQLite header, the
statement and its parameters), then runs the query in a worker process
(:mod:`shadowcode.project.sqlite_worker`, started as ``python -I`` in its own process group)
and kills that process group at the deadline. The deadline therefore holds for every query
shape: an endless recursive CTE, and also a single expensive function call that SQLite's
progress handler never interrupts. Apart from ``shadowcode.store`` these two modules are the
only ones that import ``sqlite3``; every SQLite error is turned into a
:class:`~shadowcode.errors.ToolError` with a sentence a person can act on.

Defences, each enough on its own for the common cases and layered on purpose:

* the file must be project content (:func:`shadowcode.project.files.confine`), open as a
  regular file without blocking (a FIFO named ``data.db`` is refused at once) and start with
  the SQLite header;
* the connection is opened with ``mode=ro`` (never ``immutable``, so rows still in the
  write-ahead log are visible; SQLite may create the ``-shm`` sidecar to read them);
* the text must hold exactly one statement (trailing ``;`` and comments are fine), and
  it must start with SELECT, WITH, VALUES, EXPLAIN or PRAGMA;
* an authorizer allows only reads, selects, recursive CTEs, functions other than the
  file/extension ones, and a short list of read-only pragmas;
* no database may be attached, SQL text and values are size-limited by SQLite itself;
* rows, cells and the total JSON size of the result are bounded, and so is the worker's reply;
* the worker is killed with its process group at the deadline and reaped, so none is left.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from shadowcode.errors import ToolError
from shadowcode.limits import (
    SQLITE_CELL_MAX_BYTES,
    SQLITE_QUERY_MAX_BYTES,
    SQLITE_QUERY_TIMEOUT_SECONDS,
    SQLITE_RESULT_MAX_BYTES,
    SQLITE_ROWS_MAX,
    SQLITE_VALUE_MAX_BYTES,
    SQLITE_WORKER_REPLY_MAX_BYTES,
)
from shadowcode.process_group import kill_group, read_output
from shadowcode.project.documents import SqliteRows, SqliteTables
from shadowcode.project.files import confine, read_regular, relative_posix
from shadowcode.project.sqlite_worker import BLOB_KEY

__all__ = ["BLOB_KEY", "list_tables", "run_query"]

logger = logging.getLogger(__name__)

_HEADER = b"SQLite format 3\x00"
_LEADING_WORDS = frozenset({"SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA"})
_WORKER_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from shadowcode.project.sqlite_worker import main; main()"
_WORKER_ENV_KEPT = ("PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "SYSTEMROOT")
_STDERR_KEPT_BYTES = 2048


# --- statement checks ------------------------------------------------------------------


def _skip_filler(sql: str, pos: int, *, separators: bool = True) -> int:
    """Return the index of the first character at or after ``pos`` that is not whitespace or a
    comment, nor a statement separator (``;``) when ``separators`` is true."""
    length = len(sql)
    while pos < length:
        char = sql[pos]
        if char.isspace() or (separators and char == ";"):
            pos += 1
        elif sql.startswith("--", pos):
            end = sql.find("\n", pos)
            pos = length if end < 0 else end + 1
        elif sql.startswith("/*", pos):
            end = sql.find("*/", pos + 2)
            pos = length if end < 0 else end + 2
        else:
            return pos
    return pos


def _first_statement(sql: str) -> str:
    """Return the single statement in ``sql``, refusing empty text and a second statement.

    SQLite's own tokenizer (``complete_statement``) finds the end of the first statement,
    so semicolons inside strings, identifiers, comments and trigger bodies do not split it.
    """
    start = _skip_filler(sql, 0)
    if start >= len(sql):
        raise ToolError("the query is empty")
    end = len(sql)
    pos = sql.find(";", start)
    while pos >= 0:
        if sqlite3.complete_statement(sql[start : pos + 1]):
            end = pos + 1
            break
        pos = sql.find(";", pos + 1)
    if _skip_filler(sql, end) < len(sql):
        raise ToolError("only one SQL statement may be run at a time; remove the second statement")
    return sql[start:end]


def _leading_word(statement: str, pos: int = 0) -> tuple[str, int]:
    pos = _skip_filler(statement, pos, separators=False)
    end = pos
    while end < len(statement) and (statement[end].isalnum() or statement[end] == "_"):
        end += 1
    return statement[pos:end].upper(), end


def _check_leading_word(statement: str) -> None:
    word, end = _leading_word(statement)
    if word == "EXPLAIN":
        word, end = _leading_word(statement, end)
        if word == "QUERY":
            word, end = _leading_word(statement, end)
            if word == "PLAN":
                word, end = _leading_word(statement, end)
        if word not in {"SELECT", "WITH", "VALUES"}:
            raise ToolError("EXPLAIN is accepted only in front of a read-only query")
    if word not in _LEADING_WORDS:
        shown = word or statement.strip()[:20]
        raise ToolError(
            f"only read-only queries are allowed (SELECT, WITH, VALUES, EXPLAIN, read-only PRAGMA); got {shown}"
        )


# --- values ----------------------------------------------------------------------------


def _param(value: object, where: str) -> object:
    if value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ToolError(f"parameter {where} does not fit a 64-bit integer")
        return value
    blob = cast("Mapping[object, object]", value) if isinstance(value, Mapping) else None
    if blob is not None and set(blob) == {BLOB_KEY}:
        encoded = blob[BLOB_KEY]
        if not isinstance(encoded, str):
            raise ToolError(f"parameter {where}: {BLOB_KEY} must be a base64 string")
        try:
            base64.b64decode(encoded, validate=True)
        except ValueError as exc:
            raise ToolError(f"parameter {where}: {BLOB_KEY} is not valid base64") from exc
        return {BLOB_KEY: encoded}  # decoded again in the worker
    raise ToolError(f"parameter {where} must be null, a boolean, a number, a string or a {BLOB_KEY} object")


def _params(params: object) -> list[object] | dict[str, object]:
    if params is None:
        return []
    if isinstance(params, Mapping):
        named: dict[str, object] = {}
        for key, value in cast("Mapping[object, object]", params).items():
            if not isinstance(key, str):
                raise ToolError("named parameters must have string keys")
            named[key] = _param(value, repr(key))
        return named
    if isinstance(params, (list, tuple)):
        positional = cast("list[object] | tuple[object, ...]", params)
        return [_param(value, f"#{index + 1}") for index, value in enumerate(positional)]
    raise ToolError("params must be a list (positional ?) or an object (named :name)")


# --- the worker ------------------------------------------------------------------------


def _open_database(root: Path, rel_path: str) -> tuple[Path, str]:
    """Confine the path and check the SQLite header, opening the file without blocking."""
    path = confine(root, rel_path, must_exist=True)
    shown = relative_posix(root, path)
    found = read_regular(path, max_bytes=len(_HEADER), truncate=True, label=shown)
    if found is None:
        raise ToolError(f"no such file in the project: {shown}", path=shown)
    if found.data != _HEADER:
        raise ToolError(f"not a SQLite database (no SQLite header): {shown}", path=shown)
    return path, shown


def _package_parent() -> str:
    """The ``sys.path`` entry holding the ``shadowcode`` package (a folder, or the zipapp)."""
    import shadowcode

    return os.path.dirname(os.path.dirname(shadowcode.__file__ or ""))






def _in_worker(request: dict[str, Any], shown: str, timeout_seconds: float, reply_max_bytes: int) -> dict[str, Any]:
    """Run one request in a fresh worker process, killed with its group at the deadline (SRV-13).

    Returns:
        The worker's ``result`` object.

    Raises:
        ToolError: the worker's refusal, the deadline, an oversized reply, or a worker that
            could not start or failed.
    """
    if not sys.executable:
        raise ToolError("no Python interpreter is known to run the query in", path=shown)
    started = time.monotonic()
    deadline = started + timeout_seconds
    request = request | {"shown": shown, "timeout_seconds": timeout_seconds}
    env = {name: os.environ[name] for name in _WORKER_ENV_KEPT if name in os.environ}
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        stdin.write(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        stdin.seek(0)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WORKER_BOOT, _package_parent()],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"the query worker could not be started: {exc.strerror}", path=shown) from exc
        try:
            data, too_big, late = read_output(proc, deadline, reply_max_bytes)
        finally:
            if proc.poll() is None:
                kill_group(proc)
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if late:
            raise ToolError(f"the query ran longer than {timeout_seconds:g} s and was stopped", path=shown)
        if too_big:
            raise ToolError(f"the query's reply is larger than {reply_max_bytes} bytes", path=shown)
        try:
            reply = json.loads(data.decode("utf-8"))
        except ValueError:
            stderr.seek(0)
            tail = stderr.read(_STDERR_KEPT_BYTES).decode("utf-8", errors="replace").strip()
            logger.warning("the SQLite worker failed (exit %s): %s", proc.returncode, tail)
            raise ToolError(f"the query worker failed (exit {proc.returncode})", path=shown) from None
    if "error" in reply:
        raise ToolError(str(reply["error"]), path=shown)
    return reply["result"]


# --- public ----------------------------------------------------------------------------


def list_tables(
    root: Path,
    rel_path: str,
    *,
    tables_max: int = SQLITE_ROWS_MAX,
    timeout_seconds: float = SQLITE_QUERY_TIMEOUT_SECONDS,
    reply_max_bytes: int = SQLITE_WORKER_REPLY_MAX_BYTES,
) -> SqliteTables:
    """List the tables and views of a project database with their columns (SRV-13).

    Internal ``sqlite_*`` tables are left out. The database is opened read-only and is
    never changed.

    Args:
        root: the canonical project root.
        rel_path: the database file, relative to the root.
        tables_max: tables and views listed at most; more set ``truncated``.
        timeout_seconds: deadline for the whole listing, the worker's start included.
        reply_max_bytes: bytes of the worker's reply read at most.

    Returns:
        ``{"path": str, "tables": [{"name": str, "type": "table"|"view",
        "columns": [{"name": str, "type": str}]}], "truncated": bool}``, sorted by name.
        A table whose columns cannot be read gets ``"columns": []`` and an ``"error"``.

    Raises:
        ToolError: the path is not project content, does not exist, is not a regular file or
            not a SQLite database, SQLite failed to read it, or the deadline passed.
    """
    path, shown = _open_database(root, rel_path)
    request = {
        "op": "tables",
        "path": str(path),
        "tables_max": tables_max,
        "query_max_bytes": SQLITE_QUERY_MAX_BYTES,
        "value_max_bytes": SQLITE_VALUE_MAX_BYTES,
    }
    return cast(SqliteTables, _in_worker(request, shown, timeout_seconds, reply_max_bytes))  # the worker's JSON reply


def run_query(
    root: Path,
    rel_path: str,
    sql: object,
    params: Sequence[object] | Mapping[str, object] | None = None,
    *,
    rows_max: int = SQLITE_ROWS_MAX,
    cell_max_bytes: int = SQLITE_CELL_MAX_BYTES,
    result_max_bytes: int = SQLITE_RESULT_MAX_BYTES,
    timeout_seconds: float = SQLITE_QUERY_TIMEOUT_SECONDS,
    reply_max_bytes: int = SQLITE_WORKER_REPLY_MAX_BYTES,
) -> SqliteRows:
    """Run one bounded read-only query on a project database (SRV-13).

    The database is opened read-only, so rows still in its write-ahead log are seen and
    the file is never changed. Text cells longer than ``cell_max_bytes`` UTF-8 bytes are
    cut and end with ``…[shortened from N bytes]``; blobs come back as
    ``{"$blob_base64": str, "bytes": int}`` (plus ``"shortened": true`` when cut);
    infinite floats come back as strings. Reading stops at ``rows_max`` rows or before the
    row that would take the rows' compact JSON past ``result_max_bytes``; either sets
    ``truncated``. The query runs in a worker process killed at ``timeout_seconds``, so
    the bound holds whatever the query does.

    Args:
        root: the canonical project root.
        rel_path: the database file, relative to the root.
        sql: exactly one statement, at most ``SQLITE_QUERY_MAX_BYTES`` UTF-8 bytes;
            trailing semicolons and comments are allowed.
        params: bound values, a list for ``?`` placeholders or an object for ``:name``
            ones; each null, boolean, number, string or ``{"$blob_base64": str}``.
        rows_max: rows returned at most.
        cell_max_bytes: bytes of one text or blob cell before it is shortened.
        result_max_bytes: bytes of the returned rows, as compact JSON arrays, at most.
        timeout_seconds: deadline for preparing, running and reading the query, the worker's
            start included.
        reply_max_bytes: bytes of the worker's reply (compact JSON ``{"result": ...}``) read
            at most.

    Returns:
        ``{"path": str, "columns": [str], "rows": [[cell]], "row_count": int,
        "truncated": bool}``.

    Raises:
        ToolError: a bad path or non-database file, an oversize or empty query, more than
            one statement, anything that is not a read (writes, ATTACH/DETACH, PRAGMA
            writes, file or extension functions), bad parameters, the deadline, an oversized
            reply, or any other SQLite error.
    """
    if not isinstance(sql, str):
        raise ToolError("the query must be a string")
    size = len(sql.encode("utf-8", errors="surrogatepass"))
    if size > SQLITE_QUERY_MAX_BYTES:
        raise ToolError(f"the query is {size} bytes; at most {SQLITE_QUERY_MAX_BYTES} are accepted")
    statement = _first_statement(sql)
    _check_leading_word(statement)
    bound = _params(params)
    path, shown = _open_database(root, rel_path)
    request = {
        "op": "query",
        "path": str(path),
        "sql": statement,
        "params": bound,
        "rows_max": rows_max,
        "cell_max_bytes": cell_max_bytes,
        "result_max_bytes": result_max_bytes,
        "query_max_bytes": SQLITE_QUERY_MAX_BYTES,
        "value_max_bytes": SQLITE_VALUE_MAX_BYTES,
    }
    return cast(SqliteRows, _in_worker(request, shown, timeout_seconds, reply_max_bytes))  # the worker's JSON reply
