"""A hostile project hangs nothing: FIFOs, a socket and a device link against every inspection tool.

Regression of issue 16: a FIFO named README.md, pyproject.toml, data.db or pytest.ini made
shadow_understand, shadow_doctor, shadow_sqlite and shadow_test hang (shadow_test blocked the
event loop itself), stdin EOF did not end the server, and with a headless engine one project
stalled the whole engine. Each call must now answer (a result or a tool error) well within its
deadline, the server must keep answering meanwhile, and EOF must end it promptly; with a headless
engine, the engine's status and another project's session must answer throughout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine import cli, headless_engine
from tests.support.process import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.req("SRV-19", "SRV-13", "SRV-17", "SRV-20", "SRV-25", "SRV-07")]

ANSWER_SECONDS = 20.0
"""Far below the 45 s operation deadline: a refused FIFO answers at once, not at the deadline."""

HOSTILE_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("shadow_understand", {}),
    ("shadow_doctor", {}),
    ("shadow_sqlite", {"action": "tables", "path": "data.db"}),
    ("shadow_sqlite", {"action": "query", "path": "data.db", "sql": "select 1"}),
    ("shadow_test", {}),
    ("shadow_review", {}),
)


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Path]:
    """A trusted-looking project whose well-known files are FIFOs, plus a socket and a device link."""
    root = tmp_path / "hostile"
    root.mkdir()
    for name in ("README.md", "pyproject.toml", "pytest.ini", "data.db", "package.json", "Makefile"):
        os.mkfifo(root / name)
    (root / "zero.txt").symlink_to("/dev/zero")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(root / "sock"))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hello')\n", encoding="utf-8")
    try:
        yield root
    finally:
        listener.close()


def _call(server: ServerProcess, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                 "params": {"name": name, "arguments": arguments}})  # fmt: skip
    started = time.monotonic()
    reply = server.read_until_response(request_id, timeout=ANSWER_SECONDS)
    took = time.monotonic() - started
    assert "result" in reply, f"{name}: {reply}"
    assert took < ANSWER_SECONDS, f"{name} took {took:.1f} s"
    return dict(reply["result"])


def _serve(home: Path, project: Path) -> ServerProcess:
    cli(home, "trust", "--level", "workspace", str(project))
    server = ServerProcess(project, home, "--allow-write", "--allow-approvals")
    server.initialize()
    return server


def test_every_inspection_tool_answers_and_eof_ends_the_server(hostile: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = _serve(home, hostile)
    try:
        for number, (name, arguments) in enumerate(HOSTILE_CALLS, start=1):
            result = _call(server, number, name, arguments)
            status = _call(server, 100 + number, "shadow_status", {})
            assert status.get("isError") is not True, status
            if name == "shadow_test":
                assert result.get("isError") is True, "a FIFO pytest.ini is no test configuration"
        started = time.monotonic()
        server.proc.stdin.close()  # type: ignore[union-attr]
        assert server.wait_exit(timeout=15) == 0
        assert time.monotonic() - started < 15
    finally:
        server.close()


def test_a_hostile_project_stalls_neither_the_engine_nor_another_project(hostile: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    calm = tmp_path / "calm"
    calm.mkdir()
    (calm / "README.md").write_text("# calm\n", encoding="utf-8")
    with headless_engine(home):
        bad = _serve(home, hostile)
        good = _serve(home, calm)
        try:
            for number, (name, arguments) in enumerate(HOSTILE_CALLS, start=1):
                bad.send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}})  # fmt: skip
                understood = _call(good, 200 + number, "shadow_understand", {})
                assert understood.get("isError") is not True, understood
                status = cli(home, "--json", "engine", "status", timeout=ANSWER_SECONDS)
                assert json.loads(status.stdout)["running"] is True
                reply = bad.read_until_response(number, timeout=ANSWER_SECONDS)
                assert "result" in reply, f"{name}: {reply}"
        finally:
            for server in (bad, good):
                server.close()


def test_no_process_is_left_behind(hostile: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = _serve(home, hostile)
    try:
        _call(server, 1, "shadow_review", {})
        _call(server, 2, "shadow_sqlite", {"action": "query", "path": "data.db", "sql": "select 1"})
        pid = server.proc.pid
        assert server.child_pids() == []  # every answered call left no child running
    finally:
        server.close()
    leftovers = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, encoding="utf-8", check=False)
    assert leftovers.stdout.strip() == ""
