"""Fixtures of the store tests: a fresh profile database file, and a task to hang rows on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.store import Store
from shadowcode.store.tasks import TaskRecord

PROJECT = "/projects/alpha"
OTHER = "/projects/beta"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database file lives (reopen it to check that rows survive, ENG-03)."""
    return tmp_path / "shadowcode.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    """An open store over a new database file, with the projects PROJECT and OTHER recorded."""
    opened = Store(db_path)
    opened.projects.ensure(PROJECT)
    opened.projects.ensure(OTHER)
    try:
        yield opened
    finally:
        opened.close()


NewTask = Callable[..., TaskRecord]


@pytest.fixture
def new_task(store: Store) -> NewTask:
    """Make a queued build task: ``new_task(project=PROJECT, owner="own_a", engine_id="eng_a", prompt="do it")``."""

    def make(
        project: str = PROJECT, *, owner: str | None = "own_a", engine_id: str = "eng_a", prompt: str = "do it"
    ) -> TaskRecord:
        return store.tasks.create(
            project=project,
            owner=owner,
            mode=TaskMode.BUILD,
            prompt=prompt,
            permission_level=PermissionLevel.WORKSPACE,
            model="scripted",
            engine_id=engine_id,
        )

    return make
