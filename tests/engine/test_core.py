"""The engine core in process: permission levels, write access, models, owners, cancellation, rollback.

Covers SRV-09, SRV-10, SRV-15, SRV-18, SRV-21, SRV-22, SRV-23, SRV-24, ENG-04, ENG-05, ENG-06.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from shadowcode.engine.core import EngineCore

from shadowcode.engine import Access, Engine, Project
from shadowcode.engine.owners import OwnerState
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError, ToolError
from shadowcode.limits import OWNER_JOBS_MAX, OWNER_SOCKETS_MAX, TASKS_RUNNING_MAX
from tests.support.engine import (
    configure_models,
    group_gone,
    openai_server,
    scripted_model,
    sleeper_argv,
    wait_approval,
    wait_pidfile,
    wait_status,
    write_script,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)
DONE_TURN = {"content": "finished"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def running(engine: Engine, *, seconds: float = 60.0) -> AsyncIterator[EngineCore]:
    """A running temporary engine core; the whole block, shutdown included, is bounded."""
    with anyio.fail_after(seconds):
        core = EngineCore(engine)
        async with core.running():
            yield core


def trusted(engine: Engine, folder: Path, level: str | None) -> Project:
    """The project's record, trusted at ``level`` (None: left untrusted)."""
    project = engine.project(folder)
    if level is not None:
        engine.projects.trust(project.path, level)  # type: ignore[arg-type]
    return engine.project(folder)


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


@pytest.fixture
def model(engine: Engine, tmp_path: Path, request_log: Path) -> Callable[[list[dict[str, Any]]], None]:
    """Configure a scripted model (with a request log) holding the given script entries."""

    def _configure(tasks: list[dict[str, Any]]) -> None:
        scripted_model(engine.profile, tmp_path / "script.json", tasks, request_log=request_log)

    return _configure


def logged(request_log: Path) -> list[dict[str, Any]]:
    if not request_log.exists():
        return []
    return [json.loads(line) for line in request_log.read_text(encoding="utf-8").splitlines()]


def kinds(core: EngineCore, task_id: str) -> list[str]:
    return [e.kind for e in core.records.events(task_id, limit=1000)]


# -- SRV-10, SRV-15: levels and the immediate reply ---------------------------------------------


async def test_run_defaults_to_read_only_and_returns_a_queued_job_at_once_srv10_srv15(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="look around", access=WRITE)
        assert job["status"] == "queued" and job["job_id"].startswith("task_")
        assert core.records.get(job["job_id"]).status == "queued"  # the reply came before any work
        assert job["permission_level"] == "read_only" and job["requested_level"] == "read_only"
        assert job["notes"] == []
        done = await wait_status(core.records, job["job_id"])
    assert done.status == "done" and done.permission_level == "read_only"


async def test_elevated_on_a_workspace_project_runs_at_workspace_and_says_it_was_lowered_srv10(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="go", level="elevated", access=WRITE)
        await wait_status(core.records, job["job_id"])
        notes = [e.data["note"] for e in core.records.events(job["job_id"]) if e.kind == "task.note"]
    assert job["permission_level"] == "workspace" and job["requested_level"] == "elevated"
    assert any("lowered from elevated to workspace" in n for n in job["notes"])
    assert notes == job["notes"]
    assert engine.projects.get(project.path).level == "workspace"  # the per-task value is not saved


async def test_a_lower_level_than_the_ceiling_is_kept_and_not_saved_srv10(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "elevated")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="go", level="workspace", access=WRITE)
        await wait_status(core.records, job["job_id"])
    assert job["permission_level"] == "workspace" and job["notes"] == []
    assert engine.projects.get(project.path).level == "elevated"


async def test_an_untrusted_project_runs_tasks_read_only_srv10(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, None)
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="go", level="elevated", access=Access())
        await wait_status(core.records, job["job_id"])
    assert job["permission_level"] == "read_only"
    assert any("untrusted" in n for n in job["notes"])


@pytest.mark.parametrize("mode", ["plan", "review"])
async def test_plan_and_review_tasks_never_write_a_write_call_is_a_tool_error_srv10_eng04(
    engine: Engine, project_dir: Path, model: Callable[..., None], request_log: Path, mode: str
) -> None:
    (project_dir / "keep.txt").write_text("original\n", encoding="utf-8")
    model(
        [
            {
                "match": "",
                "turns": [
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "keep.txt", "content": "x"}}]},
                    DONE_TURN,
                ],
            }
        ]
    )
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(
            owner=None, project=project, prompt="change keep.txt", mode=mode, level="workspace", access=WRITE
        )
        done = await wait_status(core.records, job["job_id"])
        events = kinds(core, job["job_id"])
    assert job["permission_level"] == "read_only"
    assert any(f"{mode} tasks never write" in n for n in job["notes"])
    assert done.status == "done"
    assert "file.write" not in events
    assert (project_dir / "keep.txt").read_text(encoding="utf-8") == "original\n"
    answer_to_tool = logged(request_log)[1]["last_message"]
    assert answer_to_tool["role"] == "tool" and "unavailable tool 'write_file'" in answer_to_tool["content"]


# -- SRV-09: write access ------------------------------------------------------------------------


async def test_a_workspace_task_without_write_access_is_refused_and_read_only_is_allowed_srv09(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        with pytest.raises(PolicyError, match="--allow-write"):
            await core.submit_task(owner=None, project=project, prompt="go", level="workspace", access=Access())
        assert core.records.recent(10) == []  # nothing was recorded for the refused task
        job = await core.submit_task(owner=None, project=project, prompt="go", level="read_only", access=Access())
        assert (await wait_status(core.records, job["job_id"])).status == "done"


# -- ENG-05: models ------------------------------------------------------------------------------


async def test_no_model_configured_is_a_clear_error_naming_the_fix_eng05(engine: Engine, project_dir: Path) -> None:
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        with pytest.raises(ConfigError, match="shadowcode models add"):
            await core.submit_task(owner=None, project=project, prompt="go", access=WRITE)
        configure_models(engine.profile, {"name": "one", "provider": "scripted", "script": "x.json"})
        with pytest.raises(ConfigError, match="'missing'.*configured: one"):
            await core.submit_task(owner=None, project=project, prompt="go", model="missing", access=WRITE)
        assert core.records.recent(10) == []


async def test_an_unknown_tool_and_invalid_arguments_are_tool_errors_and_the_task_goes_on_eng05(
    engine: Engine, project_dir: Path, model: Callable[..., None], request_log: Path
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
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="go", access=WRITE)
        done = await wait_status(core.records, job["job_id"])
    seen = [line["last_message"] for line in logged(request_log)]
    assert done.status == "done" and done.answer == "finished"
    assert len(seen) == 5
    assert "unavailable tool 'format_disk'" in seen[1]["content"]
    assert "not a JSON object" in seen[2]["content"]
    assert "invalid arguments for read_file" in seen[3]["content"]
    assert "alpha" in seen[4]["content"]  # the task carried on and the next call worked


async def test_a_script_that_runs_out_of_turns_fails_the_task_and_the_engine_goes_on_eng05(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model(
        [
            {"match": "broken", "turns": [{"tool_calls": [{"name": "list_files", "arguments": {}}]}]},
            {"match": "", "turns": [DONE_TURN]},
        ]
    )
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        bad = await core.submit_task(owner=None, project=project, prompt="broken", access=WRITE)
        failed = await wait_status(core.records, bad["job_id"])
        good = await core.submit_task(owner=None, project=project, prompt="fine", access=WRITE)
        ok = await wait_status(core.records, good["job_id"])
    assert failed.status == "failed" and "no more turns" in failed.error
    assert ok.status == "done"


async def test_a_long_running_engine_sees_a_replaced_model_and_an_edited_script_eng05(
    engine: Engine, project_dir: Path, tmp_path: Path
) -> None:
    project = trusted(engine, project_dir, "workspace")

    async def answer(core: EngineCore) -> str:
        job = await core.submit_task(owner=None, project=project, prompt="go", access=WRITE)
        done = await wait_status(core.records, job["job_id"])
        assert done.status == "done", done
        return str(done.answer)

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    scripted_model(engine.profile, first, [{"match": "", "turns": [{"content": "from a"}]}])
    async with running(engine) as core:
        assert await answer(core) == "from a"
        scripted_model(engine.profile, second, [{"match": "", "turns": [{"content": "from b"}]}])
        assert await answer(core) == "from b"  # `models add` replaced the model under the same name
        write_script(second, [{"match": "", "turns": [{"content": "from b, edited"}]}])
        assert await answer(core) == "from b, edited"


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

    monkeypatch.setattr(providers, "open_provider", opener)


@pytest.mark.parametrize(
    ("server_args", "expected"),
    [(("--fail-status", "500"), "answered HTTP 500"), (("--hang",), "timed out|no complete answer")],
    ids=["status-500", "hang"],
)
async def test_an_openai_model_that_fails_or_hangs_fails_the_task_clearly_and_in_bounded_time_eng05(
    engine: Engine, project_dir: Path, short_model_timeouts: None, server_args: tuple[str, ...], expected: str
) -> None:
    project = trusted(engine, project_dir, "workspace")
    with openai_server(*server_args) as url:
        configure_models(engine.profile, {"name": "remote", "provider": "openai", "base_url": url, "model": "m"})
        async with running(engine) as core:
            job = await core.submit_task(owner=None, project=project, prompt="go", access=WRITE)
            failed = await wait_status(core.records, job["job_id"], timeout=20)
    assert failed.status == "failed"
    assert "model 'remote'" in failed.error
    assert re.search(expected, failed.error), failed.error


# -- SRV-24: owner limits and confinement ---------------------------------------------------------


async def test_the_65th_job_of_one_owner_is_refused_and_the_owner_stays_usable_for_inspection_srv24(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "workspace")
    async with running(engine, seconds=120) as core:
        owner = await core.open_owner("stdio", project.path)
        ids = []
        for n in range(OWNER_JOBS_MAX):
            job = await core.submit_task(owner=owner, project=project, prompt=f"job {n}", access=WRITE)
            ids.append(job["job_id"])  # the 64th is accepted
        with pytest.raises(PolicyError, match=f"its {OWNER_JOBS_MAX} jobs"):
            await core.submit_task(owner=owner, project=project, prompt="one too many", access=WRITE)
        for task_id in ids:
            await wait_status(core.records, task_id, timeout=30)
        listed = await core.jobs(owner)
        one = await core.job(ids[-1], owner=owner, project=project.path)
        cancelled = await core.cancel(ids[0], owner=owner, project=project.path)
    assert len(listed) == OWNER_JOBS_MAX and {j["id"] for j in listed} == set(ids)
    assert one["job"]["status"] == "done"
    assert cancelled == {"job_id": ids[0], "status": "done", "cancelled": False}
    assert owner.jobs == OWNER_JOBS_MAX and len(core.records.recent(100)) == OWNER_JOBS_MAX


async def test_a_ninth_owner_is_refused_while_eight_are_open_srv24(engine: Engine, project_dir: Path) -> None:
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        owners = [await core.open_owner("stdio", project.path) for _ in range(OWNER_SOCKETS_MAX)]
        with pytest.raises(PolicyError, match=f"{OWNER_SOCKETS_MAX} owner connections"):
            await core.open_owner("stdio", project.path)
        await core.close_owner(owners[0], "closed by its connection")
        again = await core.open_owner("stdio", project.path)
    assert again.id not in {o.id for o in owners}
    assert owners[0].state is OwnerState.CLOSED


async def test_a_rejected_submission_leaves_the_owner_usable_and_an_owner_is_confined_to_its_project_srv24(
    engine: Engine, project_dir: Path, tmp_path: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    project = trusted(engine, project_dir, "workspace")
    (tmp_path / "elsewhere").mkdir()
    other = trusted(engine, tmp_path / "elsewhere", "workspace")
    async with running(engine) as core:
        owner = await core.open_owner("stdio", project.path)
        with pytest.raises(ToolError, match="empty"):
            await core.submit_task(owner=owner, project=project, prompt="   ", access=WRITE)
        with pytest.raises(ToolError, match="unknown mode"):
            await core.submit_task(owner=owner, project=project, prompt="go", mode="deploy", access=WRITE)
        with pytest.raises(PolicyError, match="write access"):
            await core.submit_task(owner=owner, project=project, prompt="go", level="workspace", access=Access())
        with pytest.raises(PolicyError, match="own project"):
            await core.submit_task(owner=owner, project=other, prompt="go", access=WRITE)
        job = await core.submit_task(owner=owner, project=project, prompt="go", access=WRITE)
        done = await wait_status(core.records, job["job_id"])
        with pytest.raises(NotFound):
            await core.job(job["job_id"], owner=owner, project=other.path)
        assert owner.state is OwnerState.OPEN
    assert done.status == "done" and owner.jobs == 1


# -- SRV-21, SRV-22: closing an owner ------------------------------------------------------------


@pytest.fixture
def ids_in_submission_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give tasks ids that sort in submission order, so the newest (queued) job is the last one reached."""
    import itertools
    import types

    from shadowcode.store import tasks

    counter = itertools.count(1)
    monkeypatch.setattr(tasks, "secrets", types.SimpleNamespace(token_hex=lambda n: f"{next(counter):0{2 * n}x}"))


async def test_closing_an_owner_cancels_its_running_and_queued_jobs_and_children_but_not_another_owners_srv21_srv22(
    engine: Engine, project_dir: Path, tmp_path: Path, model: Callable[..., None], ids_in_submission_order: None
) -> None:
    mine, theirs = tmp_path / "mine.pid", tmp_path / "theirs.pid"

    def command_then_done(argv: list[str]) -> list[dict[str, Any]]:
        return [{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}, DONE_TURN]

    model(
        [
            {"match": "theirs", "turns": command_then_done(sleeper_argv(theirs))},
            {"match": "mine", "turns": command_then_done(sleeper_argv(mine))},
            {"match": "park", "turns": command_then_done(["true"])},
            {"match": "", "turns": [DONE_TURN]},
        ]
    )
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        other = await core.open_owner("stdio", project.path)
        their_job = (await core.submit_task(owner=other, project=project, prompt="theirs", level="workspace",
                                            access=WRITE))["job_id"]  # fmt: skip
        await core.resolve_approval((await wait_approval(core.approvals, their_job)).id, "approve", owner=other,
                                    by="test")  # fmt: skip
        their_pid = await wait_pidfile(theirs)

        owner = await core.open_owner("stdio", project.path)

        async def submit(prompt: str) -> str:
            job = await core.submit_task(owner=owner, project=project, prompt=prompt, level="workspace", access=WRITE)
            return str(job["job_id"])

        running_job = await submit("mine")
        await core.resolve_approval((await wait_approval(core.approvals, running_job)).id, "approve",
                                    owner=owner, by="test")  # fmt: skip
        my_pid = await wait_pidfile(mine)
        parked = [await submit("park"), await submit("park")]
        waiting = [await wait_approval(core.approvals, t) for t in parked]
        queued = await submit("queued")
        assert core.scheduler.queued() == [queued]

        with anyio.fail_after(10):
            closed = await core.close_owner(owner, "socket closed")

        assert set(closed["cancelled"]) == {running_job, *parked, queued}
        assert "task.started" not in kinds(core, queued)  # cancelled while queued, never run
        for task_id in (running_job, *parked, queued):
            assert core.records.get(task_id).status == "cancelled"
        assert group_gone(my_pid)
        assert [core.approvals.get(a.id).status for a in waiting] == ["expired", "expired"]
        assert owner.state is OwnerState.CLOSED
        row = engine.store.row("SELECT close_reason, closed_at FROM owners WHERE id = ?", (owner.id,))
        assert row is not None and row["close_reason"] == "socket closed" and row["closed_at"]

        assert core.records.get(their_job).status == "running"  # unrelated work goes on
        assert not group_gone(their_pid)
        with pytest.raises(PolicyError, match="closing"):
            await core.submit_task(owner=owner, project=project, prompt="late", access=WRITE)
        result = await core.cancel(their_job, owner=other, project=project.path)
        assert result["cancelled"] is True and result["status"] == "cancelled"
        assert group_gone(their_pid)


async def test_cancelling_a_queued_job_does_not_wait_behind_running_unrelated_work_srv22(
    engine: Engine, project_dir: Path, model: Callable[..., None]
) -> None:
    model(
        [
            {"match": "park", "turns": [{"tool_calls": [{"name": "run_command", "arguments": {"argv": ["true"]}}]}]},
            {"match": "", "turns": [DONE_TURN]},
        ]
    )
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        busy = [
            (await core.submit_task(owner=None, project=project, prompt="park", level="workspace",
                                    access=WRITE))["job_id"]
            for _ in range(TASKS_RUNNING_MAX)
        ]  # fmt: skip
        for task_id in busy:
            await wait_approval(core.approvals, task_id)
        owner = await core.open_owner("stdio", project.path)
        queued = (await core.submit_task(owner=owner, project=project, prompt="later", access=WRITE))["job_id"]
        assert core.scheduler.queued() == [queued]
        with anyio.fail_after(1):
            result = await core.cancel(queued, owner=owner, project=project.path)
        assert result == {"job_id": queued, "status": "cancelled", "cancelled": True}
        assert [core.records.get(t).status for t in busy] == ["waiting"] * len(busy)
        assert "task.started" not in kinds(core, queued)


# -- SRV-23: background processes ----------------------------------------------------------------


async def test_a_background_process_outlives_its_task_and_stops_when_the_temporary_engine_closes_srv23(
    engine: Engine, project_dir: Path, tmp_path: Path, model: Callable[..., None]
) -> None:
    pidfile = tmp_path / "bg.pid"
    model(
        [
            {
                "match": "",
                "turns": [
                    {"tool_calls": [{"name": "background_start", "arguments": {"argv": sleeper_argv(pidfile)}}]},
                    {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["true"]}}]},
                    DONE_TURN,
                ],
            }
        ]
    )
    project = trusted(engine, project_dir, "elevated")
    async with running(engine) as core:
        job = (await core.submit_task(owner=None, project=project, prompt="serve", level="elevated",
                                      access=WRITE))["job_id"]  # fmt: skip
        approval = await wait_approval(core.approvals, job)
        assert approval.kind == "background" and approval.action["argv"] == sleeper_argv(pidfile)
        await core.resolve_approval(approval.id, "approve", owner=None, by="test")
        pid = await wait_pidfile(pidfile)
        await wait_approval(core.approvals, job)  # the task went on to its next step
        await core.cancel(job, owner=None, project=project.path)
        assert core.records.get(job).status == "cancelled"
        listed = core.processes.list_background()
        assert [p["pid"] for p in listed] == [pid] and listed[0]["running"] is True
        assert not group_gone(pid)
    assert group_gone(pid)


async def test_workspace_tasks_can_neither_start_nor_stop_background_processes_srv23(
    engine: Engine, project_dir: Path, model: Callable[..., None], request_log: Path
) -> None:
    model(
        [
            {
                "match": "",
                "turns": [
                    {"tool_calls": [{"name": "background_start", "arguments": {"argv": ["sleep", "30"]}}]},
                    {"tool_calls": [{"name": "background_stop", "arguments": {"id": "bg_0"}}]},
                    DONE_TURN,
                ],
            }
        ]
    )
    project = trusted(engine, project_dir, "elevated")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="go", level="workspace", access=WRITE)
        assert (await wait_status(core.records, job["job_id"])).status == "done"
        assert core.processes.list_background() == []
        assert core.approvals.pending() == []
    replies = [line["last_message"]["content"] for line in logged(request_log)[1:3]]
    assert "unavailable tool 'background_start'" in replies[0]
    assert "unavailable tool 'background_stop'" in replies[1]


# -- SRV-18, ENG-06: rollback ------------------------------------------------------------------


@pytest.fixture
def edit_script() -> list[dict[str, Any]]:
    return [
        {
            "match": "",
            "turns": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "task\n"}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "created\n"}}]},
                DONE_TURN,
            ],
        }
    ]


async def test_rollback_needs_confirm_write_access_and_a_task_of_this_project_srv18(
    engine: Engine, project_dir: Path, tmp_path: Path, model: Callable[..., None], edit_script: list[dict[str, Any]]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    (tmp_path / "other").mkdir()
    model(edit_script)
    project = trusted(engine, project_dir, "workspace")
    other = trusted(engine, tmp_path / "other", "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="edit", level="workspace", access=WRITE)
        await wait_status(core.records, job["job_id"])
        with pytest.raises(ToolError, match="confirm"):
            await core.rollback(job["job_id"], project=project, access=WRITE, confirm=False)
        with pytest.raises(PolicyError, match="--allow-write"):
            await core.rollback(job["job_id"], project=project, access=Access(), confirm=True)
        with pytest.raises(NotFound):
            await core.rollback(job["job_id"], project=other, access=WRITE, confirm=True)
        with pytest.raises(NotFound):
            await core.rollback("task_0000000000000000", project=project, access=WRITE, confirm=True)
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "task\n"
    assert (project_dir / "new.txt").exists()


async def test_rollback_after_a_conflicting_edit_is_refused_lists_the_path_and_changes_nothing_eng06_srv18(
    engine: Engine, project_dir: Path, model: Callable[..., None], edit_script: list[dict[str, Any]]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    model(edit_script)
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="edit", level="workspace", access=WRITE)
        await wait_status(core.records, job["job_id"])
        (project_dir / "a.txt").write_text("someone else\n", encoding="utf-8")
        with pytest.raises(ConflictError, match="a.txt") as caught:
            await core.rollback(job["job_id"], project=project, access=WRITE, confirm=True)
    assert caught.value.fields["paths"] == ["a.txt"]
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "someone else\n"
    assert (project_dir / "new.txt").read_text(encoding="utf-8") == "created\n"
    assert [e.kind for e in engine.history.why(project.path)] == ["write", "write"]


async def test_a_good_rollback_restores_and_removes_files_and_the_history_shows_it_eng06_srv18(
    engine: Engine, project_dir: Path, model: Callable[..., None], edit_script: list[dict[str, Any]]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    model(edit_script)
    project = trusted(engine, project_dir, "workspace")
    async with running(engine) as core:
        job = await core.submit_task(owner=None, project=project, prompt="edit", level="workspace", access=WRITE)
        await wait_status(core.records, job["job_id"])
        result = await core.rollback(job["job_id"], project=project, access=WRITE, confirm=True)
    assert result == {"task_id": job["job_id"], "restored": ["a.txt"], "removed": ["new.txt"]}
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "before\n"
    assert not (project_dir / "new.txt").exists()
    history = engine.history.why(project.path, "a.txt")
    assert [h.kind for h in history] == ["rollback", "write"]
    assert {h.task_id for h in history} == {job["job_id"]}
