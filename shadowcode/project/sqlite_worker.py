"""The SQLite worker behind shadow_sqlite: one read-only query in a process that can be killed (SRV-13).

:mod:`shadowcode.project.sqlite_inspect` starts this module as ``python -I`` in its own
process group, hands it one request as JSON on stdin and reads one reply as JSON on stdout;
at the deadline it kills the whole group. A single expensive call (``instr()`` over a large
value, say) never reaches SQLite's progress handler, so only a process can be stopped at the
bound. The module imports the standard library only (and :mod:`shadowcode.json_values`, which
imports nothing), so the worker starts in milliseconds.

Request (compact JSON, UTF-8)::

    {"op": "query" | "tables", "path": str (absolute, already confined and checked),
     "shown": str (the path as errors name it), "timeout_seconds": float,
     "query_max_bytes": int, "value_max_bytes": int,
     "sql": str, "params": [value] | {name: value} (op "query"; blobs as {"$blob_base64": str}),
     "rows_max": int, "cell_max_bytes": int, "result_max_bytes": int (op "query"),
     "tables_max": int (op "tables")}

Reply: ``{"result": {...}}`` (the shapes :func:`~shadowcode.project.sqlite_inspect.run_query`
and :func:`~shadowcode.project.sqlite_inspect.list_tables` return) or ``{"error": str}``.

Defences inside the worker, each enough on its own for the common cases and layered on
purpose: the connection is opened with ``mode=ro`` (never ``immutable``, so rows still in
the write-ahead log are visible); an authorizer allows only reads, selects, recursive CTEs,
functions other than the file/extension ones, and a short list of read-only pragmas; no
database may be attached; SQL text and values are size-limited by SQLite itself; a progress
handler interrupts the query at its deadline; rows, cells and the rows' JSON size are bounded
here; and a real-time timer ends the worker itself shortly after its deadline should its
parent be gone.
"""

from __future__ import annotations

import binascii
import json
import math
import signal
import sqlite3
import sys
import time

from shadowcode.json_values import json_array, json_object

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the worker starts faster without importing typing
    from typing import Any

__all__ = ["BLOB_KEY", "main"]

BLOB_KEY = "$blob_base64"
"""Key of the object that carries a blob cell (or a blob parameter) as base64."""

_PROGRESS_STEPS = 1000
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")
_SELF_STOP_GRACE_SECONDS = 2.0
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


class _Refused(Exception):
    """A query the worker refuses; its text is the reply's ``error``."""


class _Guard:
    """The authorizer and progress handler of one inspection connection."""

    def __init__(self, timeout_seconds: float, value_max_bytes: int) -> None:
        self.deadline = time.monotonic() + timeout_seconds
        self.timeout_seconds = timeout_seconds
        self.value_max_bytes = value_max_bytes
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

    def late(self) -> str:
        return f"the query ran longer than {self.timeout_seconds:g} s and was stopped"

    def check_clock(self) -> None:
        if time.monotonic() > self.deadline:
            self.timed_out = True
            raise _Refused(self.late())

    def translate(self, exc: sqlite3.Error, shown: str) -> _Refused:
        if self.timed_out:
            return _Refused(self.late())
        if self.denied is not None:
            return _Refused(f"query refused: {self.denied}")
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            return _Refused(f"not a SQLite database: {shown}")
        if "too big" in text:
            return _Refused(f"a value exceeded {self.value_max_bytes} bytes: {text}")
        if "one statement at a time" in text:
            return _Refused("only one SQL statement may be run at a time")
        return _Refused(f"SQLite refused the query: {text}")


def _uri_path(path: str) -> str:
    """``path`` percent-encoded for a ``file:`` URI (every byte but unreserved ones and ``/``)."""
    return "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in path.encode("utf-8", errors="surrogateescape"))


def _connect(request: dict[str, Any], guard: _Guard) -> sqlite3.Connection:
    shown = request["shown"]
    uri = "file:" + _uri_path(request["path"]) + "?mode=ro"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=guard.timeout_seconds, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise guard.translate(exc, shown) from exc
    try:
        conn.text_factory = _text
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, request["query_max_bytes"])
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, request["value_max_bytes"])
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.set_authorizer(guard.authorize)
        conn.set_progress_handler(guard.progress, _PROGRESS_STEPS)
    except sqlite3.Error as exc:
        conn.close()
        raise guard.translate(exc, shown) from exc
    return conn


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
        encoded = binascii.b2a_base64(value[:cell_max_bytes], newline=False).decode("ascii")
        blob: dict[str, object] = {BLOB_KEY: encoded, "bytes": size}
        if size > cell_max_bytes:
            blob["shortened"] = True
        return blob
    text, size = _clip_utf8(str(value), cell_max_bytes)
    if size > cell_max_bytes:
        return f"{text}…[shortened from {size} bytes]"
    return text


def _json_size(row: list[object]) -> int:
    return len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _bound(value: object) -> object:
    blob = json_object(value)
    if blob is not None:
        return binascii.a2b_base64(str(blob[BLOB_KEY]))
    return value


def _tables(request: dict[str, Any], conn: sqlite3.Connection, guard: _Guard) -> dict[str, Any]:
    shown, tables_max = request["shown"], request["tables_max"]
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


def _query(request: dict[str, Any], conn: sqlite3.Connection, guard: _Guard) -> dict[str, Any]:
    shown = request["shown"]
    rows_max, cell_max_bytes = request["rows_max"], request["cell_max_bytes"]
    result_max_bytes = request["result_max_bytes"]
    named, positional = json_object(request["params"]), json_array(request["params"]) or []
    bound = {k: _bound(v) for k, v in named.items()} if named is not None else [_bound(v) for v in positional]
    try:
        cursor = conn.execute(request["sql"], bound)
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
        raise _Refused(f"the query or its parameters were rejected: {exc}") from exc
    except sqlite3.Error as exc:
        raise guard.translate(exc, shown) from exc
    return {"path": shown, "columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Run one request in this process and return the reply object (see the module docstring)."""
    guard = _Guard(float(request["timeout_seconds"]), int(request["value_max_bytes"]))
    try:
        conn = _connect(request, guard)
        try:
            run = _tables if request["op"] == "tables" else _query
            return {"result": run(request, conn, guard)}
        finally:
            conn.close()
    except _Refused as exc:
        return {"error": str(exc)}


def main() -> None:
    """Read one request from stdin, write one reply to stdout, exit (the worker process's entry)."""
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    # Should the parent be gone, end even inside a long SQLite call: SIGALRM's default
    # action terminates the process, and nothing here installs a handler for it.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, float(request["timeout_seconds"]) + _SELF_STOP_GRACE_SECONDS)
    reply = answer(request)
    sys.stdout.buffer.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    sys.stdout.buffer.flush()
