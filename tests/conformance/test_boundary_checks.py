"""The boundary and owner-queue checks: their fixtures are exact, and they fail targets that misbehave."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.checks.boundaries import (
    SQLITE_ROWS_MAX,
    _db_state,
    _make_db,
    _prompt,
    notes_sqlite_map,
    result_cap_counts_bytes,
    sessions_filtered_before_limit,
)
from shadowcode_conformance.checks.owner_queue import _model_requests, _started, eof_cancels_queued_tasks
from shadowcode_conformance.fixture import default_fixture_path, load_project_factory
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.runner import run_one

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITE = REPO_ROOT / "conformance" / "shadowcode_conformance"


def stand_in_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def _run(fn, target: list[str], factory=stand_in_project, cwd: Path | None = None):
    load_checks()
    chk = next(c for c in CHECKS.values() if c.fn is fn)

    async def go():
        with anyio.fail_after(chk.timeout_seconds + 30):
            return await run_one(chk, target=target, cwd=cwd or Path.cwd(), repo_root=SUITE, project_factory=factory)

    records, _ = anyio.run(go)
    return records


@pytest.mark.req("SRV-25")
@pytest.mark.parametrize("size", [45_000, 45_001, 45_002, 1_000, 63_999])
def test_prompts_have_the_exact_byte_size_and_mostly_three_byte_characters(size: int) -> None:
    text = _prompt(size, "bulk 7")
    assert len(text.encode("utf-8")) == size
    assert text.startswith("conformance quick: bulk 7 ")
    assert len(text) < size / 2
    assert json.dumps(text, ensure_ascii=False) == f'"{text}"'  # nothing is escaped


@pytest.mark.req("SRV-13")
def test_edge_database_holds_one_row_past_the_bound_and_reads_back_the_same(tmp_path: Path) -> None:
    db = tmp_path / "data" / "edges.db"
    _make_db(db)
    state = _db_state(db)
    assert state[:4] == (0, 0, "wal", (SQLITE_ROWS_MAX + 1, (SQLITE_ROWS_MAX + 1) * (SQLITE_ROWS_MAX + 2) // 2))
    assert _db_state(db)[:4] == state[:4]
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    assert _db_state(db)[0] == 7


@pytest.mark.req("SRV-22")
def test_a_start_event_and_model_requests_are_found_by_job_id(tmp_path: Path) -> None:
    assert _started({"events": [{"kind": "task.queued"}, {"kind": "task.started"}]})
    assert not _started({"events": [{"kind": "task.queued"}, {"kind": "task.cancelled"}]})
    assert not _started({})
    log = tmp_path / "requests.jsonl"
    log.write_text('{"task_id": "a"}\n{"task_id": "b"}\nnot json\n{"task_id": "a"}\n', encoding="utf-8")
    assert _model_requests(log, "a") == 2 and _model_requests(log, "c") == 0
    assert _model_requests(tmp_path / "missing.jsonl", "a") == 0


@pytest.mark.req("SRV-08", "SRV-12", "SRV-13", "SRV-19", "SRV-22", "SRV-25")
@pytest.mark.parametrize(
    "fn", [sessions_filtered_before_limit, notes_sqlite_map, result_cap_counts_bytes, eof_cancels_queued_tasks]
)
@pytest.mark.parametrize("program", ["true", "false"])
def test_the_checks_fail_a_target_that_serves_no_mcp(fn, program: str) -> None:
    records = _run(fn, [program])
    assert records and all(not r.ok for r in records), [(r.name, r.detail) for r in records]
    assert all(r.detail for r in records)


FAULTS = {
    "shadowcode/engine/verbs/inspection.py": (
        "    if request.save:\n        state.history.save_map",
        "    if True:\n        state.history.save_map",
    ),
    "shadowcode/engine/memory.py": ("if expected_hash != current.hash:", "if expected_hash is None:"),
}
"""Two slips a developer could make: the map saved without being asked, a stale hash accepted."""


@pytest.mark.req("SRV-12", "SRV-13", "SRV-19")
@pytest.mark.slow
def test_notes_sqlite_map_passes_the_source_tree_and_catches_injected_faults(tmp_path: Path) -> None:
    factory = load_project_factory(default_fixture_path(SUITE))
    good = {r.name: r for r in _run(notes_sqlite_map, [sys.executable, "-m", "shadowcode"], factory, cwd=REPO_ROOT)}
    assert all(r.ok for r in good.values()), {n: r.detail for n, r in good.items()}
    assert len(good) == 4

    faulty = tmp_path / "faulty"
    shutil.copytree(REPO_ROOT / "shadowcode", faulty / "shadowcode", ignore=shutil.ignore_patterns("__pycache__"))
    for rel, (old, new) in FAULTS.items():
        path = faulty / rel
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, rel
        path.write_text(text.replace(old, new), encoding="utf-8")
    target = ["env", f"PYTHONPATH={faulty}", sys.executable, "-m", "shadowcode"]
    bad = {r.name: r for r in _run(notes_sqlite_map, target, factory, cwd=faulty)}
    assert not bad["boundaries:notes_sqlite_map"].ok
    assert not bad["boundaries:understand_saves_only_when_asked"].ok
    assert "saved a map although not asked" in bad["boundaries:understand_saves_only_when_asked"].detail
    assert not bad["boundaries:memory_stale_hash_refused"].ok
    assert "was not refused" in bad["boundaries:memory_stale_hash_refused"].detail
    assert bad["boundaries:sqlite_pragmas_and_row_bound"].ok, bad["boundaries:sqlite_pragmas_and_row_bound"].detail
