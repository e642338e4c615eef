"""Exact approvals (ENG-07, SRV-11): a task parks until someone approves the exact action.

An approval is an :class:`~shadowcode.store.approvals.ApprovalRecord`; ``action`` is the exact
thing approved (for a command: ``{"argv": [...], "cwd": "/abs"}``). The SQLite row
(:attr:`Store.approvals <shadowcode.store.Store>`) is the source of truth: any process of the
profile may resolve it (the CLI, another frontend), and a waiting task sees the change within
APPROVAL_POLL_SECONDS even when it runs in another process; one resolved in this process wakes
its waiter at once.
"""

from __future__ import annotations

from typing import Any

import anyio

from shadowcode.enums import ApprovalStatus
from shadowcode.errors import NotFound, PolicyError
from shadowcode.limits import APPROVAL_POLL_SECONDS
from shadowcode.store import Store
from shadowcode.store.approvals import ApprovalRecord

__all__ = ["Approvals", "already_decided", "door_of"]

_DECISIONS = {"approve": ApprovalStatus.APPROVED, "deny": ApprovalStatus.DENIED}

_DOORS = {
    "cli": "the command line (shadowcode approve or deny)",
    "mcp": "the MCP client's shadow_approve",
    "host": "the host's answer (--approve-in-host)",
    "page": "the approval page (--approve-in-host)",
}


def door_of(resolved_by: str | None) -> str | None:
    """Which way an answer came, for a person: ``cli`` the command line, ``mcp:<owner>`` the client's
    shadow_approve, ``host:<owner>`` the host asked with --approve-in-host, ``page:<owner>`` the approval
    page; None when nobody answered (pending, or expired with its job) (ENG-07, SRV-29)."""
    if resolved_by is None:
        return None
    return _DOORS.get(resolved_by.split(":", 1)[0], resolved_by)


def already_decided(record: ApprovalRecord, consequence: str) -> str:
    """The sentence refusing a second answer to ``record``, naming how and by which door it was decided.

    Args:
        record: the approval as it is now (not pending).
        consequence: what the refused answer did not do (``"nothing was approved"``).
    """
    why = f" ({record.reason})" if record.reason else ""
    door = door_of(record.resolved_by)
    by = f" by {door}" if door else ""
    return f"approval {record.id} is already {record.status}{by}{why}; {consequence}"


class Approvals:
    """Creates, lists, resolves and waits for approvals."""

    def __init__(self, store: Store) -> None:
        self._rows = store.approvals
        self._wakeups: dict[str, anyio.Event] = {}

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> ApprovalRecord:
        """Record a pending approval of ``action``; returns it."""
        return self._rows.create(task_id, owner, kind, action)

    def get(self, approval_id: str) -> ApprovalRecord:
        """One approval.

        Raises:
            NotFound: no such approval.
        """
        found = self._rows.get(approval_id)
        if found is None:
            raise NotFound(f"no approval {approval_id!r}", approval_id=approval_id)
        return found

    def pending(self, *, task_id: str | None = None, owner: str | None = None) -> list[ApprovalRecord]:
        """Pending approvals, oldest first, optionally of one task or one owner."""
        return self._rows.pending(task_id=task_id, owner=owner)

    def resolve(self, approval_id: str, decision: str, *, by: str, owner: str | None = None) -> ApprovalRecord:
        """Approve or deny one pending approval; with ``owner``, only an approval of that owner's task.

        Args:
            approval_id: the exact id.
            decision: ``"approve"`` or ``"deny"``.
            by: who resolved it (``"cli"``, ``"mcp:<owner>"``), recorded.
            owner: when given, the approval must belong to this owner (SRV-11).

        Raises:
            NotFound: no such approval (or not this owner's: the id is not revealed).
            PolicyError: it is no longer pending.
        """
        current = self.get(approval_id)
        if owner is not None and current.owner != owner:
            raise NotFound(f"no approval {approval_id!r} of a job this connection created", approval_id=approval_id)
        if not self._rows.resolve(approval_id, _DECISIONS[decision], by=by):
            raise PolicyError(already_decided(self.get(approval_id), f"nothing was {_DECISIONS[decision].value}"))
        wake = self._wakeups.get(approval_id)
        if wake is not None:
            wake.set()
        return self.get(approval_id)

    def expire(self, task_id: str, reason: str = "its job no longer waits for it") -> None:
        """Expire a task's pending approvals (it was cancelled or finished), recording ``reason``."""
        self._rows.expire(task_id, reason)

    async def wait(self, approval_id: str) -> str:
        """Wait until the approval is resolved; returns ``"approved"``, ``"denied"`` or ``"expired"``.

        Cancellation of the waiting task propagates; the caller expires the approval.
        """
        wake = self._wakeups.setdefault(approval_id, anyio.Event())
        try:
            while True:
                status = self.get(approval_id).status
                if status is not ApprovalStatus.PENDING:
                    return status.value
                with anyio.move_on_after(APPROVAL_POLL_SECONDS):
                    await wake.wait()
        finally:
            self._wakeups.pop(approval_id, None)
