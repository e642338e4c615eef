"""The relay of ``mcp serve`` into a running engine keeps SRV-25 as an in-process server does.

A limit the engine enforces must still be explained on the relay's own stderr (the engine
keeps the closing lines per session and the relay fetches them), and a client that stops
reading stdout must still be dropped after the write deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from shadowcode.engine.relay_notices import RelayNotices
from shadowcode.limits import (
    RELAY_NOTICE_SESSIONS_MAX,
    RELAY_NOTICES_PER_SESSION_MAX,
    STDIO_FRAME_MAX_BYTES,
    STDIO_WRITE_DEADLINE_SECONDS,
)
from shadowcode.profile_paths import control_socket_for
from tests.support.engine import PY, cli_env, headless_engine

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="unix sockets and process groups")

_HANDSHAKE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _line(doc: dict[str, object]) -> bytes:
    return json.dumps(doc).encode("utf-8") + b"\n"


def _serve(home: Path, project: Path, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve"],
        env=cli_env(home),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,  # type: ignore[arg-type]
    )


def _python(code: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` with the test profile ``home``; bounded like every command here."""
    return subprocess.run(
        [PY, "-c", code, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
        env=cli_env(home),
    )


@pytest.mark.req("SRV-25")
def test_notices_keep_the_newest_sessions_and_lines_up_to_their_limits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    notices = RelayNotices()
    first, say_first = notices.open()
    for i in range(RELAY_NOTICES_PER_SESSION_MAX + 1):
        say_first(f"line {i}\n")
    opened = [notices.open()[0] for _ in range(RELAY_NOTICE_SESSIONS_MAX - 1)]

    assert notices.take(first) == [f"line {i}\n" for i in range(RELAY_NOTICES_PER_SESSION_MAX)]
    assert notices.take(first) == []  # taken once
    assert f"line {RELAY_NOTICES_PER_SESSION_MAX}" in capsys.readouterr().err  # still on the engine's stderr

    kept, _ = notices.open()  # fills the table again: RELAY_NOTICE_SESSIONS_MAX sessions
    one_more, _ = notices.open()  # one past: the oldest is forgotten
    assert notices.take(opened[0]) == [] and opened[0] not in notices._kept
    assert kept in notices._kept and one_more in notices._kept
    assert len(notices._kept) == RELAY_NOTICE_SESSIONS_MAX


@pytest.mark.req("SRV-25")
def test_a_frame_over_the_limit_is_explained_on_the_relays_stderr(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with headless_engine(home):
        proc = _serve(home, project, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_line(_HANDSHAKE))
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())  # bounded by the test timeout
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"' + b"x" * STDIO_FRAME_MAX_BYTES
        out, err = proc.communicate(body + b'"}}}\n', timeout=60)

    assert answer["id"] == 0 and answer["result"]["serverInfo"]["name"] == "shadowcode"
    assert proc.returncode == 0
    assert out == b""  # the long frame is never answered
    assert b"shadowcode: closing the connection: a frame is longer than" in err
    assert b"Traceback" not in err


@pytest.mark.req("SRV-25")
def test_a_client_that_stops_reading_is_dropped_after_the_write_deadline(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    read_end, write_end = os.pipe()  # never read: stdout fills up
    try:
        with headless_engine(home):
            proc = _serve(home, project, stdout=write_end)
            os.close(write_end)
            write_end = -1
            assert proc.stdin is not None
            started = time.monotonic()
            burst = b"".join(_line({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/list"}) for i in range(20))
            proc.stdin.write(_line(_HANDSHAKE))
            try:
                while proc.poll() is None and time.monotonic() - started < STDIO_WRITE_DEADLINE_SECONDS + 20:
                    proc.stdin.write(burst)
                    proc.stdin.flush()
                    time.sleep(0.5)  # 40 frames a second: under the frame rate
            except BrokenPipeError:
                pass
            code = proc.wait(timeout=30)
            elapsed = time.monotonic() - started
            assert proc.stderr is not None
            err = proc.stderr.read()
            proc.stderr.close()
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)

    assert code == 0
    assert elapsed < STDIO_WRITE_DEADLINE_SECONDS + 20
    assert b"closing the connection: a response write took longer than" in err


@pytest.mark.req("SRV-03", "ENG-03")
def test_the_engine_has_the_mcp_server_imported_before_its_first_attach(tmp_path: Path) -> None:
    """Importing the attach handler (as ``engine`` does before it serves) loads the MCP server.

    Left to the first ``mcp/attach``, those imports took 3.7 s on a 2-core machine: longer than
    the second Codex gives a server before its first model request, so a host's first session
    through a fresh engine offered none of our tools (issue 15).
    """
    code = (
        "import sys, shadowcode.mcp.server.attached; "
        "print(all(m in sys.modules for m in ('shadowcode.mcp.server.app', 'shadowcode.mcp.server.stdio', 'mcp')))"
    )
    done = _python(code, home=tmp_path)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.req("SRV-03")
def test_the_relay_path_loads_no_module_of_the_stdio_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an engine to relay into, ``mcp serve`` imports the relay, its early answers and nothing of the front.

    The front (``subprocess``, ``ctypes``, the discovery manifest) cost the relay path about
    14 ms of every start while it was imported only for one constant (issue 15).
    """
    home = tmp_path / "home"
    monkeypatch.setenv("SHADOWCODE_HOME", str(home))
    # Under a long tmp_path the control socket's path is in a per-user folder outside it
    # (socket_path_for), so the file standing in for the socket is removed here.
    socket_path = control_socket_for(None)
    assert socket_path is not None
    seems_running = Path(socket_path)
    seems_running.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    code = (
        "import sys, shadowcode.__main__ as entry, shadowcode.mcp.server.relay as relay\n"
        "from shadowcode.profile_paths import control_socket_for\n"
        "assert control_socket_for(None) == sys.argv[2]\n"
        "open(sys.argv[2], 'w').close()  # an engine seems to run\n"
        "relay.try_relay = lambda *args, **kwargs: 0  # and serves the session\n"
        "status = entry.attached_fast_path(['--workspace', sys.argv[1], 'mcp', 'serve'])\n"
        "print(status, sorted(m for m in sys.modules if m.startswith(('shadowcode.mcp.server.', 'subprocess'))))\n"
    )
    try:
        done = _python(code, str(tmp_path), str(seems_running), home=home)
    finally:
        seems_running.unlink(missing_ok=True)
    relay_path = ["discovery", "early_answers", "handover", "relay", "stdio_pipes"]
    assert done.stdout.strip() == f"0 {[f'shadowcode.mcp.server.{m}' for m in relay_path]}", done.stderr


@pytest.mark.req("SRV-03", "SRV-21")
def test_the_relay_answers_discovery_from_the_recording_and_the_engine_serves_the_rest(tmp_path: Path) -> None:
    """Handshake and listing as recorded, a tool call by the engine, and no answer of the relay's own ids leaks."""
    from shadowcode.mcp.server.discovery import load_manifest

    manifest = load_manifest()
    assert manifest is not None
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}}
    with headless_engine(home):
        proc = _serve(home, project, stdout=subprocess.PIPE)
        out, err = proc.communicate(b"".join(_line(m) for m in (_HANDSHAKE, initialized, listing, call)), timeout=60)

    assert proc.returncode == 0, err
    answers = {m["id"]: m for m in map(json.loads, out.splitlines())}
    assert sorted(answers) == [0, 1, 2]  # nothing else: the engine's answers to the relay's ids were dropped
    assert b"shadowcode-relay-" not in out
    revision, recorded = manifest.initialize(_HANDSHAKE["params"])  # type: ignore[misc]
    assert answers[0]["result"] == recorded["result"]
    assert answers[1]["result"] == manifest.after_handshake(revision, "tools/list", None)["result"]  # type: ignore[index]
    assert answers[2]["result"]["structuredContent"]["engine"]["mode"] == "attached"
    assert b"Traceback" not in err


@pytest.mark.req("SRV-03")
def test_the_relay_answers_discovery_before_the_engine_says_anything(tmp_path: Path) -> None:
    """An engine that takes the attach and then stays silent: the handshake and listing still come back at once.

    The engine receives every client line, the answered ones under the relay's own ids; its
    later answers to those ids are dropped, and from its first one on it answers everything.
    """
    import socket
    import sys
    import threading

    path = str(tmp_path / "engine.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(60)
    received: list[dict[str, object]] = []
    conn_box: list[socket.socket] = []

    def engine() -> None:
        conn, _ = listener.accept()
        conn_box.append(conn)
        with conn.makefile("rb") as reader:
            attach = json.loads(reader.readline())
            conn.sendall(_line({"id": attach["id"], "result": {"attached": True, "session": "s"}}))
            for raw in reader:
                received.append(json.loads(raw))

    thread = threading.Thread(target=engine, daemon=True)
    thread.start()
    code = (
        "import sys\n"
        "from shadowcode.mcp.server.discovery import load_manifest\n"
        "from shadowcode.mcp.server.relay import try_relay\n"
        "sys.exit(try_relay(sys.argv[1], sys.argv[2], allow_write=False, allow_approvals=False,"
        " manifest=load_manifest()))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, path, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path / "home"),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        proc.stdin.write(b"".join(_line(m) for m in (_HANDSHAKE, initialized, listing)))
        proc.stdin.flush()
        first, second = json.loads(proc.stdout.readline()), json.loads(proc.stdout.readline())
        assert (first["id"], second["id"]) == (0, 1)  # bounded by the test timeout; the engine said nothing
        assert len(second["result"]["tools"]) == 17

        deadline = time.monotonic() + 30
        while len(received) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [m.get("method") for m in received] == ["initialize", "notifications/initialized", "tools/list"]
        assert received[0]["id"] == "shadowcode-relay-0" and received[2]["id"] == "shadowcode-relay-1"

        engine_conn = conn_box[0]
        engine_conn.sendall(_line({"jsonrpc": "2.0", "id": "shadowcode-relay-0", "result": {"engine": True}}))
        engine_conn.sendall(_line({"jsonrpc": "2.0", "id": "shadowcode-relay-1", "result": {"engine": True}}))
        # A line after them: once the client has it, the relay has read (and dropped) both answers.
        log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
        engine_conn.sendall(_line(log))
        assert json.loads(proc.stdout.readline()) == log
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        proc.stdin.flush()
        while len(received) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received[3] == {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}  # the engine's now
        engine_conn.sendall(_line({"jsonrpc": "2.0", "id": 2, "result": {"engine": True}}))
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"engine": True}}
        listener.close()  # so the relay's request for closing notices is refused at once
        engine_conn.shutdown(socket.SHUT_RDWR)  # the engine ends the session
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert proc.stdout.read() == b""  # the answers to the relay's own ids never reached the client
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass
        listener.close()
        thread.join(10)
        for conn in conn_box:
            conn.close()
