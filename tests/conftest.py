"""Shared fixtures: an isolated profile root, an engine over it, and a project folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowcode.engine import Engine
from shadowcode.profile import Profile


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh SHADOWCODE_HOME for this test."""
    root = tmp_path / "home"
    monkeypatch.setenv("SHADOWCODE_HOME", str(root))
    return root


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """An empty project folder."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def engine(home: Path) -> Iterator[Engine]:
    """A temporary engine over the default profile of ``home``."""
    with Engine.open(Profile.select()) as opened:
        yield opened
