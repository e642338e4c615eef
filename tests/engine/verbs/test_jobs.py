"""The delegated-work verbs (engine/verbs/jobs.py): task_submit, test_submit, jobs, job, job_cancel,
approvals, approval_resolve, rollback, driven through the API of a running in-process engine.

Covers SRV-09, SRV-10, SRV-11, SRV-15, SRV-16, SRV-17, SRV-18, SRV-24, ENG-04, ENG-05, ENG-06, ENG-07, ENG-08.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import (
    Access,
    ApprovalDecision,
    Caller,
    Empty,
    JobCancelled,
    JobQuery,
    JobRef,
    RecentJobs,
    Rollback,
    RollbackResult,
    TaskRequest,
    TaskSubmitted,
    TestRequest,
    WhyQuery,
)
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.owners import OwnerState
from shadowcode.engine.state import EngineState
from shadowcode.enums import ApprovalStatus, EngineMode, PermissionLevel, TaskMode, TaskStatus
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError, ToolError
from shadowcode.limits import OWNER_JOBS_MAX
from tests.support.engine import PY, configure_models, wait_approval, wait_status
from tests.support.jobs import DONE_TURN, PARK_TURN, cli_caller, kinds, logged, owner_caller, trust

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

Model = Callable[[list[dict[str, Any]]], None]

WORKSPACE, ELEVATED, READ_ONLY = PermissionLevel.WORKSPACE, PermissionLevel.ELEVATED, PermissionLevel.READ_ONLY


def notes_of(state: EngineState, task_id: str) -> list[str]:
    return [e.data["note"] for e in state.records.events(task_id, limit=1000) if e.kind == "task.note"]


# -- task_submit: levels and the immediate reply (SRV-10, SRV-15) ------------------------------------


@pytest.mark.req("SRV-10", "SRV-15")
async def test_a_task_defaults_to_read_only_and_its_job_is_returned_queued_at_once(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    job = await api.task_submit(TaskRequest("look around"), cli_caller(project_dir))
    assert job == TaskSubmitted(job.job_id, TaskStatus.QUEUED, TaskMode.BUILD, READ_ONLY, READ_ONLY, "scripted", [])
    assert job.job_id.startswith("task_")
    assert state.records.get(job.job_id).status == "queued"  # the reply came before any work
    done = await wait_status(state.records, job.job_id)
    assert done.status == "done" and done.permission_level == "read_only"


@pytest.mark.req("SRV-10")
async def test_elevated_on_a_workspace_project_runs_at_workspace_and_says_it_was_lowered(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    job = await api.task_submit(TaskRequest("go", level=ELEVATED), cli_caller(project_dir))
    await wait_status(state.records, job.job_id)
    assert job.permission_level == "workspace" and job.requested_level == "elevated"
    assert any("lowered from elevated to workspace" in n for n in job.notes)
    assert notes_of(state, job.job_id) == job.notes
    assert (await api.project_get(Empty(), cli_caller(project_dir))).level == "workspace"  # not saved


@pytest.mark.req("SRV-10")
async def test_a_lower_level_than_the_ceiling_is_kept_and_not_saved(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, ELEVATED)
    job = await api.task_submit(TaskRequest("go", level=WORKSPACE), cli_caller(project_dir))
    await wait_status(state.records, job.job_id)
    assert job.permission_level == "workspace" and job.notes == []
    assert (await api.project_get(Empty(), cli_caller(project_dir))).level == "elevated"


@pytest.mark.req("SRV-10")
async def test_no_level_asks_for_the_projects_configured_level(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, ELEVATED)
    job = await api.task_submit(TaskRequest("go", level=None), cli_caller(project_dir))
    await wait_status(state.records, job.job_id)
    assert job.permission_level == "elevated" and job.requested_level == "elevated" and job.notes == []


@pytest.mark.req("SRV-10")
async def test_an_untrusted_project_runs_tasks_read_only(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    job = await api.task_submit(TaskRequest("go", level=ELEVATED), Caller(project=project_dir))
    await wait_status(state.records, job.job_id)
    assert job.permission_level == "read_only"
    assert any("untrusted" in n for n in job.notes)


@pytest.mark.req("SRV-10", "ENG-04")
@pytest.mark.parametrize("mode", [TaskMode.PLAN, TaskMode.REVIEW])
async def test_plan_and_review_tasks_never_write_a_write_call_is_a_tool_error(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, request_log: Path, mode: TaskMode
) -> None:
    (project_dir / "keep.txt").write_text("original\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "keep.txt", "content": "x"}}
    model([{"match": "", "turns": [{"tool_calls": [write]}, DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    job = await api.task_submit(TaskRequest("change keep.txt", mode, WORKSPACE), cli_caller(project_dir))
    done = await wait_status(state.records, job.job_id)
    assert job.permission_level == "read_only" and job.mode is mode
    assert any(f"{mode} tasks never write" in n for n in job.notes)
    assert done.status == "done"
    assert "file.write" not in kinds(state, job.job_id)
    assert (project_dir / "keep.txt").read_text(encoding="utf-8") == "original\n"
    answer_to_tool = logged(request_log)[1]["last_message"]
    assert answer_to_tool["role"] == "tool" and "unavailable tool 'write_file'" in answer_to_tool["content"]


# -- task_submit: write access, models, refusals (SRV-09, ENG-05, SRV-24) ----------------------------


@pytest.mark.req("SRV-09")
async def test_a_workspace_task_without_write_access_is_refused_and_read_only_is_allowed(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    with pytest.raises(PolicyError, match="--allow-write"):
        await api.task_submit(TaskRequest("go", level=WORKSPACE), Caller(project=project_dir))
    assert state.records.recent(10) == []  # nothing was recorded for the refused task
    job = await api.task_submit(TaskRequest("go", level=READ_ONLY), Caller(project=project_dir))
    assert (await wait_status(state.records, job.job_id)).status == "done"


@pytest.mark.req("ENG-05")
async def test_no_model_configured_and_an_unknown_model_are_clear_errors_naming_the_fix(
    api: LocalEngine, state: EngineState, project_dir: Path
) -> None:
    await trust(api, project_dir, WORKSPACE)
    with pytest.raises(ConfigError, match="shadowcode models add"):
        await api.task_submit(TaskRequest("go"), cli_caller(project_dir))
    configure_models(state.profile, {"name": "one", "provider": "scripted", "script": "x.json"})
    with pytest.raises(ConfigError, match="'missing'.*configured: one"):
        await api.task_submit(TaskRequest("go", model="missing"), cli_caller(project_dir))
    assert state.records.recent(10) == []


@pytest.mark.req("SRV-24")
async def test_the_65th_job_of_one_owner_is_refused_and_the_owner_stays_usable_for_inspection(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    caller = owner_caller(project_dir, owner)
    ids = [(await api.task_submit(TaskRequest(f"job {n}"), caller)).job_id for n in range(OWNER_JOBS_MAX)]
    with pytest.raises(PolicyError, match=f"its {OWNER_JOBS_MAX} jobs"):
        await api.task_submit(TaskRequest("one too many"), caller)  # the 64th was accepted
    for task_id in ids:
        await wait_status(state.records, task_id, timeout=60)
    listed = await api.jobs(Empty(), caller)
    one = await api.job(JobQuery(ids[-1]), caller)
    cancelled = await api.job_cancel(JobRef(ids[0]), caller)
    assert len(listed) == OWNER_JOBS_MAX and {j.id for j in listed} == set(ids)
    assert one.job.status == "done" and one.job.answer == "finished"
    assert cancelled == JobCancelled(ids[0], TaskStatus.DONE, False)
    assert owner.jobs == OWNER_JOBS_MAX and len(state.records.recent(100)) == OWNER_JOBS_MAX
    row = state.store.owners.get(owner.id)
    assert row is not None and row.jobs == OWNER_JOBS_MAX


@pytest.mark.req("SRV-24", "SRV-16")
async def test_a_rejected_submission_leaves_the_owner_usable_and_an_owner_is_confined_to_its_project(
    api: LocalEngine, state: EngineState, project_dir: Path, tmp_path: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    await trust(api, elsewhere, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    mine = owner_caller(project_dir, owner)
    with pytest.raises(ToolError, match="empty"):
        await api.task_submit(TaskRequest("   "), mine)
    with pytest.raises(ToolError, match="unknown mode 'test'"):
        await api.task_submit(TaskRequest("go", TaskMode.TEST), mine)
    with pytest.raises(PolicyError, match="write access"):
        await api.task_submit(TaskRequest("go", level=WORKSPACE), owner_caller(project_dir, owner, Access()))
    with pytest.raises(PolicyError, match="own project"):
        await api.task_submit(TaskRequest("go"), owner_caller(elsewhere, owner))
    assert owner.jobs == 0 and state.records.recent(10) == []
    job = await api.task_submit(TaskRequest("go"), mine)
    done = await wait_status(state.records, job.job_id)
    with pytest.raises(NotFound):
        await api.job(JobQuery(job.job_id), owner_caller(elsewhere, owner))
    assert owner.state is OwnerState.OPEN
    assert done.status == "done" and owner.jobs == 1


# -- jobs, job, job_cancel, jobs_recent: who sees what (SRV-16, ENG-08) ---------------------------


@pytest.mark.req("SRV-16", "ENG-08")
async def test_a_job_is_seen_by_its_owner_and_the_command_line_only(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    other = await api.open_owner("stdio", Caller(project=project_dir))
    assert await api.jobs(Empty(), owner_caller(project_dir, owner)) == []  # none before its first delegation
    job = (await api.task_submit(TaskRequest("go"), owner_caller(project_dir, owner))).job_id
    await wait_status(state.records, job)
    seen = await api.job(JobQuery(job), owner_caller(project_dir, owner))
    assert seen.job.id == job and [e.kind for e in seen.events][:2] == ["task.queued", "task.started"]
    assert seen.next_cursor is None and seen.pending_approvals == []
    later = await api.job(JobQuery(job, cursor=seen.events[0].id), owner_caller(project_dir, owner))
    assert later.events == seen.events[1:]
    for stranger in (owner_caller(project_dir, other), owner_caller(project_dir, None)):
        with pytest.raises(NotFound, match="created by this connection") as caught:
            await api.job(JobQuery(job), stranger)
        assert caught.value.fields == {"task_id": job}
        with pytest.raises(NotFound):
            await api.job_cancel(JobRef(job), stranger)
        assert await api.jobs(Empty(), stranger) == []
    assert (await api.job(JobQuery(job), cli_caller())).job.status == "done"
    assert [t.id for t in await api.jobs_recent(RecentJobs(), cli_caller())] == [job]


@pytest.mark.req("ENG-08")
async def test_recent_jobs_show_the_unfinished_jobs_of_a_stopped_engine_as_interrupted(
    api: LocalEngine, state: EngineState, project_dir: Path
) -> None:
    project = state.project(Caller(project=project_dir)).path
    state.store.owners.engine_started("eng_gone", 1, EngineMode.HEADLESS)
    state.store.owners.engine_stopped("eng_gone")
    orphan = state.records.create(project=project, owner=None, mode=TaskMode.BUILD, prompt="left behind",
                                  permission_level=READ_ONLY, model="m", engine_id="eng_gone")  # fmt: skip
    [shown] = await api.jobs_recent(RecentJobs(), cli_caller())
    assert shown.id == orphan.id and shown.status == "interrupted" and "stopped" in (shown.error or "")
    assert kinds(state, orphan.id)[-1] == "task.interrupted"


@pytest.mark.req("SRV-16")
async def test_a_job_of_another_engine_is_cancelled_there_not_here(
    api: LocalEngine, state: EngineState, project_dir: Path
) -> None:
    project = state.project(Caller(project=project_dir)).path
    theirs = state.records.create(project=project, owner=None, mode=TaskMode.BUILD, prompt="elsewhere",
                                  permission_level=READ_ONLY, model="m", engine_id="eng_other")  # fmt: skip
    with pytest.raises(PolicyError, match="another engine"):
        await api.job_cancel(JobRef(theirs.id), cli_caller())
    assert state.records.get(theirs.id).status == "queued"
    with pytest.raises(NotFound):
        await api.job_cancel(JobRef("task_0000000000000000"), cli_caller())


# -- approvals and approval_resolve (ENG-07, SRV-11) -------------------------------------------


@pytest.mark.req("ENG-07", "SRV-11")
async def test_an_owner_lists_and_resolves_only_its_own_approvals_and_approving_needs_approval_access(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    other = await api.open_owner("stdio", Caller(project=project_dir))
    mine = owner_caller(project_dir, owner)
    job = (await api.task_submit(TaskRequest("go", level=WORKSPACE), mine)).job_id
    pending = await wait_approval(state.approvals, job)
    assert [a.id for a in await api.approvals(Empty(), mine)] == [pending.id]
    assert await api.approvals(Empty(), owner_caller(project_dir, other)) == []
    assert [a.id for a in await api.approvals(Empty(), cli_caller())] == [pending.id]
    assert (await api.job(JobQuery(job), mine)).pending_approvals == [pending]

    approve = ApprovalDecision(pending.id, "approve")
    with pytest.raises(PolicyError, match=f"shadowcode approve {pending.id}"):
        await api.approval_resolve(approve, owner_caller(project_dir, owner, Access(allow_write=True)))
    with pytest.raises(NotFound):
        await api.approval_resolve(approve, owner_caller(project_dir, other))
    assert state.approvals.get(pending.id).status == "pending"  # nothing changed

    deny = ApprovalDecision(pending.id, "deny")
    denied = await api.approval_resolve(deny, owner_caller(project_dir, owner, Access()))
    assert denied.status is ApprovalStatus.DENIED and denied.resolved_by == f"mcp:{owner.id}"
    with pytest.raises(PolicyError, match="already denied"):
        await api.approval_resolve(approve, mine)
    done = await wait_status(state.records, job)
    assert done.status == "done" and "command.started" not in kinds(state, job)


@pytest.mark.req("ENG-07")
async def test_the_command_line_approves_any_pending_approval_of_the_profile(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    job = (await api.task_submit(TaskRequest("go", level=WORKSPACE), owner_caller(project_dir, owner))).job_id
    pending = await wait_approval(state.approvals, job)
    approved = await api.approval_resolve(ApprovalDecision(pending.id, "approve"), cli_caller())
    assert approved.status is ApprovalStatus.APPROVED and approved.resolved_by == "cli"
    assert (await wait_status(state.records, job)).status == "done"
    assert "command.result" in kinds(state, job)
    with pytest.raises(NotFound):
        await api.approval_resolve(ApprovalDecision("appr_0000000000000000", "deny"), cli_caller())


# -- test_submit (SRV-17) ----------------------------------------------------------------------------


@pytest.mark.req("SRV-17")
async def test_a_test_job_asks_exact_approval_of_its_command_calls_no_model_and_reports_the_outcome(
    api: LocalEngine, state: EngineState, project_dir: Path, request_log: Path
) -> None:
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    mine = owner_caller(project_dir, owner)
    command = [PY, "-c", "pass"]
    with pytest.raises(PolicyError, match="write access"):
        await api.test_submit(TestRequest(command), owner_caller(project_dir, owner, Access()))
    with pytest.raises(ToolError, match="non-empty array"):
        await api.test_submit(TestRequest([PY, ""]), mine)
    with pytest.raises(ToolError, match="no test command detected"):
        await api.test_submit(TestRequest(), mine)
    passing = await api.test_submit(TestRequest(command), mine)
    assert passing.status is TaskStatus.QUEUED and passing.command == command
    approval = await wait_approval(state.approvals, passing.job_id)
    assert approval.kind == "test" and approval.action["argv"] == command
    await api.approval_resolve(ApprovalDecision(approval.id, "approve"), mine)
    done = await wait_status(state.records, passing.job_id)
    assert done.status == "done" and done.answer == "tests passed" and done.mode == "test"

    denied = await api.test_submit(TestRequest(command), mine)
    approval = await wait_approval(state.approvals, denied.job_id)
    await api.approval_resolve(ApprovalDecision(approval.id, "deny"), mine)
    failed = await wait_status(state.records, denied.job_id)
    assert failed.status == "failed" and "did not approve this command (denied)" in (failed.error or "")
    assert logged(request_log) == [] and owner.jobs == 2


# -- rollback (SRV-18, ENG-06) -------------------------------------------------------------------------


@pytest.fixture
def edit_script() -> list[dict[str, Any]]:
    a = {"name": "write_file", "arguments": {"path": "a.txt", "content": "task\n"}}
    new = {"name": "write_file", "arguments": {"path": "new.txt", "content": "created\n"}}
    return [{"match": "", "turns": [{"tool_calls": [a]}, {"tool_calls": [new]}, DONE_TURN]}]


async def edited(api: LocalEngine, state: EngineState, project_dir: Path) -> str:
    """Run the edit script as a workspace task; returns its id."""
    job = await api.task_submit(TaskRequest("edit", level=WORKSPACE), cli_caller(project_dir))
    assert (await wait_status(state.records, job.job_id)).status == "done"
    return job.job_id


@pytest.mark.req("SRV-18")
async def test_rollback_needs_confirm_write_access_and_a_task_of_this_project(
    api: LocalEngine, state: EngineState, project_dir: Path, tmp_path: Path, model: Model,
    edit_script: list[dict[str, Any]],
) -> None:  # fmt: skip
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    model(edit_script)
    await trust(api, project_dir, WORKSPACE)
    await trust(api, other, WORKSPACE)
    job = await edited(api, state, project_dir)
    with pytest.raises(ToolError, match="confirm"):
        await api.rollback(Rollback(job, confirm=False), cli_caller(project_dir))
    with pytest.raises(PolicyError, match="--allow-write"):
        await api.rollback(Rollback(job, confirm=True), Caller(project=project_dir))
    with pytest.raises(NotFound):
        await api.rollback(Rollback(job, confirm=True), cli_caller(other))
    with pytest.raises(NotFound):
        await api.rollback(Rollback("task_0000000000000000", confirm=True), cli_caller(project_dir))
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "task\n"
    assert (project_dir / "new.txt").exists()


@pytest.mark.req("ENG-06", "SRV-18")
async def test_rollback_after_a_conflicting_edit_is_refused_lists_the_path_and_changes_nothing(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, edit_script: list[dict[str, Any]]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    model(edit_script)
    await trust(api, project_dir, WORKSPACE)
    job = await edited(api, state, project_dir)
    (project_dir / "a.txt").write_text("someone else\n", encoding="utf-8")
    with pytest.raises(ConflictError, match="a.txt") as caught:
        await api.rollback(Rollback(job, confirm=True), cli_caller(project_dir))
    assert caught.value.fields["paths"] == ["a.txt"]
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "someone else\n"
    assert (project_dir / "new.txt").read_text(encoding="utf-8") == "created\n"
    assert [e.kind for e in await api.why(WhyQuery(), cli_caller(project_dir))] == ["write", "write"]


@pytest.mark.req("ENG-06", "SRV-18")
async def test_a_good_rollback_restores_and_removes_files_and_the_history_shows_it(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, edit_script: list[dict[str, Any]]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    model(edit_script)
    await trust(api, project_dir, WORKSPACE)
    job = await edited(api, state, project_dir)
    result = await api.rollback(Rollback(job, confirm=True), cli_caller(project_dir))
    assert result == RollbackResult(job, ["a.txt"], ["new.txt"])
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "before\n"
    assert not (project_dir / "new.txt").exists()
    history = await api.why(WhyQuery(path="a.txt"), cli_caller(project_dir))
    assert [h.kind for h in history] == ["rollback", "write"]
    assert {h.task_id for h in history} == {job}


# -- job_state: one read of what a job is doing (SRV-16, SRV-26) --------------------------------


@pytest.mark.req("SRV-16", "SRV-26")
async def test_job_state_names_the_pending_approval_then_the_outcome_for_its_owner_only(
    api: LocalEngine, state: EngineState, project_dir: Path
) -> None:
    await trust(api, project_dir, WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    other = await api.open_owner("stdio", Caller(project=project_dir))
    mine = owner_caller(project_dir, owner, Access(allow_write=True))
    job = (await api.test_submit(TestRequest([PY, "-c", "pass"]), mine)).job_id
    approval = await wait_approval(state.approvals, job)
    await wait_status(state.records, job, (TaskStatus.WAITING,))
    waiting = await api.job_state(JobRef(job), mine)
    assert waiting.status is TaskStatus.WAITING and [a.id for a in waiting.pending_approvals] == [approval.id]
    assert waiting.step.startswith(f"waiting for approval {approval.id} (test: ")
    assert f"`shadowcode approve {approval.id}` resolves it" in waiting.step
    for stranger in (owner_caller(project_dir, other), owner_caller(project_dir, None)):
        with pytest.raises(NotFound):
            await api.job_state(JobRef(job), stranger)
    state.approvals.resolve(approval.id, "approve", by="cli")
    await wait_status(state.records, job)
    done = await api.job_state(JobRef(job), mine)
    assert done.status is TaskStatus.DONE and done.answer == "tests passed" and done.step == "finished"
    assert done.pending_approvals == [] and done.finished_at is not None
    assert done.created_at <= done.updated_at and done.updated_at >= waiting.updated_at
    assert (await api.job_state(JobRef(job), cli_caller())).id == job
