"""Fixtures shared by the model provider tests: a profile, script files, the fixture server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from provider_support import running_server

from shadowcode.profile import Profile


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def profile(tmp_path: Path) -> Profile:
    """A profile whose root is a fresh folder (not created yet)."""
    return Profile(name="test", root=tmp_path / "profile")


@pytest.fixture
def write_script(tmp_path: Path) -> Callable[..., Path]:
    """Write a model script (a dict) as YAML, or as JSON when ``name`` ends in ``.json``."""

    def _write(script: dict[str, Any], name: str = "script.yaml") -> Path:
        path = tmp_path / name
        text = json.dumps(script) if name.endswith(".json") else yaml.safe_dump(script, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def server(tmp_path: Path) -> Callable[..., Any]:
    """``with server("--script", path) as srv:`` starts a fixture server for this test."""

    def _start(*args: str) -> Any:
        return running_server(tmp_path, *args)

    return _start
