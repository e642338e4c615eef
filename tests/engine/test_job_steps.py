"""What a job is doing now, as one short inert line (engine/job_steps.py; SRV-16, SRV-26)."""

from __future__ import annotations

import pytest

from shadowcode.engine.job_steps import inert, job_step
from shadowcode.enums import ApprovalStatus, PermissionLevel, TaskMode, TaskStatus
from shadowcode.limits import JOB_STEP_MAX_CHARS
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.tasks import EventRecord, TaskRecord

pytestmark = pytest.mark.req("SRV-16", "SRV-26")


def task(status: TaskStatus, error: str | None = None) -> TaskRecord:
    return TaskRecord(
        id="task_1", project="/p", owner="own_1", mode=TaskMode.BUILD, status=status, prompt="p",
        permission_level=PermissionLevel.WORKSPACE, model="m", answer=None, error=error, engine_id="eng",
        created_at=1, updated_at=2, finished_at=None,
    )  # fmt: skip


def event(kind: str, **data: object) -> EventRecord:
    return EventRecord(id=1, kind=kind, data=dict(data), at=2)


def approval(argv: list[str]) -> ApprovalRecord:
    return ApprovalRecord(
        id="appr_1", task_id="task_1", owner="own_1", kind="command", action={"argv": argv, "cwd": "/p"},
        status=ApprovalStatus.PENDING, created_at=1, resolved_at=None, resolved_by=None, reason=None,
    )  # fmt: skip


def test_control_characters_written_by_a_model_or_project_are_made_inert() -> None:
    assert inert("a\x1b[31mred\x07\nnext\u202eevil\x85") == "a\\x1b[31mred\\x07\\x0anext\\u202eevil\\x85"
    assert inert("plain — text ✓") == "plain — text ✓"


def test_a_phrase_of_exactly_the_limit_is_kept_and_one_longer_is_cut() -> None:
    assert inert("x" * JOB_STEP_MAX_CHARS) == "x" * JOB_STEP_MAX_CHARS
    cut = inert("x" * (JOB_STEP_MAX_CHARS + 1))
    assert len(cut) == JOB_STEP_MAX_CHARS and cut.endswith("…")


def test_a_waiting_job_names_its_exact_command_and_the_terminal_command_that_resolves_it() -> None:
    step = job_step(task(TaskStatus.WAITING), event("approval.waiting"), [approval(["rm", "-rf", "a b\x1b"])])
    assert step.startswith("waiting for approval appr_1 (command: rm -rf 'a b\\x1b' in /p)")
    assert step.endswith("`shadowcode approve appr_1` resolves it")


def test_a_running_job_says_its_newest_event() -> None:
    assert job_step(task(TaskStatus.RUNNING), event("model.request", step=2), []) == "asking the model (turn 2)"
    assert job_step(task(TaskStatus.RUNNING), event("tool.call", name="read_file"), []) == "running tool read_file"
    assert job_step(task(TaskStatus.RUNNING), event("command.started", argv=["make", "x"]), []) == "running make x"
    assert job_step(task(TaskStatus.RUNNING), event("some.new_kind"), []) == "some new kind"
    assert job_step(task(TaskStatus.QUEUED), None, []) == "queued"
    failed = job_step(task(TaskStatus.FAILED, "no model"), event("task.failed", error="no model\n"), [])
    assert failed == "failed: no model\\x0a"
