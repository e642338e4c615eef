"""The in-process engine's life and owners (engine/local.py): open and close owners, what a close
cancels, what leaving ``running()`` stops.

Covers ENG-03, SRV-21, SRV-22, SRV-23, SRV-24.
"""

from __future__ import annotations

import itertools
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import ApprovalDecision, Caller, Empty, JobRef, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.owners import Owner, OwnerState
from shadowcode.engine.state import EngineState
from shadowcode.enums import EngineMode, PermissionLevel, TaskStatus
from shadowcode.errors import ConfigError, PolicyError, ProtocolError
from shadowcode.limits import OWNER_SOCKETS_MAX
from tests.support.engine import group_gone, sleeper_argv, wait_approval, wait_pidfile
from tests.support.jobs import DONE_TURN, PARK_TURN, cli_caller, kinds, owner_caller, trust
from tests.support.mcp_client import running

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

Model = Callable[[list[dict[str, Any]]], None]
WORKSPACE = PermissionLevel.WORKSPACE


# -- opening owners (SRV-22, SRV-24) -------------------------------------------------------------


@pytest.mark.req("SRV-24")
async def test_a_ninth_owner_is_refused_while_eight_are_open(api: LocalEngine, project_dir: Path) -> None:
    owners = [await api.open_owner("stdio", Caller(project=project_dir)) for _ in range(OWNER_SOCKETS_MAX)]
    with pytest.raises(PolicyError, match=f"{OWNER_SOCKETS_MAX} owner connections"):
        await api.open_owner("stdio", Caller(project=project_dir))
    assert (await api.engine_status(Empty())).owners == OWNER_SOCKETS_MAX
    await api.close_owner(owners[0], "closed by its connection")
    again = await api.open_owner("stdio", Caller(project=project_dir))
    assert again.id not in {o.id for o in owners}
    assert isinstance(owners[0], Owner) and owners[0].state is OwnerState.CLOSED


@pytest.mark.req("SRV-22")
async def test_an_owner_is_recorded_for_its_canonical_project_before_any_work(
    api: LocalEngine, state: EngineState, project_dir: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project_dir)
    owner = await api.open_owner("gateway", Caller(project=link))
    row = state.store.owners.get(owner.id)
    assert row is not None and row.kind == "gateway" and row.project == str(project_dir.resolve())
    assert row.engine_id == state.id and row.jobs == 0 and row.closed_at is None
    with pytest.raises(ConfigError, match="does not exist"):
        await api.open_owner("stdio", Caller(project=tmp_path / "missing"))
    assert len(state.owners.open) == 1


@pytest.mark.req("SRV-21")
async def test_closing_an_owner_twice_is_harmless_and_a_foreign_owner_is_refused(
    api: LocalEngine, state: EngineState, project_dir: Path
) -> None:
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    first = await api.close_owner(owner, "connection closed")
    again = await api.close_owner(owner, "a second close")
    assert first.cancelled == [] and again.cancelled == []
    row = state.store.owners.get(owner.id)
    assert row is not None and row.close_reason == "connection closed"
    with pytest.raises(ProtocolError, match="does not belong"):
        await api.close_owner(types.SimpleNamespace(id="own_elsewhere"), "x")  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match="does not belong"):
        await api.jobs(Empty(), owner_caller(project_dir, types.SimpleNamespace(id="own_elsewhere")))  # type: ignore[arg-type]


# -- closing an owner (SRV-21, SRV-22) -----------------------------------------------------------


@pytest.fixture
def ids_in_submission_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give tasks ids that sort in submission order, so the newest (queued) job is the last one reached."""
    from shadowcode.store import tasks

    counter = itertools.count(1)
    monkeypatch.setattr(tasks, "secrets", types.SimpleNamespace(token_hex=lambda n: f"{next(counter):0{2 * n}x}"))


@pytest.mark.req("SRV-21", "SRV-22")
async def test_closing_an_owner_cancels_its_running_and_queued_jobs_and_children_but_not_another_owners(
    api: LocalEngine, state: EngineState, project_dir: Path, tmp_path: Path, model: Model,
    ids_in_submission_order: None,
) -> None:  # fmt: skip
    mine, theirs = tmp_path / "mine.pid", tmp_path / "theirs.pid"

    def command_then_done(argv: list[str]) -> list[dict[str, Any]]:
        return [{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}, DONE_TURN]

    model(
        [
            {"match": "theirs", "turns": command_then_done(sleeper_argv(theirs))},
            {"match": "mine", "turns": command_then_done(sleeper_argv(mine))},
            {"match": "park", "turns": [PARK_TURN, DONE_TURN]},
            {"match": "", "turns": [DONE_TURN]},
        ]
    )
    await trust(api, project_dir, WORKSPACE)
    other = await api.open_owner("stdio", Caller(project=project_dir))
    theirs_caller = owner_caller(project_dir, other)
    their_job = (await api.task_submit(TaskRequest("theirs", level=WORKSPACE), theirs_caller)).job_id
    approval = await wait_approval(state.approvals, their_job)
    await api.approval_resolve(ApprovalDecision(approval.id, "approve"), theirs_caller)
    their_pid = await wait_pidfile(theirs)

    owner = await api.open_owner("stdio", Caller(project=project_dir))
    mine_caller = owner_caller(project_dir, owner)

    async def submit(prompt: str) -> str:
        return (await api.task_submit(TaskRequest(prompt, level=WORKSPACE), mine_caller)).job_id

    running_job = await submit("mine")
    approval = await wait_approval(state.approvals, running_job)
    await api.approval_resolve(ApprovalDecision(approval.id, "approve"), mine_caller)
    my_pid = await wait_pidfile(mine)
    parked = [await submit("park"), await submit("park")]
    waiting = [await wait_approval(state.approvals, t) for t in parked]
    queued = await submit("queued")
    assert state.runner.queued() == [queued]

    with anyio.fail_after(10):
        closed = await api.close_owner(owner, "socket closed")

    assert closed.owner == owner.id and closed.reason == "socket closed"
    assert set(closed.cancelled) == {running_job, *parked, queued}
    assert "task.started" not in kinds(state, queued)  # cancelled while queued, never run
    for task_id in (running_job, *parked, queued):
        assert state.records.get(task_id).status == "cancelled"
    assert group_gone(my_pid)
    assert [state.approvals.get(a.id).status for a in waiting] == ["expired", "expired"]
    assert isinstance(owner, Owner) and owner.state is OwnerState.CLOSED
    row = state.store.owners.get(owner.id)
    assert row is not None and row.close_reason == "socket closed" and row.closed_at

    assert state.records.get(their_job).status == "running"  # unrelated work goes on
    assert not group_gone(their_pid)
    with pytest.raises(PolicyError, match="closing"):
        await api.task_submit(TaskRequest("late"), mine_caller)
    result = await api.job_cancel(JobRef(their_job), theirs_caller)
    assert result.cancelled is True and result.status == "cancelled"
    assert group_gone(their_pid)


# -- leaving running() (ENG-03, SRV-23) --------------------------------------------------------------


@pytest.mark.req("SRV-23")
async def test_a_background_process_outlives_its_task_and_stops_when_the_temporary_engine_closes(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, model: Model
) -> None:
    pidfile = tmp_path / "bg.pid"
    start = {"name": "background_start", "arguments": {"argv": sleeper_argv(pidfile)}}
    model([{"match": "", "turns": [{"tool_calls": [start]}, PARK_TURN, DONE_TURN]}])
    state = engine.state
    async with running(engine) as api:
        await trust(api, project_dir, PermissionLevel.ELEVATED)
        request = TaskRequest("serve", level=PermissionLevel.ELEVATED)
        job = (await api.task_submit(request, cli_caller(project_dir))).job_id
        approval = await wait_approval(state.approvals, job)
        assert approval.kind == "background" and approval.action["argv"] == sleeper_argv(pidfile)
        await api.approval_resolve(ApprovalDecision(approval.id, "approve"), cli_caller())
        pid = await wait_pidfile(pidfile)
        await wait_approval(state.approvals, job)  # the task went on to its next step
        await api.job_cancel(JobRef(job), cli_caller())
        assert state.records.get(job).status == "cancelled"
        listed = await api.background_list(Empty())
        assert [p.pid for p in listed] == [pid] and listed[0].running is True
        assert not group_gone(pid)
    assert group_gone(pid)


@pytest.mark.req("ENG-03")
async def test_the_engine_records_its_start_and_stop_and_hands_back_a_frontends_error_unwrapped(
    engine: LocalEngine, project_dir: Path
) -> None:
    state = engine.state
    with pytest.raises(ConfigError, match="the frontend's own error"):
        async with running(engine) as api:
            status = await api.engine_status(Empty())
            assert status.id == state.id and status.pid == os.getpid() and status.mode is EngineMode.TEMPORARY
            row = state.store.owners.engine(state.id)
            assert row is not None and row.pid == os.getpid() and row.stopped_at is None
            with pytest.raises(ConfigError, match="temporary one"):
                await api.engine_stop(Empty())
            raise ConfigError("the frontend's own error")
    row = state.store.owners.engine(state.id)
    assert row is not None and row.stopped_at is not None


@pytest.mark.req("SRV-21", "ENG-03")
async def test_leaving_running_closes_every_owner_and_cancels_all_work(
    engine: LocalEngine, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    state = engine.state
    async with running(engine) as api:
        await trust(api, project_dir, WORKSPACE)
        owner = await api.open_owner("stdio", Caller(project=project_dir))
        owned = (await api.task_submit(TaskRequest("go", level=WORKSPACE), owner_caller(project_dir, owner))).job_id
        detached = (await api.task_submit(TaskRequest("go", level=WORKSPACE), cli_caller(project_dir))).job_id
        approvals = [await wait_approval(state.approvals, t) for t in (owned, detached)]
    assert [state.records.get(t).status for t in (owned, detached)] == [TaskStatus.CANCELLED] * 2
    assert [state.approvals.get(a.id).status for a in approvals] == ["expired", "expired"]
    row = state.store.owners.get(owner.id)
    assert row is not None and row.close_reason == "the engine stopped"
    assert state.owners.open == {}
