"""Read-only inspection of a SQLite database file inside the project (SRV-13).

This module is the inspection edge for ``sqlite3``: apart from ``shadowcode.store`` it is
the only place that imports it, and every ``sqlite3.Error`` is translated here into a
:class:`~shadowcode.errors.ToolError` with a sentence a person can act on.

Defences, each enough on its own for the common cases and layered on purpose:

* the file must exist inside the project and start with the SQLite header;
* the connection is opened with ``mode=ro`` (never ``immutable``, so rows still in the
  write-ahead log are visible; SQLite may create the ``-shm`` sidecar to read them);
* the text must hold exactly one statement (trailing ``;`` and comments are fine), and
  it must start with SELECT, WITH, VALUES, EXPLAIN or PRAGMA;
* an authorizer allows only reads, selects, recursive CTEs, functions other than the
  file/extension ones, and a short list of read-only pragmas;
* no database may be attached, SQL text and values are size-limited by SQLite itself,
  and a progress handler interrupts the query at its deadline;
* rows, cells and the total JSON size of the result are bounded here.
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shadowcode.errors import ToolError
from shadowcode.limits import (
    SQLITE_CELL_MAX_BYTES,
    SQLITE_QUERY_MAX_BYTES,
    SQLITE_QUERY_TIMEOUT_SECONDS,
    SQLITE_RESULT_MAX_BYTES,
    SQLITE_ROWS_MAX,
    SQLITE_VALUE_MAX_BYTES,
)
from shadowcode.project.files import confine, read_regular, relative_posix

__all__ = ["BLOB_KEY", "list_tables", "run_query"]

BLOB_KEY = "$blob_base64"
"""Key of the object that carries a blob cell (or a blob parameter) as base64."""

_HEADER = b"SQLite format 3\x00"
_PROGRESS_STEPS = 1000
_LEADING_WORDS = frozenset({"SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA"})
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Pragmas that only report, whatever their argument (a table, index or schema name).
_REPORTING_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "database_list",
        "compile_options",
        "page_count",
        "freelist_count",
        "data_version",
        "quick_check",
        "integrity_check",
        "foreign_key_check",
    }
)
# Pragmas that report when given no argument and change something when given one.
_SETTING_PRAGMAS = frozenset(
    {"user_version", "application_id", "schema_version", "page_size", "encoding", "journal_mode", "foreign_keys"}
)
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE})
_ACTION_NAMES = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").replace("_", " ")
    for name in (
        "SQLITE_ALTER_TABLE",
        "SQLITE_ANALYZE",
        "SQLITE_ATTACH",
        "SQLITE_CREATE_INDEX",
        "SQLITE_CREATE_TABLE",
        "SQLITE_CREATE_TEMP_INDEX",
        "SQLITE_CREATE_TEMP_TABLE",
        "SQLITE_CREATE_TEMP_TRIGGER",
        "SQLITE_CREATE_TEMP_VIEW",
        "SQLITE_CREATE_TRIGGER",
        "SQLITE_CREATE_VIEW",
        "SQLITE_CREATE_VTABLE",
        "SQLITE_DELETE",
        "SQLITE_DETACH",
        "SQLITE_DROP_INDEX",
        "SQLITE_DROP_TABLE",
        "SQLITE_DROP_TEMP_INDEX",
        "SQLITE_DROP_TEMP_TABLE",
        "SQLITE_DROP_TEMP_TRIGGER",
        "SQLITE_DROP_TEMP_VIEW",
        "SQLITE_DROP_TRIGGER",
        "SQLITE_DROP_VIEW",
        "SQLITE_DROP_VTABLE",
        "SQLITE_INSERT",
        "SQLITE_REINDEX",
        "SQLITE_SAVEPOINT",
        "SQLITE_TRANSACTION",
        "SQLITE_UPDATE",
    )
}


# --- statement checks ------------------------------------------------------------------


def _skip_filler(sql: str, pos: int) -> int:
    """Return the index of the first character at or after ``pos`` that is not whitespace,
    a comment or a statement separator."""
    length = len(sql)
    while pos < length:
        char = sql[pos]
        if char.isspace() or char == ";":
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


def _skip_space_and_comments(sql: str, pos: int) -> int:
    length = len(sql)
    while pos < length:
        if sql[pos].isspace():
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
    pos = _skip_space_and_comments(statement, pos)
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


# --- connection ------------------------------------------------------------------------


class _Guard:
    """The authorizer and progress handler of one inspection connection."""

    def __init__(self, timeout_seconds: float) -> None:
        self.deadline = time.monotonic() + timeout_seconds
        self.timeout_seconds = timeout_seconds
        self.timed_out = False
        self.denied: str | None = None

    def authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name in _DENIED_FUNCTIONS:
                return self._deny(f"the function {name}() is not allowed")
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in _REPORTING_PRAGMAS or (name in _SETTING_PRAGMAS and arg2 is None):
                return sqlite3.SQLITE_OK
            if arg2 is not None:
                return self._deny(f"PRAGMA {name} with a value would change the database")
            return self._deny(f"PRAGMA {name} is not on the read-only list")
        if action == sqlite3.SQLITE_ATTACH:
            return self._deny("ATTACH (and VACUUM INTO) are not allowed")
        if action == sqlite3.SQLITE_DETACH:
            return self._deny("DETACH is not allowed")
        label = _ACTION_NAMES.get(action, f"action {action}")
        return self._deny(f"{label} is not allowed: the database is opened read-only")

    def _deny(self, reason: str) -> int:
        if self.denied is None:
            self.denied = reason
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return 1
        return 0

    def check_clock(self) -> None:
        if time.monotonic() > self.deadline:
            self.timed_out = True
            raise ToolError(f"the query ran longer than {self.timeout_seconds:g} s and was stopped")

    def translate(self, exc: sqlite3.Error, rel: str) -> ToolError:
        if self.timed_out:
            return ToolError(f"the query ran longer than {self.timeout_seconds:g} s and was stopped", path=rel)
        if self.denied is not None:
            return ToolError(f"query refused: {self.denied}", path=rel)
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            return ToolError(f"not a SQLite database: {rel}", path=rel)
        if "too big" in text:
            return ToolError(f"a value exceeded {SQLITE_VALUE_MAX_BYTES} bytes: {text}", path=rel)
        if "one statement at a time" in text:
            return ToolError("only one SQL statement may be run at a time", path=rel)
        return ToolError(f"SQLite refused the query: {text}", path=rel)


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


def _connect(path: Path, guard: _Guard, shown: str) -> sqlite3.Connection:
    uri = "file:" + urllib.parse.quote(str(path), safe="/") + "?mode=ro"
    try:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=guard.timeout_seconds,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise guard.translate(exc, shown) from exc
    try:
        conn.text_factory = lambda data: data.decode("utf-8", errors="replace")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, SQLITE_QUERY_MAX_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_VALUE_MAX_BYTES)
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.set_authorizer(guard.authorize)
        conn.set_progress_handler(guard.progress, _PROGRESS_STEPS)
    except sqlite3.Error as exc:
        conn.close()
        raise guard.translate(exc, shown) from exc
    return conn


# --- values ----------------------------------------------------------------------------


def _clip_utf8(text: str, max_bytes: int) -> tuple[str, int]:
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= max_bytes:
        return text, len(data)
    return data[:max_bytes].decode("utf-8", errors="ignore"), len(data)


def _cell(value: object, cell_max_bytes: int) -> object:
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        size = len(value)
        blob: dict[str, object] = {BLOB_KEY: base64.b64encode(value[:cell_max_bytes]).decode("ascii"), "bytes": size}
        if size > cell_max_bytes:
            blob["shortened"] = True
        return blob
    text, size = _clip_utf8(str(value), cell_max_bytes)
    if size > cell_max_bytes:
        return f"{text}…[shortened from {size} bytes]"
    return text


def _param(value: object, where: str) -> object:
    if value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ToolError(f"parameter {where} does not fit a 64-bit integer")
        return value
    if isinstance(value, Mapping) and set(value) == {BLOB_KEY}:  # pyright: ignore[reportUnknownArgumentType]
        encoded = value[BLOB_KEY]  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(encoded, str):
            raise ToolError(f"parameter {where}: {BLOB_KEY} must be a base64 string")
        try:
            return base64.b64decode(encoded, validate=True)
        except ValueError as exc:
            raise ToolError(f"parameter {where}: {BLOB_KEY} is not valid base64") from exc
    raise ToolError(f"parameter {where} must be null, a boolean, a number, a string or a {BLOB_KEY} object")


def _params(params: object) -> Sequence[object] | dict[str, object]:
    if params is None:
        return ()
    if isinstance(params, Mapping):
        named: dict[str, object] = {}
        for key, value in params.items():  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(key, str):
                raise ToolError("named parameters must have string keys")
            named[key] = _param(value, repr(key))
        return named
    if isinstance(params, (list, tuple)):
        return [_param(value, f"#{index + 1}") for index, value in enumerate(params)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    raise ToolError("params must be a list (positional ?) or an object (named :name)")


def _json_size(row: list[object]) -> int:
    return len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# --- public ----------------------------------------------------------------------------


def list_tables(
    root: Path,
    rel_path: str,
    *,
    tables_max: int = SQLITE_ROWS_MAX,
    timeout_seconds: float = SQLITE_QUERY_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """List the tables and views of a project database with their columns (SRV-13).

    Internal ``sqlite_*`` tables are left out. The database is opened read-only and is
    never changed.

    Args:
        root: the canonical project root.
        rel_path: the database file, relative to the root.
        tables_max: tables and views listed at most; more set ``truncated``.
        timeout_seconds: deadline for the whole listing.

    Returns:
        ``{"path": str, "tables": [{"name": str, "type": "table"|"view",
        "columns": [{"name": str, "type": str}]}], "truncated": bool}``, sorted by name.
        A table whose columns cannot be read gets ``"columns": []`` and an ``"error"``.

    Raises:
        ToolError: the path leaves the project, does not exist, is not a SQLite database,
            or SQLite failed to read it.
    """
    path, shown = _open_database(root, rel_path)
    guard = _Guard(timeout_seconds)
    conn = _connect(path, guard, shown)
    try:
        try:
            found = conn.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT ?",
                (tables_max + 1,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise guard.translate(exc, shown) from exc
        tables: list[dict[str, Any]] = []
        for name, kind in found[:tables_max]:
            entry: dict[str, Any] = {"name": name, "type": kind, "columns": []}
            try:
                quoted = '"' + str(name).replace('"', '""') + '"'
                columns = conn.execute(f"PRAGMA main.table_info({quoted})").fetchall()
                entry["columns"] = [{"name": col[1], "type": col[2] or ""} for col in columns]
            except sqlite3.Error as exc:
                if guard.timed_out:
                    raise guard.translate(exc, shown) from exc
                entry["error"] = f"columns unavailable: {guard.denied or exc}"
                guard.denied = None
            tables.append(entry)
        return {"path": shown, "tables": tables, "truncated": len(found) > tables_max}
    finally:
        conn.close()


def run_query(
    root: Path,
    rel_path: str,
    sql: str,
    params: Sequence[object] | Mapping[str, object] | None = None,
    *,
    rows_max: int = SQLITE_ROWS_MAX,
    cell_max_bytes: int = SQLITE_CELL_MAX_BYTES,
    result_max_bytes: int = SQLITE_RESULT_MAX_BYTES,
    timeout_seconds: float = SQLITE_QUERY_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """Run one bounded read-only query on a project database (SRV-13).

    The database is opened read-only, so rows still in its write-ahead log are seen and
    the file is never changed. Text cells longer than ``cell_max_bytes`` UTF-8 bytes are
    cut and end with ``…[shortened from N bytes]``; blobs come back as
    ``{"$blob_base64": str, "bytes": int}`` (plus ``"shortened": true`` when cut);
    infinite floats come back as strings. Reading stops at ``rows_max`` rows or before the
    row that would take the rows' compact JSON past ``result_max_bytes``; either sets
    ``truncated``.

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
        timeout_seconds: deadline for preparing, running and reading the query.

    Returns:
        ``{"path": str, "columns": [str], "rows": [[cell]], "row_count": int,
        "truncated": bool}``.

    Raises:
        ToolError: a bad path or non-database file, an oversize or empty query, more than
            one statement, anything that is not a read (writes, ATTACH/DETACH, PRAGMA
            writes, file or extension functions), bad parameters, the deadline, or any
            other SQLite error.
    """
    if not isinstance(sql, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError("the query must be a string")
    size = len(sql.encode("utf-8", errors="surrogatepass"))
    if size > SQLITE_QUERY_MAX_BYTES:
        raise ToolError(f"the query is {size} bytes; at most {SQLITE_QUERY_MAX_BYTES} are accepted")
    statement = _first_statement(sql)
    _check_leading_word(statement)
    bound = _params(params)
    path, shown = _open_database(root, rel_path)
    guard = _Guard(timeout_seconds)
    conn = _connect(path, guard, shown)
    try:
        try:
            cursor = conn.execute(statement, bound)
            columns = [str(col[0]) for col in cursor.description or ()]
            rows: list[list[object]] = []
            total = 0
            truncated = False
            while True:
                guard.check_clock()
                raw = cursor.fetchone()
                if raw is None:
                    break
                if len(rows) >= rows_max:
                    truncated = True
                    break
                row = [_cell(value, cell_max_bytes) for value in raw]
                row_bytes = _json_size(row)
                if total + row_bytes > result_max_bytes:
                    truncated = True
                    break
                total += row_bytes
                rows.append(row)
        except (OverflowError, sqlite3.ProgrammingError) as exc:
            if isinstance(exc, sqlite3.Error) and (guard.denied or guard.timed_out):
                raise guard.translate(exc, shown) from exc
            raise ToolError(f"the query or its parameters were rejected: {exc}", path=shown) from exc
        except sqlite3.Error as exc:
            raise guard.translate(exc, shown) from exc
        return {"path": shown, "columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}
    finally:
        conn.close()
