"""The stdio front of ``mcp serve``: discovery before the full server is ready, then a byte pipe.

The front runs in its own process with a stand-in child (a small script that says ``ready``
only when the test lets it, echoes what it gets and logs every line), so each phase can be
held still and looked at; the last tests run the real ``mcp serve`` behind it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadowcode.limits import FRONT_ENGINE_START_SECONDS, FRONT_STOP_GRACE_SECONDS
from shadowcode.mcp.server.discovery import load_manifest
from shadowcode.mcp.server.front import serve_front
from tests.support.process import ANSWER_SECONDS, INIT, ServerProcess, alive, wait_for

REPO = Path(__file__).resolve().parents[3]

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    mode, logs = sys.argv[1], sys.argv[2]
    with open(os.path.join(logs, "pid"), "w", encoding="utf-8") as fh:
        fh.write(str(os.getpid()))
    if mode == "refuse":
        sys.stderr.write("shadowcode: error: --workspace: not a directory\\n")
        sys.exit(2)
    if mode == "never":
        while True:
            time.sleep(1)
    if mode == "unannounced":  # writes without saying ready first, then never does
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/message"}) + "\\n")
        sys.stdout.flush()
        while True:
            time.sleep(1)
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(logs, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)
    if mode == "fail":
        sys.stderr.write("shadowcode: error: cannot open the store: disk on fire\\n")
        sys.exit(1)
    fd = int(os.environ.pop("SHADOWCODE_FRONT_READY_FD"))
    os.write(fd, b"ready\\n")
    os.close(fd)
    with open(os.path.join(logs, "received"), "a", encoding="utf-8") as log:
        for line in sys.stdin:
            log.write(line)
            log.flush()
            message = json.loads(line)
            if "id" in message:
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"child": message["method"]}}
                sys.stdout.write(json.dumps(answer) + "\\n")
                sys.stdout.flush()
    """
)

RUN_FRONT = (
    "import sys, time\n"
    "from shadowcode.mcp.server import front\n"
    "from shadowcode.mcp.server.discovery import load_manifest\n"
    "late = float(sys.argv[2])\n"
    "if late:  # the front's ready watcher runs late, as on a loaded machine\n"
    "    watch = front._Front._watch_ready\n"
    "    front._Front._watch_ready = lambda self: (time.sleep(late), watch(self))[1]\n"
    "sys.exit(front.serve_front([sys.executable, *sys.argv[3:]], load_manifest(), start_seconds=float(sys.argv[1])))\n"
)


class Front:
    """A front process over the stand-in child; lines are read with a deadline."""

    def __init__(
        self, tmp: Path, mode: str, *, start_seconds: float = FRONT_ENGINE_START_SECONDS, late_watch: float = 0.0
    ) -> None:
        self.logs = tmp / "logs"
        self.logs.mkdir()
        child = tmp / "child.py"
        child.write_text(CHILD, encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUN_FRONT, str(start_seconds), str(late_watch), str(child), mode, str(self.logs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
        )
        self.server = ServerProcess.__new__(ServerProcess)  # reuse its line reader on our pipes
        self.server.proc = self.proc
        self.server._buffer = b""
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]

    def send(self, message: dict[str, Any]) -> None:
        self.server.send(message)

    def answer(self, request_id: object) -> dict[str, Any]:
        return self.server.read_until_response(request_id)  # type: ignore[arg-type]

    def let_go(self) -> None:
        (self.logs / "go").write_text("", encoding="utf-8")

    def child_pid(self) -> int:
        return int(
            wait_for(lambda: (self.logs / "pid").exists() and (self.logs / "pid").read_text(encoding="utf-8") or None)
        )

    def received(self) -> list[dict[str, Any]]:
        path = self.logs / "received"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [json.loads(line) for line in lines]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(ANSWER_SECONDS)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def make_front(tmp_path: Path) -> Iterator[Any]:
    """``make_front(mode="wait", start_seconds=..., late_watch=...)``: a front over the stand-in child, closed after."""
    opened: list[Front] = []

    def make(mode: str = "wait", **options: float) -> Front:
        where = tmp_path / f"front-{len(opened)}"
        where.mkdir()
        opened.append(Front(where, mode, **options))
        return opened[-1]

    try:
        yield make
    finally:
        for one in opened:
            one.close()


MANIFEST = load_manifest()
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_the_manifest_is_shipped_beside_the_front() -> None:
    assert MANIFEST is not None
    assert set(MANIFEST._handshake) == {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
    assert set(MANIFEST._modern) == {"2026-07-28"}


@pytest.mark.req("SRV-03")
def test_discovery_is_answered_while_the_server_starts_and_its_own_answers_are_dropped(make_front: Any) -> None:
    front = make_front()
    front.send(INIT)
    initialized = front.answer(0)
    assert initialized["result"]["protocolVersion"] == "2025-11-25"
    front.send(INITIALIZED)
    front.send(LIST)
    tools = front.answer(2)["result"]["tools"]
    assert len(tools) == 17
    assert front.received() == []  # all of that came from the front: the child is not ready yet
    front.send(CALL)
    front.let_go()
    assert front.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {"child": "tools/call"}}
    got = wait_for(lambda: len(front.received()) == 4 and front.received())
    assert [m.get("method") for m in got] == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    assert str(got[0]["id"]).startswith("shadowcode-front-") and str(got[2]["id"]).startswith("shadowcode-front-")
    assert got[0]["params"] == INIT["params"] and got[3] == CALL
    front.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    assert front.answer(4)["result"] == {"child": "tools/list"}  # once ready, everything is the child's
    front.proc.stdin.close()  # type: ignore[union-attr]
    assert front.proc.wait(ANSWER_SECONDS) == 0
    assert front.proc.stdout.read() == b""  # type: ignore[union-attr]  (no dropped answer leaked)


@pytest.mark.req("SRV-03")
def test_a_client_that_read_the_servers_answer_is_answered_by_the_server_from_then_on(make_front: Any) -> None:
    """The child's answers wait until the front has read its ready word, however late its watcher runs."""
    front = make_front(late_watch=1.0)
    front.send(INIT)
    assert front.answer(0)["result"]["protocolVersion"] == "2025-11-25"
    front.send(INITIALIZED)
    front.send(CALL)
    front.let_go()
    assert front.answer(3)["result"] == {"child": "tools/call"}
    front.send(LIST)
    assert front.answer(2)["result"] == {"child": "tools/list"}


@pytest.mark.req("SRV-03")
def test_output_of_a_server_that_never_said_ready_is_held_for_the_grace_period_then_passed_on(
    make_front: Any,
) -> None:
    """``FRONT_STOP_GRACE_SECONDS`` bounds the hold: nothing is lost and the front never hangs on it."""
    front = make_front("unannounced", start_seconds=60)
    front.send(INIT)
    assert front.answer(0)["result"]["protocolVersion"] == "2025-11-25"
    with pytest.raises(TimeoutError):  # held: well inside the grace period nothing comes
        front.server.read_line(timeout=FRONT_STOP_GRACE_SECONDS / 2)
    held = json.loads(front.server.read_line(timeout=FRONT_STOP_GRACE_SECONDS + ANSWER_SECONDS))
    assert held == {"jsonrpc": "2.0", "method": "notifications/message"}


@pytest.mark.req("SRV-03")
def test_a_request_in_another_shape_waits_for_the_server(make_front: Any) -> None:
    front = make_front()
    unusual = {**INIT, "params": {**INIT["params"], "protocolVersion": "2099-01-01"}}
    front.send(unusual)
    front.send(INITIALIZED)
    front.send(LIST)
    with pytest.raises(TimeoutError):  # nothing comes before the child is ready
        front.server.read_line(timeout=0.5)
    front.let_go()
    assert front.answer(0)["result"] == {"child": "initialize"}
    assert front.answer(2)["result"] == {"child": "tools/list"}


@pytest.mark.req("SRV-03")
def test_a_listing_carrying_only_a_progress_token_is_answered_from_the_recording(make_front: Any) -> None:
    """Codex 0.171 sends ``tools/list`` with ``{"_meta": {"progressToken": 0}}``; it must not wait for the server."""
    front = make_front()
    codex_init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-06-18"}}
    front.send(codex_init)
    assert front.answer(0)["result"]["protocolVersion"] == "2025-06-18"
    front.send(INITIALIZED)
    front.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": 0}}})
    assert len(front.answer(1)["result"]["tools"]) == 17
    front.send({"jsonrpc": "2.0", "id": 2, "method": "prompts/list", "params": {"_meta": {"progressToken": "p"}}})
    assert "prompts" in front.answer(2)["result"]
    assert front.received() == []


@pytest.mark.parametrize(
    "params",
    [
        {"_meta": {"progressToken": True}},
        {"_meta": {"progressToken": 1.5}},
        {"_meta": {"progressToken": 0, "other": 1}},
        {"_meta": {}},
        {"_meta": {"progressToken": 0}, "cursor": "c"},
        {"cursor": "c"},
    ],
)
def test_a_listing_with_any_other_parameters_is_left_to_the_server(params: dict[str, Any]) -> None:
    assert MANIFEST is not None
    assert MANIFEST.after_handshake("2025-06-18", "tools/list", params) is None
    assert MANIFEST.after_handshake("2025-06-18", "tools/list", {"_meta": {"progressToken": 7}}) is not None


@pytest.mark.req("SRV-03")
def test_modern_discovery_is_answered_from_the_recording(make_front: Any) -> None:
    front = make_front()
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    front.send({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta}})
    assert front.answer("d")["result"]["supportedVersions"] == ["2026-07-28"]
    front.send({"jsonrpc": "2.0", "id": "t", "method": "tools/list", "params": {"_meta": meta}})
    assert len(front.answer("t")["result"]["tools"]) == 17
    assert front.received() == []


@pytest.mark.req("SRV-07")
def test_a_server_that_fails_to_start_gets_tool_errors_and_discovery_still_answers(make_front: Any) -> None:
    front = make_front("fail")
    front.send(INIT)
    front.answer(0)
    front.send(INITIALIZED)
    front.send(CALL)
    front.let_go()
    refused = front.answer(3)
    assert refused["result"]["isError"] is True
    assert "cannot open the store: disk on fire" in refused["result"]["content"][0]["text"]
    front.send({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "shadow://project"}})
    assert "disk on fire" in front.answer(5)["error"]["message"]
    front.send(LIST)
    assert len(front.answer(2)["result"]["tools"]) == 17  # discovery still works
    front.proc.stdin.close()  # type: ignore[union-attr]
    assert front.proc.wait(ANSWER_SECONDS) == 0
    stderr = front.proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "disk on fire" in stderr and "the engine did not start" in stderr


@pytest.mark.req("SRV-01")
def test_a_refused_command_line_keeps_its_status_and_message(make_front: Any) -> None:
    front = make_front("refuse")
    assert front.proc.wait(ANSWER_SECONDS) == 2
    assert front.proc.stdout.read() == b""  # type: ignore[union-attr]
    assert "not a directory" in front.proc.stderr.read().decode()  # type: ignore[union-attr]


@pytest.mark.req("SRV-07")
def test_a_server_not_ready_past_the_start_deadline_is_stopped_and_requests_are_refused(make_front: Any) -> None:
    front = make_front("never", start_seconds=1.0)
    front.send(INIT)
    front.answer(0)
    pid = front.child_pid()
    front.send(INITIALIZED)
    front.send(CALL)
    refused = front.answer(3)  # after the one-second deadline
    assert "not ready within 1 seconds" in refused["result"]["content"][0]["text"]
    wait_for(lambda: not alive(pid))


@pytest.mark.req("SRV-07")
def test_a_server_ready_within_the_start_deadline_serves(make_front: Any) -> None:
    front = make_front("wait", start_seconds=30.0)
    front.send(INIT)
    front.answer(0)
    front.send(CALL)
    front.let_go()
    assert front.answer(3)["result"] == {"child": "tools/call"}


@pytest.mark.req("SRV-21")
def test_stdin_closed_while_the_server_starts_ends_both_cleanly(make_front: Any) -> None:
    front = make_front()
    pid = front.child_pid()
    front.send(INIT)
    front.answer(0)
    front.proc.stdin.close()  # type: ignore[union-attr]
    front.let_go()
    assert front.proc.wait(ANSWER_SECONDS) == 0
    wait_for(lambda: not alive(pid))


@pytest.mark.req("SRV-21")
def test_sigkill_of_the_front_while_the_server_starts_leaves_no_server(make_front: Any) -> None:
    front = make_front()
    pid = front.child_pid()
    front.send(INIT)
    front.answer(0)
    front.proc.send_signal(signal.SIGKILL)
    front.proc.wait(ANSWER_SECONDS)
    wait_for(lambda: not alive(pid))


@pytest.mark.req("SRV-21")
def test_sigterm_of_the_front_is_passed_to_the_server(make_front: Any) -> None:
    front = make_front()
    front.let_go()
    pid = front.child_pid()
    front.send(INIT)
    front.answer(0)
    front.proc.send_signal(signal.SIGTERM)
    assert front.proc.wait(ANSWER_SECONDS) == 0
    assert not alive(pid)


# --- the real server behind the front -----------------------------------------------------


@pytest.mark.req("SRV-03", "SRV-07")
def test_the_real_server_behind_the_front_serves_and_leaves_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    server = ServerProcess(project, tmp_path / "home", front=True)
    try:
        assert server.initialize()["result"]["serverInfo"]["name"] == "shadowcode"
        (child,) = wait_for(server.child_pids)  # the full server runs behind the front
        server.send({**CALL, "id": 7})
        status = server.read_until_response(7)
        assert status["result"]["structuredContent"]["project"]["path"] == str(project.resolve())
        server.proc.stdin.close()  # type: ignore[union-attr]
        assert server.wait_exit() == 0
        assert not alive(child)
    finally:
        server.close()


@pytest.mark.req("SRV-03")
@pytest.mark.timeout(600)
def test_the_recorded_answers_are_what_the_server_answers() -> None:
    done = subprocess.run(
        [sys.executable, "ci/discovery_manifest.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.req("SRV-25", "SRV-01")
def test_a_client_closing_its_end_of_stdout_ends_the_front_and_the_server(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(CHILD, encoding="utf-8")
    logs = tmp_path / "logs"
    logs.mkdir()
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_FRONT, "60", "0", str(child), "wait", str(logs)],
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    os.close(write_end)
    try:
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        with os.fdopen(read_end, "rb") as answers:
            assert b'"protocolVersion"' in answers.readline()
            pid = int(wait_for(lambda: (logs / "pid").exists() and (logs / "pid").read_text(encoding="utf-8") or None))
        assert proc.wait(ANSWER_SECONDS) == 0  # the child never said ready: the front noticed by itself
        assert b"stdout failed" in proc.stderr.read()  # type: ignore[union-attr]
        wait_for(lambda: not alive(pid))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(ANSWER_SECONDS)
        for stream in (proc.stdin, proc.stderr):
            if stream is not None:
                stream.close()


def test_the_server_starts_before_the_recording_is_read_and_is_stopped_when_it_cannot_be(tmp_path: Path) -> None:
    # issue 32: the front starts its child first (the longer way to the first tool result),
    # then reads the recorded answers; without them the child is stopped and reaped, nothing
    # was read from stdin, and the caller serves without the front.
    pid_file = tmp_path / "pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    seen: list[int] = []

    def unreadable() -> None:
        wait_for(lambda: pid_file.is_file() and pid_file.read_text(encoding="utf-8") != "", ANSWER_SECONDS)
        seen.append(int(pid_file.read_text(encoding="utf-8")))  # the child runs while it is read
        return None

    began = time.monotonic()
    assert serve_front([sys.executable, "-c", child], unreadable) is None

    assert time.monotonic() - began < ANSWER_SECONDS + FRONT_STOP_GRACE_SECONDS
    assert seen and not alive(seen[0])
