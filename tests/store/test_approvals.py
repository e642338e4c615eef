"""The approvals repository: exact actions stored as JSON, and only pending rows change (store/approvals.py)."""

from __future__ import annotations

import pytest

from shadowcode.enums import ApprovalStatus, TaskStatus
from shadowcode.errors import StoreError
from shadowcode.store import Store
from shadowcode.store.approvals import ApprovalRecord

from .conftest import NewTask

pytestmark = pytest.mark.req("ENG-03", "ENG-07")

ACTION = {"argv": ["python3", "-c", "print('é')"], "cwd": "/projects/alpha/sub", "extra": None}


def test_a_requested_approval_round_trips_its_exact_action(store: Store, new_task: NewTask) -> None:
    task = new_task()
    made = store.approvals.create(task.id, "own_a", "command", ACTION)
    assert made.id.startswith("appr_") and made.status is ApprovalStatus.PENDING
    assert made.action == ACTION and made.kind == "command" and made.task_id == task.id and made.owner == "own_a"
    assert (made.resolved_at, made.resolved_by) == (None, None)
    assert store.approvals.get(made.id) == made


def test_as_dict_is_the_column_order_with_the_decoded_action(store: Store, new_task: NewTask) -> None:
    made = store.approvals.create(new_task().id, None, "test", ACTION)
    doc = made.as_dict()
    assert list(doc) == [
        "id",
        "task_id",
        "owner",
        "kind",
        "action",
        "status",
        "created_at",
        "resolved_at",
        "resolved_by",
        "reason",
    ]
    assert doc["action"] == ACTION and doc["status"] == "pending" and type(doc["status"]) is str


def test_an_unknown_approval_is_none(store: Store) -> None:
    assert store.approvals.get("appr_missing") is None
    assert store.approvals.resolve("appr_missing", ApprovalStatus.APPROVED, by="cli") is False


@pytest.mark.req("SRV-11")
def test_pending_filters_by_task_and_owner_oldest_first(store: Store, new_task: NewTask) -> None:
    one, two = new_task(owner="own_a"), new_task(owner="own_b")
    a = store.approvals.create(one.id, "own_a", "command", ACTION)
    b = store.approvals.create(two.id, "own_b", "command", ACTION)
    assert [x.id for x in store.approvals.pending()] == [a.id, b.id]
    assert [x.id for x in store.approvals.pending(owner="own_b")] == [b.id]
    assert [x.id for x in store.approvals.pending(task_id=one.id)] == [a.id]
    assert store.approvals.pending(task_id=one.id, owner="own_b") == []


def test_resolving_changes_only_a_pending_row_and_records_who(store: Store, new_task: NewTask) -> None:
    made = store.approvals.create(new_task().id, None, "command", ACTION)
    assert store.approvals.resolve(made.id, ApprovalStatus.DENIED, by="mcp:own_a") is True
    assert store.approvals.resolve(made.id, ApprovalStatus.APPROVED, by="cli") is False
    denied = store.approvals.get(made.id)
    assert isinstance(denied, ApprovalRecord)
    assert denied.status is ApprovalStatus.DENIED and denied.resolved_by == "mcp:own_a" and denied.resolved_at
    assert store.approvals.pending() == []


def test_expiring_touches_only_the_tasks_pending_approvals(store: Store, new_task: NewTask) -> None:
    one, two = new_task(), new_task()
    a = store.approvals.create(one.id, None, "command", ACTION)
    done = store.approvals.create(one.id, None, "command", ACTION)
    store.approvals.resolve(done.id, ApprovalStatus.APPROVED, by="cli")
    b = store.approvals.create(two.id, None, "command", ACTION)
    assert store.approvals.expire(one.id, "its job was cancelled") == 1
    expired = store.approvals.get(a.id)
    assert (
        expired is not None and expired.status is ApprovalStatus.EXPIRED and expired.reason == "its job was cancelled"
    )
    assert store.approvals.get(done.id).status is ApprovalStatus.APPROVED  # type: ignore[union-attr]
    assert store.approvals.get(done.id).reason is None  # type: ignore[union-attr]
    assert store.approvals.get(b.id).status is ApprovalStatus.PENDING  # type: ignore[union-attr]


def test_pending_approvals_of_finished_tasks_expire_and_those_of_active_tasks_stay(
    store: Store, new_task: NewTask
) -> None:
    active, finished = new_task(), new_task()
    store.tasks.set_status(finished.id, TaskStatus.INTERRUPTED, error="gone")
    alive = store.approvals.create(active.id, None, "command", ACTION)
    left = store.approvals.create(finished.id, None, "command", ACTION)
    assert store.approvals.expire_of_finished_tasks("the engine running its job stopped") == 1
    assert [a.id for a in store.approvals.pending()] == [alive.id]
    assert store.approvals.get(left.id).reason == "the engine running its job stopped"  # type: ignore[union-attr]


def test_a_stored_action_that_is_not_json_is_a_store_error(store: Store, new_task: NewTask) -> None:
    made = store.approvals.create(new_task().id, None, "command", ACTION)
    store.execute("UPDATE approvals SET action = 'not json' WHERE id = ?", (made.id,))
    with pytest.raises(StoreError, match="approval action"):
        store.approvals.get(made.id)
