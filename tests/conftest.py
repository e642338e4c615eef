"""Shared fixtures: an isolated profile root, the profile, its in-process engine, and a project folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.profile import Profile


@pytest.fixture(scope="session", autouse=True)
def _child_pytest_temproot(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point the pytest runs that tests start (a Build task's test command, the sample project's own
    suite) at a temporary root of their own: at exit each deletes old numbered runs under its root,
    which must not be the one this run and earlier runs keep their folders in."""
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(tmp_path_factory.mktemp("child-temproot"))


@pytest.fixture(scope="session", autouse=True)
def _private_shiv_root() -> Iterator[None]:
    """Unpack the packaged archive, wherever a test runs it, into a folder removed when the run
    ends, not into the user's ``~/.shiv``: each build is a new archive, and its copies (about
    64 MiB an interpreter) would stay there after every run. A test that sets ``SHIV_ROOT``
    itself still wins."""
    root = tempfile.mkdtemp(prefix="shadowcode-tests-shiv-")
    os.environ["SHIV_ROOT"] = root
    try:
        yield
    finally:
        os.environ.pop("SHIV_ROOT", None)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh SHADOWCODE_HOME for this test."""
    root = tmp_path / "home"
    monkeypatch.setenv("SHADOWCODE_HOME", str(root))
    return root


@pytest.fixture
def profile(home: Path) -> Profile:
    """The default profile of ``home``, its folders made."""
    selected = Profile.select()
    selected.ensure()
    return selected


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """An empty project folder."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def engine(profile: Profile) -> Iterator[LocalEngine]:
    """The profile's in-process engine, not running yet: its parts are ``engine.state``; run it with
    ``async with engine.running()`` (or use the ``api`` fixture)."""
    opened = LocalEngine(profile)
    try:
        yield opened
    finally:
        opened.state.store.close()


@pytest.fixture
async def api(engine: LocalEngine) -> AsyncIterator[LocalEngine]:
    """``engine``, running: a temporary engine that stops, with everything it started, after the test."""
    async with engine.running():
        yield engine


@pytest.fixture
def state(engine: LocalEngine) -> EngineState:
    """The parts of ``engine`` (store, records, approvals, ...), for tests of the engine's own modules."""
    return engine.state
