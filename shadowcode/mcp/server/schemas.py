"""Input models of the seventeen native tools (SRV-04); their JSON Schemas are advertised as is.

Every model forbids unknown fields, so a misspelled argument is refused rather than ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class SqliteInput(_Input):
    action: Literal["tables", "query"] = Field(description="List tables, or run one read-only query.")
    path: str = Field(description="Database file, relative to the project.")
    sql: str | None = Field(None, description="One read-only SELECT statement (action 'query').")
    params: list[Any] | dict[str, Any] | None = Field(None, description="Bound parameters: a list or an object.")


class GoalInput(_Input):
    action: Literal["create", "list", "get", "advance", "abandon"]
    goal_id: str | None = Field(None, description="The goal (get, advance, abandon).")
    title: str | None = Field(None, description="Title of a new goal (create).")
    note: str | None = Field(None, description="Progress note (advance) or reason (abandon).")
    done: bool = Field(False, description="advance: also mark the goal done.")


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
