"""A tool input with several actions becomes one engine request per action, checked at the edge (SRV-04)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from shadowcode.engine import api as m
from shadowcode.mcp.server import schemas as s


@pytest.mark.req("SRV-04")
@pytest.mark.parametrize(
    ("model", "arguments", "request_"),
    [
        (s.MemoryInput, {"action": "read"}, m.MemoryRef()),
        (s.MemoryInput, {"action": "read", "scope": "task", "task_id": "t"}, m.MemoryRef("task", "t")),
        (s.MemoryInput, {"action": "append", "text": "x"}, m.MemoryAppend("x")),
        (s.MemoryInput, {"action": "replace", "text": "", "expected_hash": "h"}, m.MemoryReplace("", "h")),
        (s.SqliteInput, {"action": "tables", "path": "a.db"}, m.SqliteTablesRequest("a.db")),
        (s.SqliteInput, {"action": "query", "path": "a.db", "sql": "SELECT 1"}, m.SqliteQuery("a.db", "SELECT 1")),
        (s.GoalInput, {"action": "list"}, m.Empty()),
        (s.GoalInput, {"action": "get", "goal_id": "g"}, m.GoalRef("g")),
        (s.GoalInput, {"action": "create", "title": "ship"}, m.GoalCreate("ship")),
        (s.GoalInput, {"action": "advance", "goal_id": "g", "note": "n", "done": True}, m.GoalAdvance("g", "n", True)),
        (s.GoalInput, {"action": "abandon", "goal_id": "g"}, m.GoalAbandon("g")),
        (s.JobsInput, {}, m.Empty()),
        (s.JobsInput, {"action": "get", "job_id": "j", "cursor": "7"}, m.JobQuery("j", 7)),
        (s.JobsInput, {"action": "get", "job_id": "j", "cursor": "x"}, m.JobQuery("j", 0)),
        (s.JobsInput, {"action": "cancel", "job_id": "j"}, m.JobRef("j")),
    ],
)
def test_each_action_is_its_own_request(model: Any, arguments: dict[str, Any], request_: object) -> None:
    assert model.model_validate(arguments).request() == request_


@pytest.mark.req("SRV-04")
@pytest.mark.parametrize(
    ("model", "arguments", "missing"),
    [
        (s.MemoryInput, {"action": "append"}, "needs text"),
        (s.MemoryInput, {"action": "replace", "text": "x"}, "needs expected_hash"),
        (s.MemoryInput, {"action": "replace", "text": "x", "expected_hash": ""}, "needs expected_hash"),
        (s.SqliteInput, {"action": "query", "path": "a.db"}, "needs sql"),
        (s.GoalInput, {"action": "get"}, "'get' needs goal_id"),
        (s.GoalInput, {"action": "create"}, "'create' needs title"),
        (s.GoalInput, {"action": "advance", "goal_id": "g"}, "'advance' needs note"),
        (s.GoalInput, {"action": "abandon", "note": "why"}, "'abandon' needs goal_id"),
        (s.JobsInput, {"action": "get"}, "'get' needs job_id"),
        (s.JobsInput, {"action": "cancel", "job_id": ""}, "'cancel' needs job_id"),
    ],
)
def test_a_missing_argument_is_a_validation_error(
    model: type[BaseModel], arguments: dict[str, Any], missing: str
) -> None:
    with pytest.raises(ValidationError, match=missing):
        model.model_validate(arguments)


@pytest.mark.req("SRV-04")
def test_the_published_schemas_show_no_private_request() -> None:
    for model in (s.MemoryInput, s.SqliteInput, s.GoalInput, s.JobsInput):
        assert "_request" not in model.model_json_schema().get("properties", {})
