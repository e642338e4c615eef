"""Fixtures of the engine tests: a scripted model with a request log, the asyncio backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowcode.profile import Profile
from tests.support.engine import scripted_model


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    """Where the ``model`` fixture's scripted model logs each request (one JSON line each)."""
    return tmp_path / "requests.jsonl"


@pytest.fixture
def model(profile: Profile, tmp_path: Path, request_log: Path) -> Callable[[list[dict[str, Any]]], None]:
    """Make a scripted model holding the given script entries the profile's only model (it logs its requests)."""

    def configure(tasks: list[dict[str, Any]]) -> None:
        scripted_model(profile, tmp_path / "script.json", tasks, request_log=request_log)

    return configure
