"""What each native tool returns: its ``outputSchema`` and the short text a person reads (SRV-04).

Every tool answers with ``structuredContent`` (the JSON document its handler returns) and one
text block. The document's shape is declared here as the tool's ``outputSchema``, generated
from the engine API's own types, so a client can validate it and a host need not show the
model the same JSON twice; the text block is a short human summary of the document (the
full answer is the structured content).

The schemas are built once per process and only when a listing asks for them (they cost
tens of milliseconds). The summaries are in :mod:`shadowcode.mcp.server.summaries`
(re-exported here): answering a call needs only that module, not this one, which loads
pydantic and every type of the engine API.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from shadowcode.engine import api as m
from shadowcode.json_values import json_array, json_object
from shadowcode.mcp.server.summaries import summary

__all__ = ["OUTPUTS", "output_schema", "summary"]


class _Out(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)


class _Engine(_Out):
    mode: str


class _Server(_Out):
    allow_write: bool
    allow_approvals: bool


class _ModelCount(_Out):
    configured: int
    default: str | None


class StatusOutput(_Out):
    """``shadow_status``."""

    version: str
    profile: str
    engine: _Engine
    project: m.ProjectInfo
    server: _Server
    models: _ModelCount


class SessionsOutput(_Out):
    sessions: list[m.SessionRecord]


class ToolsOutput(_Out):
    tools: list[m.ToolInfo]


class WhyOutput(_Out):
    entries: list[m.WhyEntry]


class GoalsOutput(_Out):
    goals: list[m.GoalSummary]


class GoalOutput(_Out):
    goal: m.GoalRecord


class CheckpointsOutput(_Out):
    checkpoints: list[m.CheckpointSummary]


class CheckpointOutput(_Out):
    checkpoint: m.CheckpointDetail


class JobsOutput(_Out):
    jobs: list[m.JobSummary]


class ApprovalOutput(_Out):
    approval: m.ApprovalRecord


def _models_schema() -> dict[str, Any]:
    """``shadow_models``: the profile's model settings without ``api_key_env``, with ``has_api_key_env``."""
    schema = TypeAdapter(m.ModelList).json_schema(mode="serialization")
    item_ref = schema["properties"]["models"]["items"]["$ref"].rsplit("/", 1)[-1]
    item = schema["$defs"][item_ref]
    item["properties"].pop("api_key_env", None)
    item["properties"]["has_api_key_env"] = {"type": "boolean"}
    item["required"] = [r for r in item.get("required", []) if r != "api_key_env"] + ["has_api_key_env"]
    return schema


OUTPUTS: dict[str, Any] = {
    "shadow_status": StatusOutput,
    "shadow_models": _models_schema,
    "shadow_sessions": SessionsOutput,
    "shadow_review": m.Review,
    "shadow_tools": ToolsOutput,
    "shadow_understand": m.ProjectMap,
    "shadow_doctor": m.Diagnostics,
    "shadow_why": WhyOutput,
    "shadow_memory": m.MemoryNote,
    "shadow_sqlite": m.SqliteTables | m.SqliteRows,
    "shadow_goal": GoalsOutput | GoalOutput,
    "shadow_run": m.TaskSubmitted,
    "shadow_jobs": JobsOutput | m.JobDetail | m.JobCancelled,
    "shadow_approve": ApprovalOutput,
    "shadow_test": m.TestSubmitted,
    "shadow_checkpoint": CheckpointsOutput | CheckpointOutput,
    "shadow_rollback": m.RollbackResult,
}
"""Tool name → the type of its structured content (or a function building its schema)."""


@functools.cache
def output_schema(name: str) -> dict[str, Any]:
    """The ``outputSchema`` of tool ``name``: a JSON Schema whose root is an object (SRV-04).

    Raises:
        KeyError: no such tool.
    """
    source = OUTPUTS[name]
    if callable(source) and not isinstance(source, type):
        schema = source()
    else:
        schema = TypeAdapter(source).json_schema(mode="serialization")
    schema = _bare(schema)
    schema.setdefault("type", "object")
    return schema


def _bare(schema: Any) -> Any:
    """``schema`` without its ``title`` and ``description`` annotations: the engine types' docstrings are
    written for this code base, not for a client, and every listing would carry them."""
    if (items := json_array(schema)) is not None:
        return [_bare(item) for item in items]
    if (fields := json_object(schema)) is None:
        return schema
    return {
        key: _bare(value)
        for key, value in fields.items()
        if not (key in ("title", "description") and isinstance(value, str))
    }
