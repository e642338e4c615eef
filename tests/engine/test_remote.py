"""The engine API over the headless engine's socket (engine/remote.py): the same verbs answer the
same as in-process, owned calls travel on the owner's socket, and an owner's socket closing cancels
its jobs with the reason recorded.

Covers ENG-03, SRV-16, SRV-21, SRV-22, SRV-29.
"""

from __future__ import annotations

import re
import select
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine import open_headless
from shadowcode.engine.api import (
    Access,
    ApprovalAnswer,
    ApprovalAsk,
    ApprovalDecision,
    Caller,
    Empty,
    EngineApi,
    GoalCreate,
    GoalRef,
    JobQuery,
    JobRef,
    MemoryAppend,
    MemoryRef,
    ProjectTrust,
    TaskRequest,
)
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.remote import RemoteEngine, RemoteOwner
from shadowcode.engine.wire import to_json
from shadowcode.enums import EngineMode, PermissionLevel, TaskStatus
from shadowcode.errors import NotFound, PolicyError, ShadowcodeError
from tests.support.engine import PY, HeadlessEngine, cli_env, headless_engine, scripted_model
from tests.support.jobs import PARK_TURN, SLOW_TURN, WRITE, cli_caller, owner_caller, wait_job

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="unix sockets and /proc"),
]

SCRIPT = [{"match": "park", "turns": [PARK_TURN, SLOW_TURN]}, {"match": "", "turns": [SLOW_TURN]}]
_IDS = re.compile(r"\b(task|own|appr|goal|eng|cp|bg)_[0-9a-f]+\b")


@pytest.fixture
def headless(tmp_path: Path) -> Iterator[HeadlessEngine]:
    """A ``shadowcode engine`` process with its own home (not the ``home`` of the in-process engine)."""
    with headless_engine(tmp_path / "remote-home") as engine:
        scripted_model(engine.profile, tmp_path / "remote-script.json", SCRIPT)
        yield engine


@pytest.fixture
async def remote(headless: HeadlessEngine) -> AsyncIterator[RemoteEngine]:
    """The headless engine through its socket."""
    async with open_headless(headless.profile) as api:
        assert isinstance(api, RemoteEngine)
        yield api


def normalized(value: Any) -> Any:
    """``value`` as JSON with what differs between two engines blanked: ids, times, pids, event ids."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key.endswith("_at") or key in ("at", "pid"):
                out[key] = "<blank>"
            elif key in ("id", "next_cursor") and isinstance(item, int):
                out[key] = "<n>"
            else:
                out[key] = normalized(item)
        return out
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, str):
        return re.sub(r'"pid": \d+', '"pid": <blank>', _IDS.sub(r"\1_<id>", value))
    return value


async def outcome(call: Awaitable[Any]) -> Any:
    """What a call answered, normalized; an error as its class, message and fields."""
    try:
        return normalized(to_json(await call))
    except ShadowcodeError as exc:
        return {"error": type(exc).__name__, "message": normalized(exc.message), "fields": normalized(exc.fields)}


async def scenario(api: EngineApi, project: Path) -> dict[str, Any]:
    """A representative walk through the API; returns each answer, normalized, by step."""
    reader, writer = Caller(project=project), Caller(project=project, access=Access(allow_write=True))
    seen: dict[str, Any] = {}
    status = await outcome(api.status(Empty(), reader))
    seen["status"] = {k: v for k, v in status.items() if k not in ("profile_root", "engine_mode")}
    seen["trust"] = await outcome(api.project_trust(ProjectTrust(str(project), PermissionLevel.WORKSPACE)))
    seen["memory_refused"] = await outcome(api.memory_append(MemoryAppend("no"), reader))
    seen["memory_append"] = await outcome(api.memory_append(MemoryAppend("remember the milk"), writer))
    seen["memory_read"] = await outcome(api.memory_read(MemoryRef(), reader))
    goal = await api.goal_create(GoalCreate("ship it"), writer)
    seen["goal_get"] = await outcome(api.goal_get(GoalRef(goal.id), reader))
    seen["goal_missing"] = await outcome(api.goal_get(GoalRef("goal_000000000000"), reader))

    owner = await api.open_owner("stdio", reader)
    mine = owner_caller(project, owner)
    submitted = await api.task_submit(TaskRequest("park", level=PermissionLevel.WORKSPACE), mine)
    seen["task_submit"] = normalized(to_json(submitted))
    approval = (await wait_job(api, submitted.job_id, mine, pending_approval=True)).pending_approvals[0]
    approve = ApprovalDecision(approval.id, "approve")
    seen["approve_refused"] = await outcome(api.approval_resolve(approve, owner_caller(project, owner, Access(True))))
    seen["approval_resolve"] = await outcome(api.approval_resolve(approve, mine))

    async def second_model_call() -> None:
        while True:
            page = await api.job(JobQuery(submitted.job_id), mine)
            if [e.kind for e in page.events].count("model.request") == 2:
                return
            await anyio.sleep(0.02)

    with anyio.fail_after(30):
        await second_model_call()
    seen["jobs"] = await outcome(api.jobs(Empty(), mine))
    seen["job_cancel"] = await outcome(api.job_cancel(JobRef(submitted.job_id), mine))
    seen["job"] = await outcome(api.job(JobQuery(submitted.job_id), mine))
    seen["job_of_no_owner"] = await outcome(api.job(JobQuery(submitted.job_id), owner_caller(project, None)))
    seen["close_owner"] = await outcome(api.close_owner(owner, "done"))
    return seen


@pytest.mark.req("ENG-03")
async def test_the_same_verbs_answer_the_same_through_the_headless_engine_as_in_process(
    api: LocalEngine, remote: RemoteEngine, model: Any, project_dir: Path
) -> None:
    model(SCRIPT)
    here = await scenario(api, project_dir)
    there = await scenario(remote, project_dir)
    assert list(there) == list(here)
    for step in here:
        assert there[step] == here[step], step
    # The answers are real ones, not two identical failures.
    assert here["memory_refused"]["error"] == "PolicyError"
    assert here["goal_missing"] == {
        "error": "NotFound", "message": "no goal 'goal_<id>' in this project", "fields": {"goal_id": "goal_<id>"},
    }  # fmt: skip
    assert here["job"]["job"]["status"] == "cancelled" and here["job"]["job"]["error"] == "cancelled by its owner"
    assert here["approval_resolve"]["status"] == "approved"


@pytest.mark.req("ENG-03")
async def test_a_remote_error_arrives_as_the_same_class_with_its_fields(
    remote: RemoteEngine, project_dir: Path
) -> None:
    assert remote.mode is EngineMode.ATTACHED
    with pytest.raises(NotFound) as missing:
        await remote.goal_get(GoalRef("goal_000000000000"), Caller(project=project_dir))
    assert missing.value.fields == {"goal_id": "goal_000000000000"}
    with pytest.raises(PolicyError, match="--allow-write"):
        await remote.memory_append(MemoryAppend("no"), Caller(project=project_dir))
    with pytest.raises(NotFound) as unknown:
        await remote.job_cancel(JobRef("task_0000000000000000"), cli_caller())
    assert unknown.value.fields == {"task_id": "task_0000000000000000"}


@pytest.mark.req("SRV-22")
async def test_owned_calls_travel_on_the_owners_socket_and_others_on_the_control_socket(
    remote: RemoteEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = await remote.open_owner("stdio", Caller(project=project_dir))
    assert isinstance(owner, RemoteOwner) and owner.id.startswith("own_")
    channel_class = type(owner.channel)
    sent: list[tuple[object, str]] = []
    original = channel_class.call

    async def recording(self: Any, method: str, params: dict[str, Any], **kwargs: Any) -> Any:
        sent.append((self, method))
        return await original(self, method, params, **kwargs)

    monkeypatch.setattr(channel_class, "call", recording)
    job = await remote.task_submit(TaskRequest("slow"), owner_caller(project_dir, owner))
    assert [j.id for j in await remote.jobs(Empty(), owner_caller(project_dir, owner))] == [job.job_id]
    await remote.engine_status(Empty())
    await remote.job(JobQuery(job.job_id), cli_caller())
    assert [(ch is owner.channel, method) for ch, method in sent] == [
        (True, "task/create"), (True, "job/list"), (False, "engine/status"), (False, "job/get"),
    ]  # fmt: skip
    status = await remote.engine_status(Empty())
    assert status.owners == 1 and status.mode is EngineMode.HEADLESS
    closed = await remote.close_owner(owner, "done")
    assert closed.cancelled == [job.job_id]


# -- an owner's socket closing (SRV-21) ----------------------------------------------------------------


async def cancelled_because(api: EngineApi, job_id: str) -> str:
    """The recorded reason of a job cancelled by its owner's close, seen through the API."""
    page = await wait_job(api, job_id, cli_caller(), (TaskStatus.CANCELLED,))
    [event] = [e for e in page.events if e.kind == "task.cancelled"]
    assert event.data == {"reason": page.job.error}
    return str(page.job.error)


@pytest.mark.req("SRV-21")
async def test_an_owners_close_or_eof_cancels_its_jobs_and_records_why(remote: RemoteEngine, project_dir: Path) -> None:
    closing = await remote.open_owner("stdio", Caller(project=project_dir))
    vanishing = await remote.open_owner("stdio", Caller(project=project_dir))
    closed_job = (await remote.task_submit(TaskRequest("slow"), owner_caller(project_dir, closing))).job_id
    eof_job = (await remote.task_submit(TaskRequest("slow"), owner_caller(project_dir, vanishing))).job_id
    await wait_job(remote, eof_job, cli_caller(), (TaskStatus.RUNNING,))

    result = await remote.close_owner(closing, "stdin closed")
    assert result.cancelled == [closed_job] and result.reason == "stdin closed"
    assert await cancelled_because(remote, closed_job) == "its owner closed (stdin closed)"

    assert isinstance(vanishing, RemoteOwner)
    await vanishing.channel.aclose()  # EOF on the owner's socket, without a close request
    assert await cancelled_because(remote, eof_job) == "its owner closed (socket closed)"
    assert (await remote.engine_status(Empty())).owners == 0


def _read_line(proc: subprocess.Popen[bytes], seconds: float = 30.0) -> str:
    """One line of the child's stdout, waiting at most ``seconds``."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, "the owner process printed nothing in time"
    return proc.stdout.readline().decode("utf-8").strip()


_OWNER_PROCESS = """
import sys
from pathlib import Path
import anyio
from shadowcode.engine import open_headless
from shadowcode.engine.api import Caller
from shadowcode.engine.api import TaskRequest
from shadowcode.profile import Profile

async def main():
    async with open_headless(Profile.select()) as api:
        project = Path(sys.argv[1])
        owner = await api.open_owner("stdio", Caller(project=project))
        job = await api.task_submit(TaskRequest("slow"), Caller(project=project, owner=owner, confined=True))
        print(job.job_id, flush=True)
        await anyio.sleep(60)

anyio.run(main)
"""


@pytest.mark.req("SRV-21")
async def test_a_killed_owner_process_has_its_jobs_cancelled_with_the_reason_recorded(
    remote: RemoteEngine, headless: HeadlessEngine, project_dir: Path
) -> None:
    proc = subprocess.Popen(
        [PY, "-c", _OWNER_PROCESS, str(project_dir)],
        env=cli_env(headless.home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        job = _read_line(proc)
        assert job.startswith("task_"), job
        await wait_job(remote, job, cli_caller(), (TaskStatus.RUNNING,))
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
    assert await cancelled_because(remote, job) == "its owner closed (socket closed)"
    assert (await remote.engine_status(Empty())).owners == 0


@pytest.mark.req("SRV-16")
async def test_an_explicit_cancel_through_the_socket_records_who_cancelled(
    remote: RemoteEngine, project_dir: Path
) -> None:
    owner = await remote.open_owner("stdio", Caller(project=project_dir))
    by_owner = (await remote.task_submit(TaskRequest("slow"), owner_caller(project_dir, owner))).job_id
    by_cli = (await remote.task_submit(TaskRequest("slow"), Caller(project=project_dir, access=WRITE))).job_id
    for job in (by_owner, by_cli):
        await wait_job(remote, job, cli_caller(), (TaskStatus.RUNNING,))
    assert (await remote.job_cancel(JobRef(by_owner), owner_caller(project_dir, owner))).cancelled is True
    assert (await remote.job_cancel(JobRef(by_cli), cli_caller())).cancelled is True
    for job, why in ((by_owner, "cancelled by its owner"), (by_cli, "cancelled by the command line")):
        page = await remote.job(JobQuery(job), cli_caller())
        assert page.job.status == "cancelled" and page.job.error == why
    await remote.close_owner(owner, "done")


@pytest.mark.req("SRV-29")
async def test_a_host_asked_approval_is_signed_and_answered_by_the_headless_engine_over_its_socket(
    remote: RemoteEngine, headless: HeadlessEngine, project_dir: Path
) -> None:
    await remote.project_trust(ProjectTrust(str(project_dir), PermissionLevel.WORKSPACE))
    owner = await remote.open_owner("stdio", Caller(project=project_dir))
    try:
        host = owner_caller(project_dir, owner, Access(allow_write=True, approve_in_host=True))
        job = (await remote.task_submit(TaskRequest("park", level=PermissionLevel.WORKSPACE), host)).job_id
        approval = (await wait_job(remote, job, host, pending_approval=True)).pending_approvals[0].id
        with pytest.raises(PolicyError, match="--approve-in-host"):  # the flag itself crosses the socket
            await remote.approval_ask(ApprovalAsk(approval), owner_caller(project_dir, owner))
        asked = await remote.approval_ask(ApprovalAsk(approval), host)
        assert asked.action["argv"] == ["true"] and asked.task_id == job
        with pytest.raises(PolicyError, match="not one this engine issued"):
            await remote.approval_answer(ApprovalAnswer(asked.state + "A", "approve", job), host)
        answered = await remote.approval_answer(ApprovalAnswer(asked.state, "approve", job), host)
        assert answered.status == "approved" and answered.resolved_by == f"host:{owner.id}"
    finally:
        await remote.close_owner(owner, "test over")
