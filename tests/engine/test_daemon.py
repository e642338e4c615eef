"""``shadowcode engine`` as a real process (engine/daemon.py): one per profile, status and stop,
restarts, its sockets and the dispatch of the verb table over them.

Covers ENG-03, ENG-08, SRV-21, SRV-22, SRV-23, SRV-24.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from shadowcode.engine import open_headless
from shadowcode.engine.api import (
    Access,
    Caller,
    CheckpointQuery,
    Empty,
    EngineApi,
    GoalCreate,
    MemoryAppend,
    MemoryRef,
    Rollback,
    RollbackResult,
    SessionQuery,
)
from shadowcode.limits import CONTROL_FRAME_MAX_BYTES, OWNER_SOCKETS_MAX
from shadowcode.profile import Profile
from shadowcode.store import Store
from tests.support.engine import (
    HeadlessEngine,
    cli,
    group_gone,
    headless_engine,
    scripted_model,
    sleeper_argv,
    wait_for_sync,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

T = TypeVar("T")

DONE_TURN = {"content": "finished"}
SLOW_TURN = {"content": "late", "delay_seconds": 60}
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


def caller(project: Path | None = None, *, owned: bool = False, confined: bool = False) -> dict[str, Any]:
    """A caller as it travels on the socket (see shadowcode.engine.remote.caller_to_wire)."""
    return {"project": None if project is None else str(project), "owned": owned, "confined": confined}


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


@contextmanager
def store_of(profile: Profile) -> Iterator[Store]:
    """The profile's store, opened beside the engine (SQLite: any process of the profile may read it)."""
    with closing(Store(profile.db_path)) as store:
        yield store


def task_status(profile: Profile, task_id: str) -> str:
    with store_of(profile) as store:
        task = store.tasks.get(task_id)
    assert task is not None
    return str(task.status)


def _owner_closed(profile: Profile, owner_id: str) -> bool:
    with store_of(profile) as store:
        row = store.owners.get(owner_id)
    return row is not None and row.closed_at is not None


def through_engine(profile: Profile, work: Callable[[EngineApi], Awaitable[T]]) -> T:
    """Run ``work`` against the profile's running headless engine over its socket (a RemoteEngine)."""

    async def main() -> T:
        with anyio.fail_after(REPLY_SECONDS * 3):
            async with open_headless(profile) as api:
                assert api is not None, "no headless engine answers"
                return await work(api)

    return anyio.run(main)


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


@pytest.mark.req("ENG-03")
def test_a_second_engine_for_the_same_profile_is_refused_with_exit_2(home: Path) -> None:
    with headless_engine(home) as engine:
        second = cli(home, "engine", timeout=20)
        assert second.returncode == 2
        assert "already runs" in second.stderr and str(engine.proc.pid) in second.stderr
        assert second.stdout == ""
        assert engine.proc.poll() is None  # the first one is untouched


@pytest.mark.req("ENG-03")
def test_engine_status_and_stop(home: Path, profile: Profile) -> None:
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


@pytest.mark.req("ENG-03")
def test_state_survives_an_engine_restart(home: Path, profile: Profile, project: Path, tmp_path: Path) -> None:
    (project / "a.txt").write_text("before\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "by the task\n"}}
    command = {"name": "run_command", "arguments": {"argv": ["true"]}}
    turns = [{"tool_calls": [write]}, {"tool_calls": [command]}, DONE_TURN]
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": turns}])
    trust(home, project, "workspace")
    mine = Caller(project=project, access=Access(allow_write=True))
    with headless_engine(home) as first:
        job = detach(home, project, "edit a.txt")
        approval = pending_approval(home, job)

        async def remember(api: EngineApi) -> str:
            goal = await api.goal_create(GoalCreate("ship it"), mine)
            await api.memory_append(MemoryAppend("remember the milk"), mine)
            return goal.id

        goal_id = through_engine(profile, remember)
        assert cli(home, "engine", "stop").returncode == 0
        assert first.proc.wait(timeout=20) == 0

    assert (project / "a.txt").read_text(encoding="utf-8") == "by the task\n"
    with headless_engine(home):

        async def recall(api: EngineApi) -> tuple[Any, ...]:
            return (
                await api.sessions(SessionQuery(), mine),
                await api.goal_list(Empty(), mine),
                await api.memory_read(MemoryRef(), mine),
                await api.checkpoints(CheckpointQuery(job), mine),
            )

        sessions, goals, note, checkpoints = through_engine(profile, recall)
        with store_of(profile) as store:
            recorded = store.approvals.get(approval["id"])
            task = store.tasks.get(job)
            events = [e.kind for e in store.tasks.events(job, limit=1000)]
        assert [s.id for s in sessions] == [job] and sessions[0].status == "cancelled"
        assert task is not None and task.error == "the engine stopped"
        assert [g.id for g in goals] == [goal_id]
        assert "remember the milk" in note.content
        assert [c.paths for c in checkpoints] == [("a.txt",)]
        assert recorded is not None and recorded.action["argv"] == ["true"]
        assert recorded.status == "expired"  # the stop cancelled the task and closed its approval
        assert "file.write" in events and "task.cancelled" in events
        rolled = through_engine(profile, lambda api: api.rollback(Rollback(job, confirm=True), mine))
    assert rolled == RollbackResult(job, ["a.txt"], [])
    assert (project / "a.txt").read_text(encoding="utf-8") == "before\n"


@pytest.mark.req("ENG-03", "ENG-08")
def test_tasks_of_a_killed_engine_show_as_interrupted_after_a_restart(
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


# -- the verb table over the socket (ENG-03) ---------------------------------------------------


@pytest.mark.req("ENG-03")
def test_a_bad_request_gets_a_typed_error_and_the_connection_stays_usable(home: Path, profile: Profile) -> None:
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        malformed = conn.call("task/create", request={"prompt": "go", "mode": "deploy"}, caller=caller())
        assert malformed["error"]["code"] == "protocol" and "malformed engine message" in malformed["error"]["message"]
        bad_caller = conn.call("engine/status", request={}, caller={"project": 5})
        assert bad_caller["error"]["code"] == "protocol"
        unknown = conn.call("engine/explode")
        assert unknown["error"]["code"] == "tool" and "unknown engine method" in unknown["error"]["message"]
        unowned = conn.call("job/list", request={}, caller=caller(owned=True, confined=True))
        assert unowned["error"]["code"] == "protocol" and "opened no owner" in unowned["error"]["message"]
        not_found = conn.call("job/get", request={"job_id": "task_0000000000000000"}, caller=caller())
        assert not_found["error"] == {
            "code": "not_found",
            "message": "no job 'task_0000000000000000'",
            "fields": {"task_id": "task_0000000000000000"},
        }
        conn.send_raw(b'{"id": 99, "method": 5, "params": []}\n')
        assert conn.read() == {"id": 99, "error": {"code": "protocol", "message": "a request needs a method and "
                                                   "object params", "fields": {}}}  # fmt: skip
        assert "result" in conn.call("engine/status")
        no_owner = conn.call("owner/close")  # an owner/close ends the connection, answered first
        assert no_owner["error"]["code"] == "protocol" and "opened no owner" in no_owner["error"]["message"]
        attach = Conn(profile.control_socket_path)
        opened.append(attach)
        no_project = attach.call("mcp/attach", allow_write=True)  # validated as the door's request type
        assert no_project["error"]["code"] == "protocol" and "project" in no_project["error"]["message"]
        notices = Conn(profile.control_socket_path)
        opened.append(notices)
        assert notices.call("mcp/notices", session="0" * 16)["result"] == {"notices": []}  # an unknown session: none


# -- ownership sockets (SRV-21, SRV-22, SRV-24) --------------------------------------------------


@pytest.mark.req("SRV-24")
def test_a_ninth_owner_socket_is_refused_while_eight_are_open_and_control_still_answers(
    home: Path, profile: Profile, project: Path
) -> None:
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        for _ in range(OWNER_SOCKETS_MAX):
            conn = Conn(profile.control_socket_path)
            opened.append(conn)
            assert "result" in conn.call("owner/open", kind="relay", caller=caller(project))  # up to the limit
        ninth = Conn(profile.control_socket_path)
        opened.append(ninth)
        refused = ninth.call("owner/open", kind="relay", caller=caller(project))
        assert refused["error"]["code"] == "policy" and str(OWNER_SOCKETS_MAX) in refused["error"]["message"]
        control = Conn(profile.control_socket_path)
        opened.append(control)
        assert control.call("engine/status")["result"]["owners"] == OWNER_SOCKETS_MAX
        opened[0].close()
        wait_for_sync(
            lambda: control.call("engine/status")["result"]["owners"] < OWNER_SOCKETS_MAX,
            what="the closed owner to be released",
        )
        assert "result" in ninth.call("owner/open", kind="relay", caller=caller(project))


@pytest.mark.req("SRV-24", "SRV-21")
@pytest.mark.parametrize(
    "bad_frame",
    [b"{this is not json\n", b"[1, 2, 3]\n", b"x" * (CONTROL_FRAME_MAX_BYTES + 1) + b"\n"],
    ids=["not-json", "not-an-object", "one-byte-past-the-limit"],
)
def test_a_malformed_frame_on_an_ownership_socket_closes_it_and_cancels_its_jobs(
    home: Path, profile: Profile, project: Path, tmp_path: Path, bad_frame: bytes
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [SLOW_TURN]}])
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        owner = conn.call("owner/open", kind="relay", caller=caller(project))["result"]["owner"]
        owned = caller(project, owned=True, confined=True)
        job = conn.call("task/create", request={"prompt": "think"}, caller=owned)["result"]["job_id"]
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
        wait_for_sync(lambda: _owner_closed(profile, owner), what="the owner's close to be recorded")
        with store_of(profile) as store:
            row = store.owners.get(owner)
            task = store.tasks.get(job)
    assert row is not None and str(row.close_reason).startswith("protocol error")
    assert task is not None and task.error == f"its owner closed ({row.close_reason})"


@pytest.mark.req("SRV-24")
def test_a_frame_exactly_at_the_limit_is_read_and_answered(home: Path, profile: Profile) -> None:
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


@pytest.mark.req("SRV-24")
def test_a_rejected_submission_leaves_the_ownership_socket_usable(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [DONE_TURN]}])
    trust(home, project, "workspace")
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        conn.call("owner/open", kind="relay", caller=caller(project))
        owned = caller(project, owned=True, confined=True)
        empty = conn.call("task/create", request={"prompt": "  "}, caller=owned)
        assert empty["error"]["code"] == "tool"
        no_write = conn.call("task/create", request={"prompt": "go", "level": "workspace"}, caller=owned)
        assert no_write["error"]["code"] == "policy"
        unknown = conn.call("job/get", request={"job_id": "task_0000000000000000"}, caller=owned)
        assert unknown["error"]["code"] == "not_found"
        assert unknown["error"]["fields"] == {"task_id": "task_0000000000000000"}
        job = conn.call("task/create", request={"prompt": "go"}, caller=owned)["result"]["job_id"]
        listed = conn.call("job/list", request={}, caller=owned)["result"]
        assert [j["id"] for j in listed] == [job]
        wait_for_sync(lambda: task_status(profile, job) == "done", what="the job")


@pytest.mark.req("ENG-08", "SRV-21")
def test_a_detached_job_is_owned_by_no_connection_and_an_owner_close_leaves_it_running(
    home: Path, profile: Profile, project: Path, tmp_path: Path
) -> None:
    scripted_model(profile, tmp_path / "s.json", [{"match": "", "turns": [SLOW_TURN]}])
    trust(home, project, "workspace")
    with headless_engine(home), connections(profile.control_socket_path) as opened:
        detached = detach(home, project, "detached work", level="read_only")
        conn = Conn(profile.control_socket_path)
        opened.append(conn)
        conn.call("owner/open", kind="relay", caller=caller(project))
        owned_caller = caller(project, owned=True, confined=True)
        owned = conn.call("task/create", request={"prompt": "owned"}, caller=owned_caller)["result"]["job_id"]
        assert [j["id"] for j in conn.call("job/list", request={}, caller=owned_caller)["result"]] == [owned]
        closed = conn.call("owner/close")["result"]
        assert closed["cancelled"] == [owned] and closed["reason"] == "closed by its connection"
        assert task_status(profile, owned) == "cancelled"
        assert task_status(profile, detached) in ("queued", "running")
        with store_of(profile) as store:
            task = store.tasks.get(detached)
        assert task is not None and task.owner is None


# -- background processes through the headless engine (SRV-23) ---------------------------------


@pytest.mark.req("SRV-23")
def test_a_background_process_survives_its_tasks_cancellation_and_stops_with_bg_stop(
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
        cancelled = control.call("job/cancel", request={"job_id": job}, caller=caller(project))["result"]
        assert cancelled == {"job_id": job, "status": "cancelled", "cancelled": True}
        with store_of(profile) as store:
            task = store.tasks.get(job)
        assert task is not None and task.error == "cancelled by the command line"

        listed = json.loads(cli(home, "--json", "bg", "list").stdout)["processes"]
        assert [p["pid"] for p in listed] == [pid] and listed[0]["running"] is True
        assert not group_gone(pid)
        stopped = cli(home, "bg", "stop", listed[0]["id"])
        assert stopped.returncode == 0, stopped.stderr
        assert group_gone(pid)
        assert json.loads(cli(home, "--json", "bg", "list").stdout)["processes"] == []
        unknown = cli(home, "bg", "stop", listed[0]["id"])
        assert unknown.returncode == 1 and "no background process" in unknown.stderr
