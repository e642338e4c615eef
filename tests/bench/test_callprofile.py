"""The call-path profiler (issue 15): its profile survives `mcp serve`'s `os._exit`; its output has no machine path."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_SECONDS = 120


@pytest.fixture
def bench_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Makes the repository's ``bench`` package importable."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    yield


def test_profiled_paths_are_shown_relative_to_the_repository_or_the_interpreter(bench_modules: None) -> None:
    from bench.callprofile import _shown

    assert _shown(str(REPO_ROOT / "shadowcode" / "mcp" / "server" / "app.py")) == "shadowcode/mcp/server/app.py"
    stdlib = Path(sys.base_prefix) / "lib" / "python3" / "asyncio" / "events.py"
    assert _shown(str(stdlib)) == "lib/python3/asyncio/events.py"
    assert _shown("~") == ""
    assert _shown("<frozen runpy>") == "<frozen runpy>"


@pytest.mark.slow
def test_a_server_that_ends_with_os_exit_still_writes_its_profile(tmp_path: Path) -> None:
    out = tmp_path / "profile.pstats"
    env = {
        **os.environ,
        "SHADOWCODE_HOME": str(tmp_path / "home"),
        "SHADOWCODE_STDIO_FRONT": "0",  # the full server in this process: it ends with os._exit(0)
        "TMPDIR": str(tmp_path),
    }
    argv = [sys.executable, "-m", "bench.callprofile", "--run-profiled", str(out), "--"]
    argv += ["--workspace", str(tmp_path), "mcp", "serve"]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT_SECONDS
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    assert done.stdout == b""  # stdout stays JSON-RPC only (nothing was asked)
    # Nothing sent SIGUSR1, so the profile holds no function, but it was written on the way out.
    assert marshal.loads(out.read_bytes()) == {}
