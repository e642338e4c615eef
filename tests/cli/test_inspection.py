"""``shadowcode understand``, ``doctor``, ``review`` and ``sqlite`` as a person uses them (cli/inspection.py).

Covers SRV-13, SRV-19, SRV-20: the same rules and limits as the MCP tools.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.engine import cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses unix sockets and /proc")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    with closing(sqlite3.connect(folder / "app.db")) as conn:
        conn.execute("CREATE TABLE items (id INTEGER, name TEXT)")
        conn.executemany("INSERT INTO items VALUES (?, ?)", [(1, "one"), (2, "two")])
        conn.commit()
    return folder.resolve()


def rows_of(path: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT * FROM items ORDER BY id").fetchall()


@pytest.mark.req("SRV-13")
def test_sqlite_lists_tables_runs_one_bound_read_and_refuses_two_statements_or_a_write(
    home: Path, project: Path
) -> None:
    tables = cli(home, "sqlite", "app.db", workspace=project)
    assert tables.returncode == 0 and "table items(id, name)" in tables.stdout
    found = cli(home, "--json", "sqlite", "app.db", "SELECT name FROM items WHERE id = ?", "--param", "2",
                workspace=project)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["rows"] == [["two"]]
    text = cli(home, "sqlite", "app.db", "SELECT id, name FROM items ORDER BY id", workspace=project).stdout
    assert "id | name" in text and "2 | two" in text and "(2 rows)" in text

    for sql in ("SELECT 1; SELECT 2", "DELETE FROM items", "INSERT INTO items VALUES (3, 'three')"):
        refused = cli(home, "sqlite", "app.db", sql, workspace=project)
        assert refused.returncode == 1 and refused.stdout == "" and refused.stderr.startswith("shadowcode: ")
    assert rows_of(project / "app.db") == [(1, "one"), (2, "two")]
    no_path = cli(home, "sqlite", workspace=project)
    assert no_path.returncode == 2 and "PATH" in no_path.stderr
    outside = cli(home, "sqlite", "../elsewhere.db", workspace=project)
    assert outside.returncode == 1 and outside.stdout == ""


@pytest.mark.req("SRV-19", "SRV-20")
def test_understand_doctor_and_review_answer_and_saving_the_map_needs_trust(home: Path, project: Path) -> None:
    mapped = cli(home, "understand", workspace=project)
    assert mapped.returncode == 0 and "pyproject.toml" in mapped.stdout
    refused = cli(home, "understand", "--save", workspace=project)
    assert refused.returncode == 3 and "shadowcode trust" in refused.stderr and refused.stdout == ""
    assert cli(home, "trust", "--level", "workspace", str(project)).returncode == 0
    saved = cli(home, "--json", "understand", "--save", workspace=project)
    assert saved.returncode == 0 and json.loads(saved.stdout)["saved"] is True

    doctor = cli(home, "--json", "doctor", workspace=project)
    doc = json.loads(doctor.stdout)
    assert doctor.returncode == (0 if doc["ok"] else 1)
    assert {"trust", "store"} <= {c["name"] for c in doc["checks"]}
    assert "trust: trusted at level workspace" in cli(home, "doctor", workspace=project).stdout

    review = cli(home, "--json", "review", workspace=project)
    assert review.returncode == 0 and json.loads(review.stdout)["git"] is False
    assert cli(home, "review", workspace=project).stdout.strip() != ""
