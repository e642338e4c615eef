"""The owners repository: engine instances and the owners they served (store/owners.py)."""

from __future__ import annotations

import pytest

from shadowcode.enums import EngineMode, TaskStatus
from shadowcode.store import Store
from shadowcode.store.owners import EngineRecord, OwnerRecord

from .conftest import PROJECT, NewTask

pytestmark = pytest.mark.req("ENG-03")


def test_an_engine_is_recorded_started_then_stopped(store: Store) -> None:
    assert store.owners.engine("eng_a") is None
    store.owners.engine_started("eng_a", 4242, EngineMode.HEADLESS)
    started = store.owners.engine("eng_a")
    assert isinstance(started, EngineRecord)
    assert (started.pid, started.mode, started.stopped_at) == (4242, EngineMode.HEADLESS, None)
    store.owners.engine_stopped("eng_a")
    assert store.owners.engine("eng_a").stopped_at is not None  # type: ignore[union-attr]


@pytest.mark.req("SRV-21", "SRV-22", "SRV-24")
def test_an_owner_row_records_its_jobs_and_why_it_closed(store: Store) -> None:
    store.owners.engine_started("eng_a", 1, EngineMode.TEMPORARY)
    assert store.owners.get("own_a") is None
    store.owners.opened("own_a", engine_id="eng_a", kind="stdio", project=PROJECT)
    store.owners.set_jobs("own_a", 3)
    opened = store.owners.get("own_a")
    assert isinstance(opened, OwnerRecord)
    assert (opened.kind, opened.project, opened.jobs, opened.closed_at, opened.close_reason) == (
        "stdio",
        PROJECT,
        3,
        None,
        None,
    )
    store.owners.closed("own_a", "EOF")
    closed = store.owners.get("own_a")
    assert closed is not None and closed.close_reason == "EOF" and closed.closed_at is not None


def test_engines_with_unfinished_tasks_leaves_out_engines_whose_tasks_finished(store: Store, new_task: NewTask) -> None:
    store.owners.engine_started("eng_a", 1, EngineMode.TEMPORARY)
    store.owners.engine_started("eng_b", 2, EngineMode.HEADLESS)
    store.owners.engine_started("eng_c", 3, EngineMode.HEADLESS)
    new_task(engine_id="eng_a")
    new_task(engine_id="eng_a")
    done = new_task(engine_id="eng_b")
    store.tasks.set_status(done.id, TaskStatus.DONE)
    assert [e.id for e in store.owners.engines_with_unfinished_tasks()] == ["eng_a"]
