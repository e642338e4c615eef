"""Input models of the seventeen native tools (SRV-04); their JSON Schemas are advertised as is.

Every model forbids unknown fields, so a misspelled argument is refused rather than ignored.
A tool with several actions takes one input for all of them (the published schema), and its
model turns a valid input into the engine API request of its action (:meth:`request`): an
argument the action needs and the input lacks is a validation error here, at the edge, never
an optional field of an engine request.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from shadowcode.engine import api as m
from shadowcode.limits import SESSIONS_LIST_MAX

__all__ = [
    "ApproveInput",
    "CheckpointInput",
    "DoctorInput",
    "EmptyInput",
    "GoalInput",
    "JobsInput",
    "MemoryInput",
    "RollbackInput",
    "RunInput",
    "SessionsInput",
    "SqliteInput",
    "TestInput",
    "UnderstandInput",
    "WhyInput",
]

MemoryRequest = m.MemoryRef | m.MemoryAppend | m.MemoryReplace
"""What ``shadow_memory`` asks of the engine: read, append or replace."""
SqliteRequest = m.SqliteTablesRequest | m.SqliteQuery
"""What ``shadow_sqlite`` asks: the tables, or one query."""
GoalRequest = m.Empty | m.GoalRef | m.GoalCreate | m.GoalAdvance | m.GoalAbandon
"""What ``shadow_goal`` asks: list (:class:`~shadowcode.engine.api.Empty`), get, create, advance, abandon."""
JobsRequest = m.Empty | m.JobQuery | m.JobRef
"""What ``shadow_jobs`` asks: list (:class:`~shadowcode.engine.api.Empty`), get, or cancel (:class:`JobRef`)."""


def _needs(value: str | None, action: str, name: str, why: str = "") -> str:
    if not value:
        raise ValueError(f"action {action!r} needs {name}{why}")
    return value


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmptyInput(_Input):
    """No arguments."""


class SessionsInput(_Input):
    limit: int = Field(20, ge=1, le=SESSIONS_LIST_MAX, description="Most sessions to return, newest first.")


class UnderstandInput(_Input):
    save: bool = Field(False, description="Save the map as the project's map (needs write access).")


class DoctorInput(_Input):
    probe_model: bool = Field(False, description="Also send one small request to the default model.")


class WhyInput(_Input):
    path: str | None = Field(None, description="A project-relative path whose history to show.")
    task_id: str | None = Field(None, description="Only changes made by this task.")


class MemoryInput(_Input):
    action: Literal["read", "append", "replace"] = Field(description="read, append or replace the note.")
    scope: Literal["project", "task"] = Field("project", description="The project note or one task's note.")
    task_id: str | None = Field(None, description="Exact task id of this project (scope 'task').")
    text: str | None = Field(None, description="Text to append, or the whole new note for replace.")
    expected_hash: str | None = Field(None, description="Current note hash (replace only), from a read.")
    _request: MemoryRequest = PrivateAttr()

    @model_validator(mode="after")
    def _action(self) -> Self:
        if self.action == "read":
            self._request = m.MemoryRef(self.scope, self.task_id)
            return self
        if self.text is None:
            raise ValueError(f"action {self.action!r} needs text")
        if self.action == "append":
            self._request = m.MemoryAppend(self.text, self.scope, self.task_id)
        else:
            expected = _needs(self.expected_hash, "replace", "expected_hash", ": read the note first and pass its hash")
            self._request = m.MemoryReplace(self.text, expected, self.scope, self.task_id)
        return self

    def request(self) -> MemoryRequest:
        """The engine request of this input's action."""
        return self._request


class SqliteInput(_Input):
    action: Literal["tables", "query"] = Field(description="List tables, or run one read-only query.")
    path: str = Field(description="Database file, relative to the project.")
    sql: str | None = Field(None, description="One read-only SELECT statement (action 'query').")
    params: list[Any] | dict[str, Any] | None = Field(None, description="Bound parameters: a list or an object.")
    _request: SqliteRequest = PrivateAttr()

    @model_validator(mode="after")
    def _action(self) -> Self:
        if self.action == "tables":
            self._request = m.SqliteTablesRequest(self.path)
        else:
            self._request = m.SqliteQuery(self.path, _needs(self.sql, "query", "sql"), self.params)
        return self

    def request(self) -> SqliteRequest:
        """The engine request of this input's action."""
        return self._request


class GoalInput(_Input):
    action: Literal["create", "list", "get", "advance", "abandon"]
    goal_id: str | None = Field(None, description="The goal (get, advance, abandon).")
    title: str | None = Field(None, description="Title of a new goal (create).")
    note: str | None = Field(None, description="Progress note (advance) or reason (abandon).")
    done: bool = Field(False, description="advance: also mark the goal done.")
    _request: GoalRequest = PrivateAttr()

    @model_validator(mode="after")
    def _action(self) -> Self:
        action = self.action
        if action == "list":
            self._request = m.Empty()
        elif action == "create":
            self._request = m.GoalCreate(_needs(self.title, action, "title"))
        else:
            goal_id = _needs(self.goal_id, action, "goal_id")
            if action == "get":
                self._request = m.GoalRef(goal_id)
            elif action == "advance":
                self._request = m.GoalAdvance(goal_id, _needs(self.note, action, "note"), done=self.done)
            else:
                self._request = m.GoalAbandon(goal_id, self.note)
        return self

    def request(self) -> GoalRequest:
        """The engine request of this input's action."""
        return self._request


class RunInput(_Input):
    prompt: str = Field(description="What the task should do, for the fixed project.")
    mode: Literal["build", "plan", "review"] = "build"
    permission_level: Literal["read_only", "workspace", "elevated"] = Field(
        "read_only", description="Ceiling for this task; lowers the project's level, never raises it."
    )
    model: str | None = Field(None, description="Configured model name (default: the profile's default).")


class JobsInput(_Input):
    action: Literal["list", "get", "cancel"] = "list"
    job_id: str | None = None
    cursor: str | None = Field(None, description="Event page cursor from a previous 'get'.")
    _request: JobsRequest = PrivateAttr()

    @model_validator(mode="after")
    def _action(self) -> Self:
        if self.action == "list":
            self._request = m.Empty()
            return self
        job_id = _needs(self.job_id, self.action, "job_id")
        if self.action == "cancel":
            self._request = m.JobRef(job_id)
        else:
            cursor = int(self.cursor) if self.cursor and self.cursor.isdigit() else 0
            self._request = m.JobQuery(job_id, cursor)
        return self

    def request(self) -> JobsRequest:
        """The engine request of this input's action."""
        return self._request


class ApproveInput(_Input):
    approval_id: str = Field(description="One exact pending approval id.")
    decision: Literal["approve", "deny"]


class TestInput(_Input):
    command: list[str] | None = Field(None, description="argv to run; omitted: the one detected test command.")


class CheckpointInput(_Input):
    task_id: str | None = Field(None, description="Only checkpoints of this task.")
    checkpoint_id: str | None = Field(None, description="Inspect one checkpoint.")


class RollbackInput(_Input):
    task_id: str = Field(description="Exact task id whose changes to undo.")
    confirm: bool = Field(description="Must be true.")
