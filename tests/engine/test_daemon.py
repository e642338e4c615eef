"""``shadowcode engine`` as a real process: one per profile, status and stop, restarts, its sockets.

Covers ENG-03, ENG-08, SRV-21, SRV-22, SRV-23, SRV-24.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine import Engine
from shadowcode.limits import CONTROL_FRAME_MAX_BYTES, OWNER_SOCKETS_MAX
from shadowcode.profile import Profile
from tests.support.engine import (
    PY,
    HeadlessEngine,
    cli,
    cli_env,
    group_gone,
    headless_engine,
    scripted_model,
    sleeper_argv,
    wait_for_sync,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

DONE_TURN = {"content": "finished"}
REPLY_SECONDS = 10.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def profile(home: Path) -> Profile:
    return Profile(name="default", root=home / "profiles" / "default")


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder.resolve()


def trust(home: Path, project: Path, level: str) -> None:
    done = cli(home, "trust", "--level", level, str(project))
    assert done.returncode == 0, done.stderr


class Conn:
    """One raw connection to the engine's socket, speaking its newline-delimited JSON."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(REPLY_SECONDS)
        self.sock.connect(str(path))
        self.buffer = b""
        self.ids = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> dict[str, Any] | None:
        """The next frame, or None when the engine closed the connection."""
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)  # type: ignore[no-any-return]

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        self.send_raw(json.dumps({"id": self.ids, "method": method, "params": params}).encode() + b"\n")
        reply = self.read()
        assert reply is not None and reply["id"] == self.ids, reply
        return reply

    def close(self) -> None:
        self.sock.close()


@contextmanager
def connections(path: Path) -> Iterator[list[Conn]]:
    opened: list[Conn] = []
    try:
        yield opened
    finally:
        for conn in opened:
            conn.close()


def task_status(profile: Profile, task_id: str) -> str:
    with Engine.open(profile) as engine:
        row = engine.store.row("SELECT status FROM tasks WHERE id = ?", (task_id,))
    assert row is not None
    return str(row["status"])


def pending_approval(home: Path, task_id: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        listed = json.loads(cli(home, "--json", "approvals").stdout)["approvals"]
        return next((a for a in listed if a["task_id"] == task_id), None)

    return wait_for_sync(find, timeout=15, what=f"an approval of {task_id}")  # type: ignore[no-any-return]


def detach(home: Path, project: Path, prompt: str, level: str = "workspace") -> str:
    done = cli(home, "--json", "run", "--detach", "--level", level, prompt, workspace=project)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["job_id"])


# -- one engine per profile, status, stop (ENG-03) --------------------------------------------


def test_a_second_engine_for_the_same_profile_is_refused_with_exit_2_eng03(home: Path) -> None:
    with headless_engine(home) as engine:
        second = cli(home, "engine", timeout=20)
        assert second.returncode == 2
        assert "already runs" in second.stderr and str(engine.proc.pid) in second.stderr
        assert second.stdout == ""
        assert engine.proc.poll() is None  # the first one is untouched


def test_engine_status_and_stop_eng03(home: Path, profile: Profile) -> None:
    absent = cli(home, "engine", "status")
    assert absent.returncode == 3 and "no headless engine" in absent.stdout
    refused = cli(home, "engine", "stop")
    assert refused.returncode == 2 and "shadowcode engine" in refused.stderr
    with headless_engine(home) as engine:
        shown = cli(home, "--json", "engine", "status")
        assert shown.returncode == 0, shown.stderr
        status = json.loads(shown.stdout)
        assert status["pid"] == engine.proc.pid and status["mode"] == "headless"
        assert status["owners"] == 0 and status["queued_jobs"] == [] and status["running"] is True
        stopped = cli(home, "engine", "stop")
        assert stopped.returncode == 0 and "stopping" in stopped.stdout
        assert engine.proc.wait(timeout=20) == 0
        assert "engine stopped" in engine.stderr()
    assert not profile.control_socket_path.exists()
    assert cli(home, "engine", "status").returncode == 3


# -- restarts (ENG-03) -------------------------------------------------------------------------


def test_state_survives_an_engine_restart_eng03(home: Path, profile: Profile, project: Path, tmp_path: Path) -> None:
    (project / "a.txt").write_text("before\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "by the task\n"}}
    command = {"name": "run_command", "arguments": {"argv": ["true"]}}
    turns = [{"tool_calls": [write]}, {"tool_calls": [command]}, DONE_TURN]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    trust(home, project, "workspace")
    with headless_engine(home) as first:
        job = detach(home, project, "edit a.txt")
        approval = pending_approval(home, job)
        with Engine.open(profile) as engine:
            goal = engine.goals.create(project, "ship it")
            engine.memory.append(project, "remember the milk")
        assert cli(home, "engine", "stop").returncode == 0
        assert first.proc.wait(timeout=20) == 0

    assert (project / "a.txt").read_text(encoding="utf-8") == "by the task\n"
    with headless_engine(home):
        with Engine.open(profile) as engine:
            sessions = engine.history.sessions(project)
            goals = engine.goals.list(project)
            note = engine.memory.read(project)
            checkpoints = engine.history.checkpoints(project, job)
            recorded = engine.store.approvals.get(approval["id"])
            events = [e.kind for e in engine.store.tasks.events(job, limit=1000)]
        assert [s.id for s in sessions] == [job] and sessions[0].status == "cancelled"
        assert [g.id for g in goals] == [goal.id]
        assert "remember the milk" in note.content
        assert [c.paths for c in checkpoints] == [("a.txt",)]
        assert recorded is not None and recorded.action["argv"] == ["true"]
        assert recorded.status == "expired"  # the stop cancelled the task and closed its approval
        assert "file.write" in events and "task.cancelled" in events
        rolled = _rollback_through_the_engine(home, project, job)
    assert rolled.returncode == 0, rolled.stderr
    assert (project / "a.txt").read_text(encoding="utf-8") == "before\n"


def _rollback_through_the_engine(home: Path, project: Path, job: str) -> Any:
    """Roll back with the restarted engine over its control socket (RemoteCore), in a child process."""
    code = (
        "import anyio, sys\n"
        "from shadowcode.engine import Access, Engine\n"
        "from shadowcode.engine.remote import connect_remote\n"
        "from shadowcode.profile import Profile\n"
        "async def main():\n"
        "    profile = Profile.select()\n"
        "    remote = await connect_remote(profile)\n"
        "    assert remote is not None\n"
        "    with Engine.open(profile) as engine:\n"
        "        project = engine.project(sys.argv[1])\n"
        "    try:\n"
        "        print(await remote.rollback(sys.argv[2], project=project, access=Access(True), confirm=True))\n"
        "    finally:\n"
        "        await remote.aclose()\n"
        "anyio.run(main)\n"
    )
    return subprocess.run(
        [PY, "-c", code, str(project), job],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=30,
        encoding="utf-8",
    )


def test_tasks_of_a_killed_engine_show_as_interrupted_after_a_restart_eng03(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    command = {"name": "run_command", "arguments": {"argv": ["true"]}}
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [{"tool_calls": [command]}, DONE_TURN]}])
    trust(home, project, "workspace")
    engine = HeadlessEngine(home)
    try:
        engine.wait_ready()
        job = detach(home, project, "wait for me")
        pending_approval(home, job)
        assert task_status(profile, job) == "waiting"
        engine.kill()
    finally:
        engine.close()
    with headless_engine(home):  # the lock died with the killed engine: a new one starts
        assert task_status(profile, job) == "interrupted"
        shown = json.loads(cli(home, "--json", "jobs", job).stdout)
    assert shown["job"]["status"] == "interrupted" and "stopped" in shown["job"]["error"]
    assert shown["events"][-1]["kind"] == "task.interrupted"


# -- ownership sockets (SRV-21, SRV-22, SRV-24) --------------------------------------------------


def test_a_ninth_owner_socket_is_refused_while_eight_are_open_and_control_still_answers_srv24(
    home: Path, profile: Profile, project: Path
) -> None:
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        for _ in range(OWNER_SOCKETS_MAX):
            conn = Conn(profile.control_socket_path)
            opened.append(conn)
            assert "result" in conn.call("owner/open", kind="relay", project=str(project))  # up to the limit
        ninth = Conn(profile.control_socket_path)
        opened.append(ninth)
        refused = ninth.call("owner/open", kind="relay", project=str(project))
        assert refused["error"]["type"] == "PolicyError" and str(OWNER_SOCKETS_MAX) in refused["error"]["message"]
        control = Conn(profile.control_socket_path)
        opened.append(control)
        assert control.call("engine/status")["result"]["owners"] == OWNER_SOCKETS_MAX
        opened[0].close()
        wait_for_sync(
            lambda: control.call("engine/status")["result"]["owners"] < OWNER_SOCKETS_MAX,
            what="the closed owner to be released",
        )
        assert "result" in ninth.call("owner/open", kind="relay", project=str(project))


@pytest.mark.parametrize(
    "bad_frame",
    [b"{this is not json\n", b"[1, 2, 3]\n", b"x" * (CONTROL_FRAME_MAX_BYTES + 1) + b"\n"],
    ids=["not-json", "not-an-object", "one-byte-past-the-limit"],
)
def test_a_malformed_frame_on_an_ownership_socket_closes_it_and_cancels_its_jobs_srv24_srv21(
    home: Path, profile: Profile, project: Path, tmp_path: Path, bad_frame: bytes
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [{"content": "late", "delay_seconds": 60}]}])
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        owner = conn.call("owner/open", kind="relay", project=str(project))["result"]["owner"]
        job = conn.call("task/create", project=str(project), prompt="think", owned=True)["result"]["job_id"]
        wait_for_sync(lambda: task_status(profile, job) == "running", what="the job to run")
        try:
            conn.send_raw(bad_frame)
        except BrokenPipeError:
            pass  # the engine may close while the oversized frame is still being written
        try:
            assert conn.read() is None  # the engine closed the ownership socket
        except ConnectionResetError:
            pass
        wait_for_sync(lambda: task_status(profile, job) == "cancelled", what="the owner's job to be cancelled")
        with Engine.open(profile) as engine:
            row = engine.store.row("SELECT close_reason FROM owners WHERE id = ?", (owner,))
    assert row is not None and str(row["close_reason"]).startswith("protocol error")


def test_a_frame_exactly_at_the_limit_is_read_and_answered_srv24(home: Path, profile: Profile) -> None:
    head = b'{"id": 1, "method": "engine/status", "params": {}, "pad": "'
    frame = head + b"x" * (CONTROL_FRAME_MAX_BYTES - len(head) - 2) + b'"}'
    assert len(frame) == CONTROL_FRAME_MAX_BYTES
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        conn.send_raw(frame + b"\n")
        reply = conn.read()
        assert reply is not None and reply["id"] == 1 and "result" in reply
        assert "result" in conn.call("engine/status")  # and the connection stays open


def test_a_rejected_submission_leaves_the_ownership_socket_usable_srv24(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [DONE_TURN]}])
    trust(home, project, "workspace")
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        conn.call("owner/open", kind="relay", project=str(project))
        empty = conn.call("task/create", project=str(project), prompt="  ", owned=True)
        assert empty["error"]["type"] == "ToolError"
        no_write = conn.call("task/create", project=str(project), prompt="go", level="workspace", owned=True)
        assert no_write["error"]["type"] == "PolicyError"
        unknown = conn.call("job/get", id="task_0000000000000000", project=str(project), owned=True)
        assert unknown["error"]["type"] == "NotFound"
        job = conn.call("task/create", project=str(project), prompt="go", owned=True)["result"]["job_id"]
        listed = conn.call("job/list", owned=True)["result"]
        assert [j["id"] for j in listed] == [job]
        wait_for_sync(lambda: task_status(profile, job) == "done", what="the job")


def test_a_detached_job_is_owned_by_no_connection_and_an_owner_close_leaves_it_running_eng08_srv21(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [{"content": "late", "delay_seconds": 60}]}])
    trust(home, project, "workspace")
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        detached = detach(home, project, "detached work", level="read_only")
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        conn.call("owner/open", kind="relay", project=str(project))
        owned = conn.call("task/create", project=str(project), prompt="owned", owned=True)["result"]["job_id"]
        assert conn.call("job/list", owned=True)["result"][0]["id"] == owned  # only its own job
        closed = conn.call("owner/close")["result"]
        assert closed["cancelled"] == [owned]
        assert task_status(profile, owned) == "cancelled"
        assert task_status(profile, detached) in ("queued", "running")
        with Engine.open(profile) as engine:
            row = engine.store.row("SELECT owner FROM tasks WHERE id = ?", (detached,))
        assert row is not None and row["owner"] is None


# -- background processes through the headless engine (SRV-23) ---------------------------------


def test_a_background_process_survives_its_tasks_cancellation_and_stops_with_bg_stop_srv23(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bg.pid"
    start = {"name": "background_start", "arguments": {"argv": sleeper_argv(pidfile)}}
    park = {"name": "run_command", "arguments": {"argv": ["true"]}}
    turns = [{"tool_calls": [start]}, {"tool_calls": [park]}, DONE_TURN]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    trust(home, project, "elevated")
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        job = detach(home, project, "serve it", level="elevated")
        approval = pending_approval(home, job)
        assert approval["kind"] == "background" and approval["action"]["argv"] == sleeper_argv(pidfile)
        assert cli(home, "approve", approval["id"]).returncode == 0
        pid = int(
            wait_for_sync(lambda: pidfile.exists() and pidfile.read_text(encoding="utf-8"), what="the background pid")
        )
        pending_approval(home, job)  # the task went on to its next step
        control = Conn(profile.control_socket_path)
        opened.append(control)
        cancelled = control.call("job/cancel", id=job, project=str(project))["result"]
        assert cancelled["status"] == "cancelled"

        listed = json.loads(cli(home, "--json", "bg", "list").stdout)["processes"]
        assert [p["pid"] for p in listed] == [pid] and listed[0]["running"] is True
        assert not group_gone(pid)
        stopped = cli(home, "bg", "stop", listed[0]["id"])
        assert stopped.returncode == 0, stopped.stderr
        assert group_gone(pid)
        assert json.loads(cli(home, "--json", "bg", "list").stdout)["processes"] == []
        unknown = cli(home, "bg", "stop", listed[0]["id"])
        assert unknown.returncode == 1 and "no background process" in unknown.stderr
