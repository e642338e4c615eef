"""Helpers for the model provider tests: the fixture server process and request log reading."""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
SERVER = REPO / "conformance/shadowcode_conformance/fixtures" / "openai_server.py"
SCRIPTS = REPO / "conformance/shadowcode_conformance/fixtures" / "scripts"
READY_WAIT_SECONDS = 15.0


def read_log(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a request log (none when the file does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class FixtureServer:
    """A running ``conformance/shadowcode_conformance/fixtures/openai_server.py``."""

    url: str
    log_path: Path
    proc: subprocess.Popen[bytes]

    def requests(self) -> list[dict[str, Any]]:
        """The server's request log lines."""
        return read_log(self.log_path)


@contextmanager
def running_server(tmp_path: Path, *args: str) -> Iterator[FixtureServer]:
    """Start the fixture server on a free loopback port; always stopped (TERM, then KILL) on exit."""
    log_path = tmp_path / f"server-{time.monotonic_ns()}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--log", str(log_path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            if not selector.select(READY_WAIT_SECONDS):
                raise TimeoutError("the fixture server did not start in time")
        line = proc.stdout.readline().decode("utf-8").strip()
        if not line.startswith("READY "):
            err = proc.stderr.read().decode("utf-8", "replace") if proc.poll() is not None and proc.stderr else ""
            raise RuntimeError(f"unexpected first line from the fixture server: {line!r} {err}")
        yield FixtureServer(url=line.split(" ", 1)[1], log_path=log_path, proc=proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
