"""The short text a person reads in each native tool's result (SRV-04).

Every tool answers with ``structuredContent`` (the JSON document its handler returns) and one
text block: a short human summary of the document, made here. Answering a call needs only this
module (standard library alone); the documents' ``outputSchema`` is in
:mod:`shadowcode.mcp.server.outputs`, built from pydantic models when a listing asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["summary"]


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
