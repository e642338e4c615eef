"""The job runner (engine/runner.py): jobs as they run, fail, use their model, leave the queue, and
record why they were cancelled.

Covers ENG-05, SRV-16, SRV-21, SRV-22, SRV-23.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import Caller, Empty, JobCancelled, JobRef, OwnerHandle, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel, TaskStatus
from shadowcode.limits import TASKS_RUNNING_MAX
from shadowcode.profile import Profile
from tests.support.engine import (
    configure_models,
    openai_server,
    scripted_model,
    wait_approval,
    wait_status,
    write_script,
)
from tests.support.jobs import DONE_TURN, PARK_TURN, SLOW_TURN, cli_caller, kinds, logged, owner_caller, trust
from tests.support.mcp_client import running

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

Model = Callable[[list[dict[str, Any]]], None]
WORKSPACE = PermissionLevel.WORKSPACE


async def detached(api: LocalEngine, project: Path, prompt: str = "go", level: PermissionLevel | None = None) -> str:
    """Submit a detached (CLI) task; returns its id."""
    request = TaskRequest(prompt) if level is None else TaskRequest(prompt, level=level)
    return (await api.task_submit(request, cli_caller(project))).job_id


# -- a job's own failures never stop the engine (ENG-05) ------------------------------------------


@pytest.mark.req("ENG-05")
async def test_an_unknown_tool_and_invalid_arguments_are_tool_errors_and_the_task_goes_on(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, request_log: Path
) -> None:
    (project_dir / "a.txt").write_text("alpha\n", encoding="utf-8")
    model(
        [
            {
                "match": "",
                "turns": [
                    {"tool_calls": [{"name": "format_disk", "arguments": {}}]},
                    {"tool_calls": [{"name": "read_file", "arguments": '{"path": '}]},
                    {"tool_calls": [{"name": "read_file", "arguments": {"wrong": 1}}]},
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                    DONE_TURN,
                ],
            }
        ]
    )
    await trust(api, project_dir, WORKSPACE)
    done = await wait_status(state.records, await detached(api, project_dir))
    seen = [line["last_message"] for line in logged(request_log)]
    assert done.status == "done" and done.answer == "finished"
    assert len(seen) == 5
    assert "unavailable tool 'format_disk'" in seen[1]["content"]
    assert "not a JSON object" in seen[2]["content"]
    assert "invalid arguments for read_file" in seen[3]["content"]
    assert "alpha" in seen[4]["content"]  # the task carried on and the next call worked


@pytest.mark.req("ENG-05")
async def test_a_script_that_runs_out_of_turns_fails_the_task_and_the_engine_goes_on(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model(
        [
            {"match": "broken", "turns": [{"tool_calls": [{"name": "list_files", "arguments": {}}]}]},
            {"match": "", "turns": [DONE_TURN]},
        ]
    )
    await trust(api, project_dir, WORKSPACE)
    failed = await wait_status(state.records, await detached(api, project_dir, "broken"))
    ok = await wait_status(state.records, await detached(api, project_dir, "fine"))
    assert failed.status == "failed" and "no more turns" in (failed.error or "")
    assert kinds(state, failed.id)[-1] == "task.failed"
    assert ok.status == "done"


@pytest.mark.req("ENG-05")
async def test_a_long_running_engine_sees_a_replaced_model_and_an_edited_script(
    api: LocalEngine, state: EngineState, profile: Profile, project_dir: Path, tmp_path: Path
) -> None:
    await trust(api, project_dir, WORKSPACE)

    async def answer() -> str:
        done = await wait_status(state.records, await detached(api, project_dir))
        assert done.status == "done", done
        return str(done.answer)

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    scripted_model(profile, first, [{"match": "", "turns": [{"content": "from a"}]}])
    assert await answer() == "from a"
    scripted_model(profile, second, [{"match": "", "turns": [{"content": "from b"}]}])
    assert await answer() == "from b"  # `models add` replaced the model under the same name
    write_script(second, [{"match": "", "turns": [{"content": "from b, edited"}]}])
    assert await answer() == "from b, edited"


@pytest.fixture
def short_model_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open openai models with sub-second read and total deadlines (the settings offer none)."""
    from shadowcode.agent import providers
    from shadowcode.agent.providers.openai_compatible import OpenAIProvider

    original = providers.open_provider

    def opener(settings: Any, profile: Any) -> Any:
        if settings.provider == "openai":
            return OpenAIProvider(
                settings, profile, connect_timeout_seconds=2.0, read_timeout_seconds=0.5, total_timeout_seconds=1.0
            )
        return original(settings, profile)

    monkeypatch.setattr(providers, "open_provider", opener)  # the runner looks it up when it opens one


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    ("server_args", "expected"),
    [(("--fail-status", "500"), "answered HTTP 500"), (("--hang",), "timed out|no complete answer")],
    ids=["status-500", "hang"],
)
async def test_an_openai_model_that_fails_or_hangs_fails_the_task_clearly_and_in_bounded_time(
    api: LocalEngine, state: EngineState, profile: Profile, project_dir: Path, short_model_timeouts: None,
    server_args: tuple[str, ...], expected: str,
) -> None:  # fmt: skip
    await trust(api, project_dir, WORKSPACE)
    with openai_server(*server_args) as url:
        configure_models(profile, {"name": "remote", "provider": "openai", "base_url": url, "model": "m"})
        failed = await wait_status(state.records, await detached(api, project_dir), timeout=20)
    assert failed.status == "failed"
    assert "model 'remote'" in (failed.error or "")
    assert re.search(expected, failed.error or ""), failed.error


# -- the tools a job is given (SRV-23) ---------------------------------------------------------------


@pytest.mark.req("SRV-23")
async def test_workspace_tasks_can_neither_start_nor_stop_background_processes(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, request_log: Path
) -> None:
    start = {"name": "background_start", "arguments": {"argv": ["sleep", "30"]}}
    stop = {"name": "background_stop", "arguments": {"id": "bg_0"}}
    model([{"match": "", "turns": [{"tool_calls": [start]}, {"tool_calls": [stop]}, DONE_TURN]}])
    await trust(api, project_dir, PermissionLevel.ELEVATED)
    job = await detached(api, project_dir, level=WORKSPACE)
    assert (await wait_status(state.records, job)).status == "done"
    assert await api.background_list(Empty()) == []
    assert state.approvals.pending() == []
    replies = [line["last_message"]["content"] for line in logged(request_log)[1:3]]
    assert "unavailable tool 'background_start'" in replies[0]
    assert "unavailable tool 'background_stop'" in replies[1]


# -- the queue (SRV-22) ------------------------------------------------------------------------------


@pytest.mark.req("SRV-22")
async def test_cancelling_a_queued_job_does_not_wait_behind_running_unrelated_work(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "park", "turns": [PARK_TURN]}, {"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    busy = [await detached(api, project_dir, "park", WORKSPACE) for _ in range(TASKS_RUNNING_MAX)]
    for task_id in busy:
        await wait_approval(state.approvals, task_id)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    queued = (await api.task_submit(TaskRequest("later"), owner_caller(project_dir, owner))).job_id
    assert state.runner.queued() == [queued]
    with anyio.fail_after(1):
        result = await api.job_cancel(JobRef(queued), owner_caller(project_dir, owner))
    assert result == JobCancelled(queued, TaskStatus.CANCELLED, True)
    assert [state.records.get(t).status for t in busy] == ["waiting"] * len(busy)
    assert "task.started" not in kinds(state, queued)


# -- why a job was cancelled (SRV-16, SRV-21) ----------------------------------------------------------


def cancelled_because(state: EngineState, task_id: str) -> str:
    """The reason a cancelled job records: its error, checked against its ``task.cancelled`` event."""
    task = state.records.get(task_id)
    assert task.status == "cancelled", task
    [event] = [e for e in state.records.events(task_id, limit=1000) if e.kind == "task.cancelled"]
    assert event.data == {"reason": task.error}
    return str(task.error)


async def running_now(state: EngineState, task_id: str) -> str:
    await wait_status(state.records, task_id, (TaskStatus.RUNNING,))
    return task_id


async def fill_slots(api: LocalEngine, state: EngineState, project: Path, taken: int) -> list[str]:
    """Submit detached slow jobs until every running slot is taken; returns their ids."""
    return [await running_now(state, await detached(api, project)) for _ in range(TASKS_RUNNING_MAX - taken)]


async def owned_job(api: LocalEngine, project: Path, owner: OwnerHandle) -> str:
    return (await api.task_submit(TaskRequest("go"), owner_caller(project, owner))).job_id


@pytest.mark.req("SRV-21")
async def test_an_owners_close_records_that_its_owner_closed_and_why(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [SLOW_TURN]}])
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    ran = await running_now(state, await owned_job(api, project_dir, owner))
    others = await fill_slots(api, state, project_dir, taken=1)
    waited = await owned_job(api, project_dir, owner)
    assert state.runner.queued() == [waited]
    closed = await api.close_owner(owner, "stdin closed")
    assert set(closed.cancelled) == {ran, waited}
    assert cancelled_because(state, ran) == "its owner closed (stdin closed)"
    assert cancelled_because(state, waited) == "its owner closed (stdin closed) while it was queued"
    assert [state.records.get(t).status for t in others] == ["running"] * len(others)  # not theirs


@pytest.mark.req("SRV-16")
async def test_an_explicit_cancel_records_who_cancelled_the_owner_or_the_command_line(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [SLOW_TURN]}])
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    by_owner = await running_now(state, await owned_job(api, project_dir, owner))
    by_cli = await running_now(state, await detached(api, project_dir))
    await fill_slots(api, state, project_dir, taken=2)
    queued_owned = await owned_job(api, project_dir, owner)
    queued_cli = await detached(api, project_dir)
    assert state.runner.queued() == [queued_owned, queued_cli]

    mine = owner_caller(project_dir, owner)
    # Queued ones first: cancelling a running job would let a queued one start.
    assert (await api.job_cancel(JobRef(queued_owned), mine)).cancelled is True
    assert (await api.job_cancel(JobRef(queued_cli), cli_caller())).cancelled is True
    assert (await api.job_cancel(JobRef(by_owner), mine)).cancelled is True
    assert (await api.job_cancel(JobRef(by_cli), cli_caller())).cancelled is True
    assert cancelled_because(state, queued_owned) == "cancelled by its owner while it was queued"
    assert cancelled_because(state, queued_cli) == "cancelled by the command line while it was queued"
    assert cancelled_because(state, by_owner) == "cancelled by its owner"
    assert cancelled_because(state, by_cli) == "cancelled by the command line"
    # A later close of the owner does not rewrite why its jobs ended.
    assert (await api.close_owner(owner, "stdin closed")).cancelled == []
    assert cancelled_because(state, by_owner) == "cancelled by its owner"


@pytest.mark.req("SRV-21")
async def test_the_engines_stop_records_that_the_engine_stopped(
    engine: LocalEngine, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [SLOW_TURN]}])
    state = engine.state
    async with running(engine) as api:
        busy = await fill_slots(api, state, project_dir, taken=0)
        queued = await detached(api, project_dir)
        owner = await api.open_owner("stdio", Caller(project=project_dir))
        queued_owned = await owned_job(api, project_dir, owner)
        assert state.runner.queued() == [queued, queued_owned]
    for task_id in busy:
        assert cancelled_because(state, task_id) == "the engine stopped"
    assert cancelled_because(state, queued) == "the engine stopped while it was queued"
    assert cancelled_because(state, queued_owned) == "its owner closed (the engine stopped) while it was queued"
    assert "task.started" not in kinds(state, queued) + kinds(state, queued_owned)
