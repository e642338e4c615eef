"""Exact approvals: table ``approvals`` (ENG-03, ENG-07, SRV-11).

An approval is an :class:`ApprovalRecord`; its ``action`` JSON object (the exact thing
approved, e.g. ``{"argv": [...], "cwd": "/abs"}``) is decoded here. The row is the source of
truth: any process of the profile may resolve it, and only a ``pending`` row changes.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from shadowcode.enums import ApprovalStatus, TaskStatus
from shadowcode.store.database import Database
from shadowcode.store.records import Record, decode_json, encode_json, vocabulary

__all__ = ["ApprovalRecord", "ApprovalRepository"]

_ACTIVE = tuple(s.value for s in TaskStatus if s.active)

_COLUMNS = "id, task_id, owner, kind, action, status, created_at, resolved_at, resolved_by, reason"


@dataclass(frozen=True, slots=True)
class ApprovalRecord(Record):
    """One approval row.

    Attributes:
        id: ``appr_<hex>``.
        owner: the task's owner, None for a detached CLI job.
        kind: ``command``, ``test``, ``background``, ``mcp_call``, ``mcp_read_resource`` or ``mcp_get_prompt``.
        action: the exact action (decoded JSON object).
        resolved_by: who resolved it (``cli``, ``mcp:<owner>``), None while pending or when expired.
        reason: why it expired (e.g. ``the engine running its job stopped``), None otherwise.
    """

    id: str
    task_id: str
    owner: str | None
    kind: str
    action: dict[str, Any]
    status: ApprovalStatus
    created_at: int
    resolved_at: int | None
    resolved_by: str | None
    reason: str | None


def _record(row: dict[str, Any]) -> ApprovalRecord:
    typed: dict[str, Any] = {
        "action": decode_json(row["action"], "approval action"),
        "status": vocabulary(ApprovalStatus, row["status"], "approval status"),
    }
    return ApprovalRecord(**(row | typed))


class ApprovalRepository:
    """Rows of ``approvals``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> ApprovalRecord:
        """Insert a pending approval of ``action`` with a new id; returns it."""
        approval_id = "appr_" + secrets.token_hex(6)
        self._db.execute(
            "INSERT INTO approvals (id, task_id, owner, kind, action, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (approval_id, task_id, owner, kind, encode_json(action), ApprovalStatus.PENDING.value, int(time.time())),
        )
        found = self.get(approval_id)
        assert found is not None
        return found

    def get(self, approval_id: str) -> ApprovalRecord | None:
        """One approval, or None."""
        row = self._db.row(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,))
        return None if row is None else _record(row)

    def pending(self, *, task_id: str | None = None, owner: str | None = None) -> list[ApprovalRecord]:
        """Pending approvals, oldest first, optionally of one task or one owner."""
        sql = f"SELECT {_COLUMNS} FROM approvals WHERE status = ?"
        params: list[Any] = [ApprovalStatus.PENDING.value]
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        return [_record(r) for r in self._db.rows(sql + " ORDER BY created_at, rowid", params)]

    def resolve(self, approval_id: str, status: ApprovalStatus, *, by: str) -> bool:
        """Move a pending approval to ``status``, recording when and by whom.

        Returns:
            False when it was not pending (or does not exist): nothing changed.
        """
        return bool(
            self._db.execute(
                "UPDATE approvals SET status = ?, resolved_at = ?, resolved_by = ? WHERE id = ? AND status = ?",
                (ApprovalStatus(status).value, int(time.time()), by, approval_id, ApprovalStatus.PENDING.value),
            )
        )

    def expire(self, task_id: str, reason: str) -> int:
        """Expire the task's pending approvals, recording ``reason``; returns how many."""
        return self._db.execute(
            "UPDATE approvals SET status = ?, resolved_at = ?, reason = ? WHERE task_id = ? AND status = ?",
            (ApprovalStatus.EXPIRED.value, int(time.time()), reason, task_id, ApprovalStatus.PENDING.value),
        )

    def expire_of_finished_tasks(self, reason: str) -> int:
        """Expire pending approvals whose task is no longer active (left by an older engine); returns how many."""
        return self._db.execute(
            "UPDATE approvals SET status = ?, resolved_at = ?, reason = ? WHERE status = ? AND task_id IN "
            f"(SELECT id FROM tasks WHERE status NOT IN ({', '.join('?' * len(_ACTIVE))}))",
            (ApprovalStatus.EXPIRED.value, int(time.time()), reason, ApprovalStatus.PENDING.value, *_ACTIVE),
        )
