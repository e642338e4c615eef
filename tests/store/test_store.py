"""The SQLite store: migrations and nested transactions (STYLE 18, 19)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.errors import StoreError
from shadowcode.store import Store
from shadowcode.store.migrations import applied, available, pending


def test_new_store_applies_every_migration_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.db")
    names = [r["name"] for r in store.rows("SELECT name FROM _migrations")]
    assert names == [n for n, _ in available()]
    store.close()
    reopened = Store(tmp_path / "a.db")
    assert applied(reopened._conn) == names  # noqa: SLF001
    assert pending(reopened._conn) == []  # noqa: SLF001
    reopened.close()


def test_store_uses_wal(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    assert store.row("PRAGMA journal_mode")["journal_mode"] == "wal"  # type: ignore[index]
    store.close()


def test_nested_atomic_rolls_back_only_the_inner_savepoint() -> None:
    store = Store(":memory:")
    with store.atomic():
        store.execute("INSERT INTO projects (path, created_at) VALUES ('a', 1)")
        with pytest.raises(RuntimeError), store.atomic():
            store.execute("INSERT INTO projects (path, created_at) VALUES ('b', 1)")
            raise RuntimeError("inner")
    assert [r["path"] for r in store.rows("SELECT path FROM projects")] == ["a"]


def test_failed_statement_becomes_store_error() -> None:
    store = Store(":memory:")
    with pytest.raises(StoreError):
        store.execute("INSERT INTO nowhere VALUES (1)")


@pytest.mark.req("SRV-19")
def test_pending_migrations_reads_the_schema_state_without_changing_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    assert store.pending_migrations() == []
    last = available()[-1][0]
    store.execute("DELETE FROM _migrations WHERE name = ?", (last,))
    assert store.pending_migrations() == [last]
    assert store.pending_migrations() == [last]
    store.close()
    with pytest.raises(StoreError):
        store.pending_migrations()


REPOSITORIES = {
    "projects": ("ProjectRepository", {"projects", "project_maps"}),
    "tasks": ("TaskRepository", {"tasks", "events"}),
    "approvals": ("ApprovalRepository", {"approvals"}),
    "goals": ("GoalRepository", {"goals", "goal_progress"}),
    "memory": ("MemoryRepository", {"memory"}),
    "checkpoints": ("CheckpointRepository", {"checkpoints", "changes", "blobs"}),
    "owners": ("OwnerRepository", {"engines", "owners"}),
    "mcp_servers": ("McpServerRepository", {"mcp_definitions", "mcp_grants", "mcp_catalogs"}),
    "plugins": ("PluginRepository", {"plugins"}),
}


@pytest.mark.req("ENG-03")
def test_every_table_has_one_repository_on_the_store() -> None:
    store = Store(":memory:")
    for attribute, (cls, _) in REPOSITORIES.items():
        repository = getattr(store, attribute)
        assert type(repository).__name__ == cls
        assert type(repository).__module__ == f"shadowcode.store.{attribute}"
    tables = {
        r["name"]
        for r in store.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not r["name"].startswith(("sqlite_", "_"))
    }
    owned = [t for _, group in REPOSITORIES.values() for t in group]
    assert sorted(owned) == sorted(tables)
