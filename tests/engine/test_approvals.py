"""Exact approvals: what they name, who may resolve them, and how a waiting task learns the outcome.

Covers ENG-07 and SRV-11 (the owner rules the engine enforces).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from shadowcode.engine.approvals import Approvals
from shadowcode.engine.state import EngineState
from shadowcode.engine.tasks import TaskRecords
from shadowcode.errors import NotFound, PolicyError
from shadowcode.store import Store

pytestmark = pytest.mark.anyio

ARGV = ["python3", "-m", "pytest", "-k", "name with spaces"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def new_task(state: EngineState, project: Path, owner: str | None) -> str:
    records = TaskRecords(state.store)
    root = state.project_at(project).path
    task = records.create(
        project=root, owner=owner, mode="build", prompt="p", permission_level="workspace", model=None, engine_id="eng_t"
    )
    return task.id


@pytest.fixture
def approvals(state: EngineState) -> Approvals:
    return Approvals(state.store)


@pytest.mark.req("ENG-07")
def test_an_approval_names_the_exact_argv_and_cwd(state: EngineState, approvals: Approvals, project_dir: Path) -> None:
    task = new_task(state, project_dir, "own_a")
    cwd = str(project_dir / "sub")
    made = approvals.request(task, "own_a", "command", {"argv": ARGV, "cwd": cwd})
    again = approvals.get(made.id)
    assert again.action == {"argv": ARGV, "cwd": cwd}
    assert again.status == "pending" and again.task_id == task and again.owner == "own_a"
    assert [a.id for a in approvals.pending()] == [made.id]
    assert approvals.pending(owner="own_b") == []
    assert [a.id for a in approvals.pending(task_id=task)] == [made.id]


@pytest.mark.req("SRV-11")
def test_another_owners_approval_is_not_found_and_stays_pending(
    state: EngineState, approvals: Approvals, project_dir: Path
) -> None:
    made = approvals.request(new_task(state, project_dir, "own_a"), "own_a", "command", {"argv": ARGV, "cwd": "/"})
    with pytest.raises(NotFound, match="this connection created"):
        approvals.resolve(made.id, "approve", by="mcp:own_b", owner="own_b")
    assert approvals.get(made.id).status == "pending"


@pytest.mark.req("SRV-11")
def test_an_approval_of_a_detached_task_is_no_owners(
    state: EngineState, approvals: Approvals, project_dir: Path
) -> None:
    made = approvals.request(new_task(state, project_dir, None), None, "command", {"argv": ARGV, "cwd": "/"})
    with pytest.raises(NotFound):
        approvals.resolve(made.id, "approve", by="mcp:own_b", owner="own_b")
    assert approvals.resolve(made.id, "approve", by="cli").status == "approved"


@pytest.mark.req("SRV-11", "ENG-07")
def test_an_unknown_approval_id_is_not_found(approvals: Approvals) -> None:
    with pytest.raises(NotFound, match="appr_missing"):
        approvals.resolve("appr_missing", "approve", by="cli")
    with pytest.raises(NotFound):
        approvals.resolve("appr_missing", "deny", by="mcp:own_a", owner="own_a")


@pytest.mark.req("SRV-11", "ENG-07")
def test_an_owner_resolves_its_own_approval_once_and_the_record_says_who(
    state: EngineState, approvals: Approvals, project_dir: Path
) -> None:
    made = approvals.request(new_task(state, project_dir, "own_a"), "own_a", "command", {"argv": ARGV, "cwd": "/"})
    denied = approvals.resolve(made.id, "deny", by="mcp:own_a", owner="own_a")
    assert denied.status == "denied" and denied.resolved_by == "mcp:own_a" and denied.resolved_at
    with pytest.raises(PolicyError, match="already denied"):
        approvals.resolve(made.id, "approve", by="cli")
    assert approvals.get(made.id).status == "denied"


@pytest.mark.req("ENG-07")
def test_expiring_a_tasks_approvals_leaves_other_tasks_alone(
    state: EngineState, approvals: Approvals, project_dir: Path
) -> None:
    first = approvals.request(new_task(state, project_dir, None), None, "command", {"argv": ARGV, "cwd": "/"})
    second = approvals.request(new_task(state, project_dir, None), None, "command", {"argv": ARGV, "cwd": "/"})
    approvals.expire(first.task_id, "its job was cancelled")
    assert approvals.get(first.id).status == "expired"
    assert approvals.get(second.id).status == "pending"
    with pytest.raises(PolicyError, match=r"already expired \(its job was cancelled\); nothing was approved"):
        approvals.resolve(first.id, "approve", by="cli")


@pytest.mark.req("ENG-07")
@pytest.mark.parametrize(("decision", "status"), [("approve", "approved"), ("deny", "denied")])
async def test_a_waiting_task_sees_a_decision_made_through_another_connection_to_the_store(
    state: EngineState, approvals: Approvals, project_dir: Path, decision: str, status: str
) -> None:
    made = approvals.request(new_task(state, project_dir, None), None, "command", {"argv": ARGV, "cwd": "/"})
    elsewhere = Store(state.profile.db_path)  # as the CLI in another process would
    try:
        outcome: list[str] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    outcome.append(await approvals.wait(made.id))

                tg.start_soon(wait)
                await anyio.lowlevel.checkpoint()
                assert outcome == []
                Approvals(elsewhere).resolve(made.id, decision, by="cli")
    finally:
        elsewhere.close()
    assert outcome == [status]


@pytest.mark.req("ENG-07")
async def test_a_decision_in_the_same_process_wakes_the_waiting_task(
    state: EngineState, approvals: Approvals, project_dir: Path
) -> None:
    made = approvals.request(new_task(state, project_dir, None), None, "command", {"argv": ARGV, "cwd": "/"})
    outcome: list[str] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                outcome.append(await approvals.wait(made.id))

            tg.start_soon(wait)
            for _ in range(5):
                await anyio.lowlevel.checkpoint()
            approvals.resolve(made.id, "approve", by="cli")
    assert outcome == ["approved"]
