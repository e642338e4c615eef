"""shadow_sqlite's library edge: read-only, single-statement, bounded queries (SRV-13)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowcode.errors import ToolError
from shadowcode.limits import (
    SQLITE_CELL_MAX_BYTES,
    SQLITE_QUERY_MAX_BYTES,
    SQLITE_QUERY_TIMEOUT_SECONDS,
    SQLITE_RESULT_MAX_BYTES,
    SQLITE_ROWS_MAX,
    SQLITE_VALUE_MAX_BYTES,
)
from shadowcode.project.sqlite_inspect import BLOB_KEY, list_tables, run_query
from tests.support.deadline import at_once


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def db(root: Path) -> Path:
    path = root / "data" / "app.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, data BLOB, price REAL);
        CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10;
        INSERT INTO items (name, data, price) VALUES ('apple', x'00ff', 1.5), ('pear', NULL, 20.0);
        """
    )
    conn.commit()
    conn.close()
    return path


def _digest(*paths: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "absent" for p in paths]


def _rows_query(count: int) -> str:
    return f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {count}) SELECT i FROM r"


@pytest.mark.req("SRV-13")
def test_list_tables_reports_tables_views_and_columns(root: Path, db: Path) -> None:
    result = list_tables(root, "data/app.db")
    assert result["path"] == "data/app.db"
    assert result["truncated"] is False
    by_name = {t["name"]: t for t in result["tables"]}
    assert by_name["items"]["type"] == "table"
    assert by_name["items"]["columns"] == [
        {"name": "id", "type": "INTEGER"},
        {"name": "name", "type": "TEXT"},
        {"name": "data", "type": "BLOB"},
        {"name": "price", "type": "REAL"},
    ]
    assert by_name["cheap"] == {
        "name": "cheap",
        "type": "view",
        "columns": [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "TEXT"}],
    }


@pytest.mark.req("SRV-13")
def test_query_returns_columns_rows_and_blobs_as_base64(root: Path, db: Path) -> None:
    result = run_query(root, "data/app.db", "SELECT id, name, data, price FROM items ORDER BY id")
    assert result == {
        "path": "data/app.db",
        "columns": ["id", "name", "data", "price"],
        "rows": [
            [1, "apple", {BLOB_KEY: base64.b64encode(b"\x00\xff").decode(), "bytes": 2}, 1.5],
            [2, "pear", None, 20.0],
        ],
        "row_count": 2,
        "truncated": False,
    }
    json.dumps(result, allow_nan=False)


@pytest.mark.req("SRV-13")
def test_query_binds_positional_and_named_parameters(root: Path, db: Path) -> None:
    positional = run_query(root, "data/app.db", "SELECT name FROM items WHERE price > ? AND name <> ?", [5, "x"])
    assert positional["rows"] == [["pear"]]
    named = run_query(
        root, "data/app.db", "SELECT :who, :flag, :blob", {"who": "o'brien", "flag": True, "blob": {BLOB_KEY: "AAE="}}
    )
    assert named["rows"] == [["o'brien", 1, {BLOB_KEY: "AAE=", "bytes": 2}]]
    injected = run_query(root, "data/app.db", "SELECT count(*) FROM items WHERE name = ?", ["x' OR '1'='1"])
    assert injected["rows"] == [[0]]


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize("params", ["apple", [[1]], [2**63], {"a": {"nested": 1}}, [1, 2]])
def test_query_refuses_unusable_parameters(root: Path, db: Path, params: object) -> None:
    with pytest.raises(ToolError):
        run_query(root, "data/app.db", "SELECT ?", params)  # type: ignore[arg-type]


@pytest.mark.req("SRV-13")
def test_database_outside_the_project_is_refused_via_dotdot(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.db"
    sqlite3.connect(outside).close()
    outside.write_bytes(b"SQLite format 3\x00" + bytes(4080))
    with pytest.raises(ToolError, match="outside the project"):
        run_query(root, "../outside.db", "SELECT 1")
    with pytest.raises(ToolError, match="outside the project"):
        list_tables(root, str(outside))


@pytest.mark.req("SRV-13")
def test_database_outside_the_project_is_refused_via_symlink(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.db"
    conn = sqlite3.connect(outside)
    conn.execute("CREATE TABLE s (v)")
    conn.commit()
    conn.close()
    (root / "link.db").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the project"):
        run_query(root, "link.db", "SELECT * FROM s")
    with pytest.raises(ToolError, match="outside the project"):
        list_tables(root, "link.db")


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize("content", [b"", b"hello, not a database\n", b"SQLite format 2\x00" + bytes(100)])
def test_non_database_file_is_refused(root: Path, content: bytes) -> None:
    (root / "notes.db").write_bytes(content)
    with pytest.raises(ToolError, match="not a SQLite database"):
        run_query(root, "notes.db", "SELECT 1")
    with pytest.raises(ToolError, match="not a SQLite database"):
        list_tables(root, "notes.db")
    assert (root / "notes.db").read_bytes() == content


@pytest.mark.req("SRV-13")
def test_missing_file_and_folder_are_refused(root: Path) -> None:
    (root / "folder.db").mkdir()
    with pytest.raises(ToolError, match="no such file"):
        run_query(root, "missing.db", "SELECT 1")
    with pytest.raises(ToolError, match="not a regular file"):
        run_query(root, "folder.db", "SELECT 1")


@pytest.mark.req("SRV-13")
def test_a_fifo_named_like_a_database_is_refused_at_once(root: Path) -> None:
    os.mkfifo(root / "data.db")
    for call in (lambda: run_query(root, "data.db", "SELECT 1"), lambda: list_tables(root, "data.db")):
        with pytest.raises(ToolError, match=r"not a regular file \(a FIFO\)"):
            at_once(call, fifos=[root / "data.db"])


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1; SELECT 2",
        "SELECT 1;\nDELETE FROM items",
        "SELECT 1; -- fine\n SELECT 2",
        "SELECT ';'; SELECT 2",
    ],
)
def test_two_statements_are_refused(root: Path, db: Path, sql: str) -> None:
    with pytest.raises(ToolError, match="one SQL statement"):
        run_query(root, "data/app.db", sql)


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize(
    "sql",
    ["SELECT 1;", "SELECT 1;;", "SELECT 1; -- trailing comment", "SELECT 1; /* block */ ;", "  SELECT 1  \n"],
)
def test_one_statement_with_trailing_separators_or_comments_is_accepted(root: Path, db: Path, sql: str) -> None:
    assert run_query(root, "data/app.db", sql)["rows"] == [[1]]


@pytest.mark.req("SRV-13")
def test_semicolon_inside_a_string_does_not_split_the_statement(root: Path, db: Path) -> None:
    assert run_query(root, "data/app.db", "SELECT 'a;b', \"name\" FROM items WHERE id = 1")["rows"] == [
        ["a;b", "apple"]
    ]


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO items (name) VALUES ('x')",
        "UPDATE items SET name = 'x'",
        "DELETE FROM items",
        "CREATE TABLE t (a)",
        "CREATE TEMP TABLE t (a)",
        "DROP TABLE items",
        "REPLACE INTO items (id, name) VALUES (1, 'x')",
        "WITH n AS (SELECT 'x') INSERT INTO items (name) SELECT * FROM n",
        "WITH n AS (SELECT 1) DELETE FROM items",
        "BEGIN",
        "VACUUM",
        "ANALYZE",
        "REINDEX",
        "EXPLAIN DELETE FROM items",
    ],
)
def test_writes_are_refused_and_the_file_is_unchanged(root: Path, db: Path, sql: str) -> None:
    before = _digest(db)
    with pytest.raises(ToolError):
        run_query(root, "data/app.db", sql)
    assert _digest(db) == before
    assert run_query(root, "data/app.db", "SELECT count(*) FROM items")["rows"] == [[2]]


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH DATABASE 'other.db' AS other",
        "ATTACH ':memory:' AS m",
        "DETACH DATABASE main",
        "VACUUM INTO 'copy.db'",
    ],
)
def test_attach_detach_and_vacuum_into_are_refused(root: Path, db: Path, sql: str) -> None:
    with pytest.raises(ToolError):
        run_query(root, "data/app.db", sql)
    assert sorted(p.name for p in root.rglob("*")) == ["app.db", "data"]


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize(
    "sql",
    [
        "PRAGMA journal_mode=delete",
        "PRAGMA journal_mode = WAL",
        "PRAGMA user_version = 7",
        "PRAGMA writable_schema = ON",
        "PRAGMA wal_checkpoint(TRUNCATE)",
        "PRAGMA optimize",
    ],
)
def test_pragma_writes_are_refused(root: Path, db: Path, sql: str) -> None:
    before = _digest(db)
    with pytest.raises(ToolError, match="PRAGMA"):
        run_query(root, "data/app.db", sql)
    assert _digest(db) == before


@pytest.mark.req("SRV-13")
def test_read_only_pragmas_are_answered(root: Path, db: Path) -> None:
    assert [r[1] for r in run_query(root, "data/app.db", "PRAGMA table_info(items)")["rows"]] == [
        "id",
        "name",
        "data",
        "price",
    ]
    assert run_query(root, "data/app.db", "PRAGMA journal_mode")["rows"] == [["delete"]]
    assert run_query(root, "data/app.db", "PRAGMA user_version")["rows"] == [[0]]


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize("function", ["load_extension('x')", "readfile('/etc/passwd')", "writefile('x', 'y')"])
def test_file_and_extension_functions_are_refused(root: Path, db: Path, function: str) -> None:
    with pytest.raises(ToolError):
        run_query(root, "data/app.db", f"SELECT {function}")


@pytest.mark.req("SRV-13")
def test_query_sees_rows_still_in_the_wal_and_changes_neither_file(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "live"
    source.mkdir()
    writer = sqlite3.connect(source / "live.db", isolation_level=None)
    try:
        assert writer.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, what TEXT)")
        writer.executemany("INSERT INTO events (what) VALUES (?)", [("first",), ("second",), ("third",)])
        assert (source / "live.db-wal").stat().st_size > 0
        shutil.copyfile(source / "live.db", root / "live.db")
        shutil.copyfile(source / "live.db-wal", root / "live.db-wal")
    finally:
        writer.close()
    # Without its WAL the main file does not even hold the table: the rows live only there.
    (root / "bare").mkdir()
    shutil.copyfile(root / "live.db", root / "bare" / "live.db")
    with pytest.raises(ToolError, match="no such table"):
        run_query(root, "bare/live.db", "SELECT what FROM events")
    db_file, wal_file = root / "live.db", root / "live.db-wal"
    before = _digest(db_file, wal_file)
    tables = list_tables(root, "live.db")
    assert [t["name"] for t in tables["tables"]] == ["events"]
    result = run_query(root, "live.db", "SELECT what FROM events ORDER BY id")
    assert result["rows"] == [["first"], ["second"], ["third"]]
    assert _digest(db_file, wal_file) == before


@pytest.mark.req("SRV-13")
def test_rows_at_the_limit_are_all_returned(root: Path, db: Path) -> None:
    result = run_query(root, "data/app.db", _rows_query(SQLITE_ROWS_MAX))
    assert result["row_count"] == SQLITE_ROWS_MAX
    assert result["truncated"] is False


@pytest.mark.req("SRV-13")
def test_one_row_past_the_limit_is_cut_and_marked_truncated(root: Path, db: Path) -> None:
    result = run_query(root, "data/app.db", _rows_query(SQLITE_ROWS_MAX + 1))
    assert result["row_count"] == SQLITE_ROWS_MAX
    assert result["rows"][-1] == [SQLITE_ROWS_MAX]
    assert result["truncated"] is True


@pytest.mark.req("SRV-13")
def test_cells_at_the_limit_are_whole_and_one_byte_more_is_shortened(root: Path, db: Path) -> None:
    at = run_query(
        root,
        "data/app.db",
        "SELECT printf('%.*c', ?, 'x'), zeroblob(?)",
        [SQLITE_CELL_MAX_BYTES, SQLITE_CELL_MAX_BYTES],
    )
    text, blob = at["rows"][0]
    assert text == "x" * SQLITE_CELL_MAX_BYTES
    assert blob == {BLOB_KEY: base64.b64encode(bytes(SQLITE_CELL_MAX_BYTES)).decode(), "bytes": SQLITE_CELL_MAX_BYTES}

    past = run_query(
        root,
        "data/app.db",
        "SELECT printf('%.*c', ?, 'x'), zeroblob(?)",
        [SQLITE_CELL_MAX_BYTES + 1, SQLITE_CELL_MAX_BYTES + 1],
    )
    text, blob = past["rows"][0]
    assert text.startswith("x" * SQLITE_CELL_MAX_BYTES)
    assert not text.startswith("x" * (SQLITE_CELL_MAX_BYTES + 1))
    assert text.endswith(f"[shortened from {SQLITE_CELL_MAX_BYTES + 1} bytes]")
    assert blob["bytes"] == SQLITE_CELL_MAX_BYTES + 1
    assert blob["shortened"] is True
    assert len(base64.b64decode(blob[BLOB_KEY])) == SQLITE_CELL_MAX_BYTES


@pytest.mark.req("SRV-13")
def test_multibyte_text_is_shortened_on_a_character_boundary(root: Path, db: Path) -> None:
    result = run_query(root, "data/app.db", "SELECT printf('%.*c', ?, 'é')", [SQLITE_CELL_MAX_BYTES])
    text = result["rows"][0][0]
    assert text.startswith("é" * (SQLITE_CELL_MAX_BYTES // 2))
    assert text.endswith(f"[shortened from {SQLITE_CELL_MAX_BYTES * 2} bytes]")


def _sized_rows_query(first_row_chars: int, rows: int) -> str:
    # Each row is ["x...x"]: its compact JSON is the text plus 4 bytes.
    return (
        f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {rows}) "
        f"SELECT printf('%.*c', CASE WHEN i = 1 THEN {first_row_chars} ELSE 1020 END, 'x') FROM r"
    )


@pytest.mark.req("SRV-13")
def test_result_bytes_at_the_limit_are_all_returned(root: Path, db: Path) -> None:
    rows = SQLITE_RESULT_MAX_BYTES // 1024
    result = run_query(root, "data/app.db", _sized_rows_query(1020, rows))
    assert result["row_count"] == rows
    assert sum(len(json.dumps(r, separators=(",", ":"))) for r in result["rows"]) == SQLITE_RESULT_MAX_BYTES
    assert result["truncated"] is False


@pytest.mark.req("SRV-13")
def test_one_result_byte_past_the_limit_stops_reading(root: Path, db: Path) -> None:
    rows = SQLITE_RESULT_MAX_BYTES // 1024
    result = run_query(root, "data/app.db", _sized_rows_query(1021, rows))
    assert result["row_count"] == rows - 1
    assert result["truncated"] is True


@pytest.mark.req("SRV-13")
def test_query_text_at_the_size_limit_is_accepted_and_one_byte_more_refused(root: Path, db: Path) -> None:
    head = "SELECT 1 -- "
    at = head + "x" * (SQLITE_QUERY_MAX_BYTES - len(head))
    assert len(at.encode()) == SQLITE_QUERY_MAX_BYTES
    assert run_query(root, "data/app.db", at)["rows"] == [[1]]
    with pytest.raises(ToolError, match=str(SQLITE_QUERY_MAX_BYTES)):
        run_query(root, "data/app.db", at + "x")


@pytest.mark.req("SRV-13")
def test_values_at_the_value_limit_are_built_and_one_byte_more_refused(root: Path, db: Path) -> None:
    ok = run_query(root, "data/app.db", "SELECT length(zeroblob(?))", [SQLITE_VALUE_MAX_BYTES])
    assert ok["rows"] == [[SQLITE_VALUE_MAX_BYTES]]
    with pytest.raises(ToolError, match="exceeded"):
        run_query(root, "data/app.db", "SELECT length(zeroblob(?))", [SQLITE_VALUE_MAX_BYTES + 1])


@pytest.mark.req("SRV-13")
def test_endless_query_is_stopped_at_the_deadline(root: Path, db: Path) -> None:
    sql = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    started = time.monotonic()
    with pytest.raises(ToolError, match="longer than"):
        run_query(root, "data/app.db", sql)
    elapsed = time.monotonic() - started
    assert SQLITE_QUERY_TIMEOUT_SECONDS <= elapsed < SQLITE_QUERY_TIMEOUT_SECONDS + 3


@pytest.mark.req("SRV-13")
def test_query_finishing_inside_a_short_deadline_succeeds(root: Path, db: Path) -> None:
    assert run_query(root, "data/app.db", _rows_query(10), timeout_seconds=0.5)["row_count"] == 10


@pytest.mark.req("SRV-13")
@pytest.mark.parametrize("sql", ["", "   ", "-- nothing\n", "/* nothing */;"])
def test_empty_query_is_refused(root: Path, db: Path, sql: str) -> None:
    with pytest.raises(ToolError, match="empty"):
        run_query(root, "data/app.db", sql)


@pytest.mark.req("SRV-13")
def test_file_bytes_are_unchanged_after_queries(root: Path, db: Path) -> None:
    before = _digest(db)
    list_tables(root, "data/app.db")
    run_query(root, "data/app.db", "SELECT * FROM items")
    run_query(root, "data/app.db", "PRAGMA table_info(items)")
    assert _digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["app.db"]


@pytest.fixture
def many_tables(root: Path) -> Iterator[Path]:
    path = root / "many.db"
    conn = sqlite3.connect(path)
    conn.executescript("".join(f"CREATE TABLE t{i:04d} (a);" for i in range(SQLITE_ROWS_MAX + 1)))
    conn.commit()
    conn.close()
    yield path


@pytest.mark.req("SRV-13")
def test_table_listing_is_bounded(root: Path, many_tables: Path) -> None:
    result = list_tables(root, "many.db")
    assert len(result["tables"]) == SQLITE_ROWS_MAX
    assert result["truncated"] is True
    assert len(list_tables(root, "many.db", tables_max=SQLITE_ROWS_MAX + 1)["tables"]) == SQLITE_ROWS_MAX + 1


# --- the deadline holds for every query shape (SRV-13) ---------------------------------------

_ONE_LONG_CALL = "SELECT instr(replace(zeroblob(16000000), x'00', 'a'), replace(zeroblob(8000), x'00', 'a') || 'b')"
"""One function call that runs for seconds: SQLite's progress handler never fires inside it."""


def _workers_of_this_process() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"sqlite_worker" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.req("SRV-13")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_a_single_expensive_function_call_is_stopped_at_the_bound_and_no_worker_is_left(root: Path, db: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="ran longer than 0.5 s and was stopped"):
        run_query(root, "data/app.db", _ONE_LONG_CALL, timeout_seconds=0.5)
    assert time.monotonic() - started < 0.5 + 2
    assert _workers_of_this_process() == []


@pytest.mark.req("SRV-13")
def test_the_worker_ends_itself_after_its_deadline_when_nobody_kills_it(root: Path, db: Path) -> None:
    from shadowcode.project import sqlite_inspect

    request = {
        "op": "query", "path": str(db), "shown": "data/app.db", "timeout_seconds": 0.2,
        "sql": _ONE_LONG_CALL, "params": [], "rows_max": 1, "cell_max_bytes": 10, "result_max_bytes": 100,
        "query_max_bytes": SQLITE_QUERY_MAX_BYTES, "value_max_bytes": SQLITE_VALUE_MAX_BYTES,
    }  # fmt: skip
    boot = [sys.executable, "-I", "-S", "-c", sqlite_inspect._WORKER_BOOT, sqlite_inspect._package_parent()]
    started = time.monotonic()
    done = subprocess.run(boot, input=json.dumps(request).encode(), capture_output=True, timeout=30, check=False)
    # Ended by itself either way: its own alarm killed it inside the one long call (a slow machine),
    # or the call returned first and the deadline check stopped the query (a fast one).
    stopped = done.returncode == 0 and b"ran longer than 0.2 s" in done.stdout
    assert done.returncode == -signal.SIGALRM or stopped, done
    assert time.monotonic() - started < 0.2 + 2 + 3


@pytest.mark.req("SRV-13")
def test_a_reply_at_its_byte_limit_is_read_and_one_byte_less_room_is_refused(root: Path, db: Path) -> None:
    result = run_query(root, "data/app.db", "SELECT name FROM items ORDER BY id")
    size = len(json.dumps({"result": result}, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    assert run_query(root, "data/app.db", "SELECT name FROM items ORDER BY id", reply_max_bytes=size) == result
    with pytest.raises(ToolError, match=f"reply is larger than {size - 1} bytes"):
        run_query(root, "data/app.db", "SELECT name FROM items ORDER BY id", reply_max_bytes=size - 1)
    assert list_tables(root, "data/app.db", reply_max_bytes=10_000)["tables"]
    with pytest.raises(ToolError, match="reply is larger than 10 bytes"):
        list_tables(root, "data/app.db", reply_max_bytes=10)
