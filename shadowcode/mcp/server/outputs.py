"""What each native tool returns: its ``outputSchema`` and the short text a person reads (SRV-04).

Every tool answers with ``structuredContent`` (the JSON document its handler returns) and one
text block. The document's shape is declared here as the tool's ``outputSchema``, generated
from the engine API's own types, so a client can validate it and a host need not show the
model the same JSON twice; the text block is a short human summary of the document (the
full answer is the structured content).

The schemas are built once per process and only when a listing asks for them (they cost
tens of milliseconds); answering a call needs only :func:`summary`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from shadowcode.engine import api as m
from shadowcode.json_values import json_array, json_object

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


# --- summaries -----------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _status(d: dict[str, Any]) -> str:
    project, server, models = d["project"], d["server"], d["models"]
    trust = f"trusted at {project['level']}" if project.get("trusted") else "untrusted"
    access = "read-write" if server.get("allow_write") else "read-only"
    if server.get("allow_approvals"):
        access += ", approvals allowed"
    default = f", default {models['default']}" if models.get("default") else ""
    return (
        f"Project {project['path']} ({trust}); profile {d['profile']}; engine {d['engine']['mode']}; "
        f"server {access}; {_plural(models['configured'], 'model')} configured{default}."
    )


def _models(d: dict[str, Any]) -> str:
    names = ", ".join(str(model.get("name")) for model in d["models"]) or "none"
    return f"{_plural(len(d['models']), 'model')} configured ({names}); default {d.get('default') or 'none'}."


def _review(d: dict[str, Any]) -> str:
    if not d.get("git"):
        return f"Not a git repository. {d.get('note', '')}".strip()
    return f"Branch {d.get('branch') or '(detached)'}: {_plural(d.get('changes_total', 0), 'changed path')}."


def _understand(d: dict[str, Any]) -> str:
    languages = ", ".join(sorted(d.get("languages", {}), key=lambda k: -d["languages"][k])[:3]) or "none"
    saved = " Saved as the project map." if d.get("saved") else ""
    return f"Project map: {_plural(d.get('files', 0), 'file')}; main languages {languages}.{saved}"


def _doctor(d: dict[str, Any]) -> str:
    failing = [c["name"] for c in d["checks"] if c.get("status") != "ok"]
    verdict = "all checks pass" if d.get("ok") else "problems found"
    return f"Diagnostics: {verdict}; {_plural(len(d['checks']), 'check')}" + (
        f", not ok: {', '.join(failing)}." if failing else "."
    )


def _memory(d: dict[str, Any]) -> str:
    scope = "project note" if d.get("scope") == "project" else f"note of task {d.get('task_id')}"
    return f"The {scope}: {len(d.get('content', ''))} characters, hash {d.get('hash')}."


def _sqlite(d: dict[str, Any]) -> str:
    more = " (truncated)" if d.get("truncated") else ""
    if "tables" in d:
        return f"{d['path']}: {_plural(len(d['tables']), 'table')}{more}."
    return f"{d['path']}: {_plural(d.get('row_count', len(d.get('rows', []))), 'row')}{more}."


def _goal(d: dict[str, Any]) -> str:
    if "goals" in d:
        return f"{_plural(len(d['goals']), 'goal')}."
    goal = d["goal"]
    return f"Goal {goal['id']} ({goal['status']}): {goal['title']}"


def _jobs(d: dict[str, Any]) -> str:
    if "jobs" in d:
        return f"{_plural(len(d['jobs']), 'job')} of this connection."
    if "cancelled" in d:
        return f"Job {d['job_id']} is {d['status']}" + (" (cancelled now)." if d["cancelled"] else ".")
    job = d["job"]
    pending = len(d.get("pending_approvals", []))
    return (
        f"Job {job.get('id')} is {job.get('status')}; {_plural(len(d.get('events', [])), 'event')} on this page, "
        f"{_plural(pending, 'pending approval')}."
    )


def _checkpoint(d: dict[str, Any]) -> str:
    if "checkpoints" in d:
        return f"{_plural(len(d['checkpoints']), 'checkpoint')}."
    point = d["checkpoint"]
    return f"Checkpoint {point['id']} of task {point['task_id']}: {_plural(len(point['changes']), 'path')}."


_SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "shadow_status": _status,
    "shadow_models": _models,
    "shadow_sessions": lambda d: f"{_plural(len(d['sessions']), 'session')} of this project, newest first.",
    "shadow_review": _review,
    "shadow_tools": lambda d: f"{_plural(len(d['tools']), 'tool')} a delegated task can use.",
    "shadow_understand": _understand,
    "shadow_doctor": _doctor,
    "shadow_why": lambda d: f"{_plural(len(d['entries']), 'recorded change')}.",
    "shadow_memory": _memory,
    "shadow_sqlite": _sqlite,
    "shadow_goal": _goal,
    "shadow_run": lambda d: f"Job {d['job_id']} submitted ({d['mode']}, {d['permission_level']}); it runs on its own.",
    "shadow_jobs": _jobs,
    "shadow_approve": lambda d: f"Approval {d['approval']['id']} is {d['approval']['status']}.",
    "shadow_test": lambda d: f"Test job {d['job_id']} submitted ({d['status']}): {' '.join(d['command'])}",
    "shadow_checkpoint": _checkpoint,
    "shadow_rollback": lambda d: (
        f"Rolled back task {d['task_id']}: {_plural(len(d['restored']), 'path')} restored, {len(d['removed'])} removed."
    ),
}


def summary(name: str, document: dict[str, Any]) -> str:
    """The text block of tool ``name``'s result: one or two sentences on ``document`` (SRV-04).

    Falls back to naming the tool when the document lacks a field a summary reads, so a
    summary never turns a result into an error.
    """
    try:
        return _SUMMARIES[name](document) + " The full result is in structuredContent."
    except (KeyError, TypeError, AttributeError):
        return f"{name} answered; the full result is in structuredContent."
