"""Exact approvals (ENG-07, SRV-11): a task parks until someone approves the exact action.

An approval is ``{"id", "task_id", "owner", "kind", "action", "status", "created_at",
"resolved_at", "resolved_by"}``; ``action`` is the exact thing approved (for a command:
``{"argv": [...], "cwd": "/abs"}``). The SQLite row is the source of truth: any process of
the profile may resolve it (the CLI, another frontend), and a waiting task sees the change
within APPROVAL_POLL_SECONDS even when it runs in another process.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import anyio

from shadowcode.errors import NotFound, PolicyError
from shadowcode.limits import APPROVAL_POLL_SECONDS
from shadowcode.store import Store

__all__ = ["Approvals"]


class Approvals:
    """Creates, lists, resolves and waits for approvals."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._wakeups: dict[str, anyio.Event] = {}

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> dict[str, Any]:
        """Record a pending approval of ``action``; returns it."""
        approval_id = "appr_" + secrets.token_hex(6)
        self._store.execute(
            "INSERT INTO approvals (id, task_id, owner, kind, action, status, created_at) "
            "VALUES (?, ?, ?, ?, ?, 'pending', ?)",
            (approval_id, task_id, owner, kind, json.dumps(action, ensure_ascii=False), int(time.time())),
        )
        return self.get(approval_id)

    def get(self, approval_id: str) -> dict[str, Any]:
        """One approval.

        Raises:
            NotFound: no such approval.
        """
        row = self._store.row("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        if row is None:
            raise NotFound(f"no approval {approval_id!r}", approval_id=approval_id)
        row["action"] = json.loads(row["action"])
        return row

    def pending(self, *, task_id: str | None = None, owner: str | None = None) -> list[dict[str, Any]]:
        """Pending approvals, oldest first, optionally of one task or one owner."""
        sql = "SELECT * FROM approvals WHERE status = 'pending'"
        params: list[Any] = []
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        rows = self._store.rows(sql + " ORDER BY created_at, rowid", params)
        for row in rows:
            row["action"] = json.loads(row["action"])
        return rows

    def resolve(self, approval_id: str, decision: str, *, by: str, owner: str | None = None) -> dict[str, Any]:
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
        if owner is not None and current["owner"] != owner:
            raise NotFound(f"no approval {approval_id!r} of a job this connection created", approval_id=approval_id)
        status = {"approve": "approved", "deny": "denied"}[decision]
        changed = self._store.execute(
            "UPDATE approvals SET status = ?, resolved_at = ?, resolved_by = ? WHERE id = ? AND status = 'pending'",
            (status, int(time.time()), by, approval_id),
        )
        if not changed:
            raise PolicyError(f"approval {approval_id} is already {self.get(approval_id)['status']}")
        wake = self._wakeups.get(approval_id)
        if wake is not None:
            wake.set()
        return self.get(approval_id)

    def expire(self, task_id: str) -> None:
        """Expire a task's pending approvals (it was cancelled or finished)."""
        self._store.execute(
            "UPDATE approvals SET status = 'expired', resolved_at = ? WHERE task_id = ? AND status = 'pending'",
            (int(time.time()), task_id),
        )

    async def wait(self, approval_id: str) -> str:
        """Wait until the approval is resolved; returns ``"approved"``, ``"denied"`` or ``"expired"``.

        Cancellation of the waiting task propagates; the caller expires the approval.
        """
        wake = self._wakeups.setdefault(approval_id, anyio.Event())
        try:
            while True:
                status = str(self.get(approval_id)["status"])
                if status != "pending":
                    return status
                with anyio.move_on_after(APPROVAL_POLL_SECONDS):
                    await wake.wait()
        finally:
            self._wakeups.pop(approval_id, None)
