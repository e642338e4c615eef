"""What a job is doing now, as a short phrase a person reads in a host (SRV-16, SRV-26).

The phrase comes from the job's pending approvals (a job that waits names the exact action
and how to resolve it) or else from its newest event. Command lines, paths, tool names and
answers are written by a model or a project: they are data, so control characters are made
inert by the CLI's one rule (:mod:`shadowcode.inert_text`) and the phrase is cut to
JOB_STEP_MAX_CHARS characters.
"""

from __future__ import annotations

import shlex
from typing import Any

from shadowcode import inert_text
from shadowcode.enums import TaskStatus
from shadowcode.json_values import json_array
from shadowcode.limits import JOB_STEP_MAX_CHARS
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.tasks import EventRecord, TaskRecord

__all__ = ["inert", "job_step"]


def inert(text: str, max_chars: int = JOB_STEP_MAX_CHARS) -> str:
    """``text`` as one inert line (:func:`shadowcode.inert_text.inert`: newlines, escapes and bidi
    controls written as visible escapes), cut to ``max_chars`` characters (an ellipsis ends a cut)."""
    return inert_text.cut(inert_text.inert(text), max_chars)


def _argv(value: object) -> str:
    items = json_array(value)
    argv = [a for a in items if isinstance(a, str)] if items is not None else None
    if items is not None and argv is not None and len(argv) == len(items):
        return shlex.join(argv)
    return str(value)


def _approval(approval: ApprovalRecord) -> str:
    action = approval.action
    if "argv" in action:
        what = f"{_argv(action['argv'])} in {action.get('cwd', '?')}"
    elif "tool" in action:
        what = f"{action.get('server', '?')} tool {action['tool']}"
    else:
        what = approval.kind
    resolve = f"`shadowcode approve {approval.id}` resolves it"
    return f"waiting for approval {approval.id} ({approval.kind}: {what}); {resolve}"


def _event(event: EventRecord) -> str:
    data, kind = event.data, event.kind
    phrases: dict[str, Any] = {
        "task.queued": lambda: "queued, waiting for a free slot",
        "task.started": lambda: "started",
        "task.note": lambda: f"note: {data.get('note', '')}",
        "model.request": lambda: f"asking the model (turn {data.get('step', '?')})",
        "model.reply": lambda: f"read the model's reply (turn {data.get('step', '?')})",
        "tool.call": lambda: f"running tool {data.get('name', '?')}",
        "tool.result": lambda: f"tool {data.get('name', '?')} {'done' if data.get('ok') else 'failed'}",
        "file.write": lambda: f"wrote {data.get('path', '?')}",
        "approval.waiting": lambda: f"waiting for approval {data.get('approval_id', '?')}",
        "approval.resolved": lambda: f"approval {data.get('approval_id', '?')} {data.get('status', '?')}",
        "command.started": lambda: f"running {_argv(data.get('argv', '?'))}",
        "command.result": lambda: f"command ended (exit {data.get('exit_code', '?')})",
        "background.started": lambda: "started a background process",
        "mcp.call": lambda: f"calling {data.get('server', '?')} tool {data.get('tool', '?')}",
        "mcp.result": lambda: "read an MCP server's answer",
        "task.done": lambda: "finished",
        "task.failed": lambda: f"failed: {data.get('error', '')}",
        "task.cancelled": lambda: f"cancelled: {data.get('reason', '')}",
        "task.interrupted": lambda: f"interrupted: {data.get('reason', '')}",
        "plan": lambda: "recorded its plan",
    }
    phrase = phrases.get(kind)
    return phrase() if phrase is not None else kind.replace(".", " ").replace("_", " ")


def job_step(task: TaskRecord, last: EventRecord | None, pending: list[ApprovalRecord]) -> str:
    """What ``task`` is doing now, in one short inert line.

    Args:
        task: the job.
        last: its newest event, None when it has none.
        pending: its pending approvals, oldest first.

    Returns:
        For a waiting job, the oldest pending approval: its id, kind, exact action and the
        ``shadowcode approve ID`` that resolves it; for a finished one, how it ended;
        otherwise its newest event as a phrase (``asking the model (turn 2)``).
    """
    if pending and task.status is TaskStatus.WAITING:
        return inert(_approval(pending[0]))
    if not task.status.active and task.error and last is None:
        return inert(f"{task.status}: {task.error}")
    if last is None:
        return str(task.status)
    return inert(_event(last))
