"""The projects repository: trust records and saved maps (store/projects.py)."""

from __future__ import annotations

import pytest

from shadowcode.enums import PermissionLevel
from shadowcode.errors import StoreError
from shadowcode.store import Store
from shadowcode.store.projects import ProjectRecord, SavedMap

from .conftest import OTHER, PROJECT

pytestmark = pytest.mark.req("ENG-02", "ENG-03")


def test_an_unknown_project_is_none_and_a_recorded_one_starts_untrusted(store: Store) -> None:
    assert store.projects.get("/projects/unknown") is None
    record = store.projects.get(PROJECT)
    assert isinstance(record, ProjectRecord)
    assert (record.path, record.trusted, record.level, record.trusted_at) == (
        PROJECT,
        False,
        PermissionLevel.READ_ONLY,
        None,
    )


def test_ensure_is_idempotent(store: Store) -> None:
    before = store.projects.get(PROJECT)
    store.projects.ensure(PROJECT)
    assert store.projects.get(PROJECT) == before


def test_trust_records_a_new_project_at_its_level_and_untrust_resets_it(store: Store) -> None:
    store.projects.trust("/projects/new", PermissionLevel.ELEVATED)
    trusted = store.projects.get("/projects/new")
    assert trusted is not None and trusted.trusted is True and trusted.level is PermissionLevel.ELEVATED
    assert trusted.trusted_at is not None
    assert trusted.as_dict()["level"] == "elevated" and type(trusted.as_dict()["level"]) is str
    store.projects.untrust("/projects/new")
    untrusted = store.projects.get("/projects/new")
    assert untrusted is not None and untrusted.trusted is False and untrusted.level is PermissionLevel.READ_ONLY
    store.projects.untrust("/projects/never")
    assert store.projects.get("/projects/never") is None


def test_trusted_lists_only_trusted_projects_by_path(store: Store) -> None:
    store.projects.trust(OTHER, PermissionLevel.WORKSPACE)
    store.projects.trust(PROJECT, PermissionLevel.READ_ONLY)
    assert [(p.path, p.level) for p in store.projects.trusted()] == [
        (PROJECT, PermissionLevel.READ_ONLY),
        (OTHER, PermissionLevel.WORKSPACE),
    ]


def test_an_unknown_level_is_refused_before_anything_is_written(store: Store) -> None:
    with pytest.raises(ValueError):
        store.projects.trust(PROJECT, "root")  # type: ignore[arg-type]
    assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]


@pytest.mark.req("SRV-19")
def test_the_saved_map_round_trips_and_is_replaced(store: Store) -> None:
    assert store.projects.saved_map(PROJECT) is None
    store.projects.save_map(PROJECT, "map v1", 10)
    store.projects.save_map(PROJECT, "map v2", 20)
    assert store.projects.saved_map(PROJECT) == SavedMap(map="map v2", saved_at=20)
    assert store.projects.saved_map(OTHER) is None


def test_a_map_of_an_unrecorded_project_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError):
        store.projects.save_map("/projects/unknown", "map", 1)


def test_a_trust_change_by_another_connection_is_seen_at_once(store: Store, db_path: object) -> None:
    assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]
    other = Store(db_path)  # type: ignore[arg-type]
    try:
        other.projects.trust(PROJECT, PermissionLevel.WORKSPACE)
        seen = store.projects.get(PROJECT)
        assert seen is not None and (seen.trusted, seen.level) == (True, PermissionLevel.WORKSPACE)
        other.projects.untrust(PROJECT)
        assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]
    finally:
        other.close()


def test_a_trust_change_on_the_same_connection_is_seen_at_once(store: Store) -> None:
    assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]
    store.projects.trust(PROJECT, PermissionLevel.ELEVATED)
    assert store.projects.get(PROJECT).level is PermissionLevel.ELEVATED  # type: ignore[union-attr]
    assert store.projects.get(OTHER).trusted is False  # type: ignore[union-attr]


def test_a_row_read_inside_a_rolled_back_transaction_is_not_answered_afterwards(store: Store) -> None:
    assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]
    with pytest.raises(RuntimeError), store.atomic():
        store.projects.trust(PROJECT, PermissionLevel.WORKSPACE)
        assert store.projects.get(PROJECT).trusted is True  # type: ignore[union-attr]
        raise RuntimeError("roll back")
    assert store.projects.get(PROJECT).trusted is False  # type: ignore[union-attr]


def test_an_unchanged_database_answers_the_same_row_without_reading_it_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = store.projects.get(PROJECT)

    def no_read(sql: str, params: object = ()) -> None:
        raise AssertionError(f"read again: {sql}")

    monkeypatch.setattr(store, "row", no_read)
    assert store.projects.get(PROJECT) is first
    monkeypatch.undo()
    store.projects.get(OTHER)  # another path is read, then kept instead
    monkeypatch.setattr(store, "row", no_read)
    with pytest.raises(AssertionError, match="read again"):
        store.projects.get(PROJECT)
