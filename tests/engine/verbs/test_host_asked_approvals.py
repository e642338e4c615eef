"""Approvals asked in the host (engine/verbs/jobs.py: approval_ask, approval_answer), through the engine API.

Each refusal changes nothing and leaves the approval pending; the first answer wins whichever
door it came through, and the other is told which door decided.

Covers SRV-29, ENG-07.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import (
    Access,
    ApprovalAnswer,
    ApprovalAsk,
    ApprovalDecision,
    Caller,
    OwnerHandle,
    TaskRequest,
)
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.enums import ApprovalStatus, PermissionLevel
from shadowcode.errors import NotFound, PolicyError
from shadowcode.limits import APPROVAL_STATE_TTL_SECONDS
from shadowcode.profile import Profile
from tests.support.engine import wait_approval, wait_for, wait_status
from tests.support.jobs import DONE_TURN, PARK_TURN, cli_caller, kinds, owner_caller, trust

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("SRV-29"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

Model = Callable[[list[dict[str, Any]]], None]
HOST = Access(allow_write=True, approve_in_host=True)
"""``mcp serve --allow-write --approve-in-host``: no --allow-approvals."""


def host_caller(project: Path, owner: OwnerHandle | None) -> Caller:
    return owner_caller(project, owner, HOST)


async def parked(api: LocalEngine, state: EngineState, project: Path, model: Model) -> tuple[OwnerHandle, str, str]:
    """An owner whose job waits on the approval of ``true``: ``(owner, job id, approval id)``."""
    model([{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    await trust(api, project, PermissionLevel.WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project))
    submitted = await api.task_submit(TaskRequest("go", level=PermissionLevel.WORKSPACE), host_caller(project, owner))
    job = submitted.job_id
    return owner, job, (await wait_approval(state.approvals, job)).id


def pending(state: EngineState, approval_id: str) -> bool:
    return state.approvals.get(approval_id).status is ApprovalStatus.PENDING


async def test_asking_names_the_exact_action_the_job_and_its_changes_and_the_answer_runs_the_command(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, job, approval = await parked(api, state, project_dir, model)
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    assert (asked.approval_id, asked.task_id, asked.kind, asked.prompt) == (approval, job, "command", "go")
    assert asked.action == {"argv": ["true"], "cwd": str(project_dir.resolve())}
    assert asked.project == str(project_dir.resolve()) and asked.changed_files == []
    assert asked.expires_at >= state.approval_states.now() + APPROVAL_STATE_TTL_SECONDS - 1
    answered = await api.approval_answer(ApprovalAnswer(asked.state, "approve", job), host_caller(project_dir, owner))
    assert answered.status is ApprovalStatus.APPROVED and answered.resolved_by == f"host:{owner.id}"
    assert (await wait_status(state.records, job)).status == "done"
    assert "command.result" in kinds(state, job)


async def test_deny_through_the_host_denies_and_the_job_says_the_user_did_not_approve(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, job, approval = await parked(api, state, project_dir, model)
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    denied = await api.approval_answer(ApprovalAnswer(asked.state, "deny", via="page"), host_caller(project_dir, owner))
    assert denied.status is ApprovalStatus.DENIED and denied.resolved_by == f"page:{owner.id}"
    await wait_status(state.records, job)
    assert "command.started" not in kinds(state, job)
    assert any(e.kind == "approval.resolved" and e.data["status"] == "denied" for e in state.records.events(job))


async def test_without_approve_in_host_nothing_is_asked_or_answered(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    plain = owner_caller(project_dir, owner)  # --allow-write --allow-approvals, no --approve-in-host
    with pytest.raises(PolicyError, match="needs a server started with --approve-in-host"):
        await api.approval_ask(ApprovalAsk(approval), plain)
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    with pytest.raises(PolicyError, match="needs a server started with --approve-in-host"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve"), plain)
    with pytest.raises(PolicyError, match="for an MCP connection's own jobs"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve"), Caller(project=project_dir, access=HOST))
    assert pending(state, approval)


async def test_another_owner_can_neither_ask_nor_answer_with_a_state_it_was_not_given(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    other = await api.open_owner("stdio", Caller(project=project_dir))
    with pytest.raises(NotFound):
        await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, other))
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    with pytest.raises(PolicyError, match="issued to another connection"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve"), host_caller(project_dir, other))
    assert pending(state, approval)


async def test_a_tampered_state_is_refused_and_the_approval_stays_pending(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    tampered = asked.state[:-2] + ("AA" if not asked.state.endswith("AA") else "BB")
    with pytest.raises(PolicyError, match="not one this engine issued"):
        await api.approval_answer(ApprovalAnswer(tampered, "approve"), host_caller(project_dir, owner))
    assert pending(state, approval)
    # the untouched state still answers: the refusal used nothing up
    approved = await api.approval_answer(ApprovalAnswer(asked.state, "approve"), host_caller(project_dir, owner))
    assert approved.status is ApprovalStatus.APPROVED


async def test_an_expired_state_is_refused_at_one_second_past_and_accepted_at_its_expiry(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    asked = await api.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    states = state.approval_states
    monkeypatch.setattr(states, "_clock", lambda: asked.expires_at + 1)
    with pytest.raises(PolicyError, match="expired 1 s ago"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve"), host_caller(project_dir, owner))
    assert pending(state, approval)
    monkeypatch.setattr(states, "_clock", lambda: asked.expires_at)
    await api.approval_answer(ApprovalAnswer(asked.state, "deny"), host_caller(project_dir, owner))
    assert state.approvals.get(approval).status is ApprovalStatus.DENIED


async def test_a_replayed_state_is_refused_and_the_next_approval_stays_pending(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    model([{"match": "", "turns": [PARK_TURN, PARK_TURN, DONE_TURN]}])
    await trust(api, project_dir, PermissionLevel.WORKSPACE)
    owner = await api.open_owner("stdio", Caller(project=project_dir))
    mine = host_caller(project_dir, owner)
    job = (await api.task_submit(TaskRequest("go", level=PermissionLevel.WORKSPACE), mine)).job_id
    first = await wait_approval(state.approvals, job)
    asked = await api.approval_ask(ApprovalAsk(first.id), mine)
    await api.approval_answer(ApprovalAnswer(asked.state, "approve", job), mine)

    def second_pending() -> Any:
        found = state.approvals.pending(task_id=job)
        return found[0] if found and found[0].id != first.id else None

    second = await wait_for(second_pending, what="the second approval")
    with pytest.raises(PolicyError, match="already used; a state answers once"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve", job), mine)
    assert pending(state, second.id)


async def test_a_state_for_another_job_or_a_changed_action_is_refused(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, job, approval = await parked(api, state, project_dir, model)
    mine = host_caller(project_dir, owner)
    asked = await api.approval_ask(ApprovalAsk(approval), mine)
    with pytest.raises(PolicyError, match="belongs to another job"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve", "task_0000000000000000"), mine)
    state.store.execute(  # the stored action changes under the state (a second approval row cannot share the id)
        "UPDATE approvals SET action = ? WHERE id = ?", ('{"argv": ["rm", "-rf", "."], "cwd": "/"}', approval)
    )
    with pytest.raises(PolicyError, match="not for the action this state was issued for"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve", job), mine)
    assert pending(state, approval)


async def test_check_only_verifies_and_decides_nothing(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, job, approval = await parked(api, state, project_dir, model)
    mine = host_caller(project_dir, owner)
    asked = await api.approval_ask(ApprovalAsk(approval), mine)
    checked = await api.approval_answer(ApprovalAnswer(asked.state, "approve", job, check_only=True), mine)
    assert checked.status is ApprovalStatus.PENDING and pending(state, approval)
    assert (await api.approval_answer(ApprovalAnswer(asked.state, "approve", job), mine)).status == "approved"


async def test_the_command_line_first_wins_and_the_host_is_told_the_command_line_decided(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    mine = host_caller(project_dir, owner)
    asked = await api.approval_ask(ApprovalAsk(approval), mine)
    await api.approval_resolve(ApprovalDecision(approval, "deny"), cli_caller())
    with pytest.raises(PolicyError, match=r"already denied by the command line .*; nothing was approved"):
        await api.approval_answer(ApprovalAnswer(asked.state, "approve"), mine)
    with pytest.raises(PolicyError, match="already denied by the command line"):
        await api.approval_ask(ApprovalAsk(approval), mine)
    assert state.approvals.get(approval).resolved_by == "cli"


async def test_the_host_first_wins_and_the_command_line_is_told_the_host_decided(
    api: LocalEngine, state: EngineState, project_dir: Path, model: Model
) -> None:
    owner, _, approval = await parked(api, state, project_dir, model)
    mine = host_caller(project_dir, owner)
    asked = await api.approval_ask(ApprovalAsk(approval), mine)
    await api.approval_answer(ApprovalAnswer(asked.state, "approve"), mine)
    with pytest.raises(PolicyError, match=r"already approved by the host's answer \(--approve-in-host\); nothing"):
        await api.approval_resolve(ApprovalDecision(approval, "deny"), cli_caller())
    assert state.approvals.get(approval).status is ApprovalStatus.APPROVED


async def test_a_state_from_before_an_engine_restart_is_refused(
    profile: Profile, project_dir: Path, model: Model
) -> None:
    first = LocalEngine(profile)
    try:
        async with first.running():
            owner, _, approval = await parked(first, first.state, project_dir, model)
            asked = await first.approval_ask(ApprovalAsk(approval), host_caller(project_dir, owner))
    finally:
        first.state.store.close()
    second = LocalEngine(profile)
    try:
        async with second.running():
            assert second.state.approvals.get(approval).status is ApprovalStatus.EXPIRED  # with its engine
            again = await second.open_owner("stdio", Caller(project=project_dir))
            again_caller = host_caller(project_dir, again)
            with pytest.raises(PolicyError, match="issued before the engine restarted"):
                await second.approval_answer(ApprovalAnswer(asked.state, "approve"), again_caller)
    finally:
        second.state.store.close()
