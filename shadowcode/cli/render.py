"""How the CLI shows jobs and their events to a person (ENG-08)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shadowcode.engine.api import Approval, Job, JobEvent, JobView

__all__ = ["action_text", "event_line", "job_line"]


def job_line(job: Job | JobView) -> str:
    """One line for a job: id, status, mode, level, prompt (shortened)."""
    prompt = " ".join(job.prompt.split())
    if len(prompt) > 60:
        prompt = prompt[:57] + "..."
    return f"{job.id}  {job.status:<11} {job.mode:<6} {job.permission_level:<10} {prompt}"


def action_text(approval: Approval) -> str:
    """An approval's exact action in one line: argv and cwd, or server, tool and arguments (ENG-07)."""
    action: dict[str, Any] = approval.action
    if "argv" in action:
        return f"{' '.join(action['argv'])}  (in {action.get('cwd')})"
    arguments = json.dumps(action.get("arguments"), ensure_ascii=False, sort_keys=True)
    return f"MCP {action.get('server')} {action.get('tool')} {arguments}"


def event_line(event: JobEvent) -> str | None:
    """A readable line for one event, or None for events not worth a line."""
    kind = event.kind
    data: dict[str, Any] = event.data
    if kind == "model.request":
        return f"… asking {data.get('model')} (turn {data.get('step')})"
    if kind == "model.reply" and data.get("content") and data.get("tool_calls"):
        return f"model: {data['content']}"
    if kind == "tool.call":
        return f"→ {data['name']} {json.dumps(data.get('arguments'), ensure_ascii=False)[:200]}"
    if kind == "tool.result" and not data.get("ok"):
        return f"  ✗ {data['name']}: {data.get('summary')}"
    if kind == "approval.waiting":
        argv = " ".join(data.get("argv") or []) or f"{data.get('server')} {data.get('tool')} (MCP call)"
        return (
            f"⏸ waiting for approval {data['approval_id']}: {argv}  (in {data.get('cwd')})\n"
            f"  approve with: shadowcode approve {data['approval_id']}   or deny: shadowcode deny {data['approval_id']}"
        )
    if kind == "approval.resolved":
        return f"  approval {data['approval_id']}: {data['status']}"
    if kind == "command.result":
        tail = str(data.get("output") or "").rstrip().splitlines()[-10:]
        status = f"exit {data.get('exit_code')}" if data.get("signal") is None else f"signal {data.get('signal')}"
        return "\n".join([f"  $ {' '.join(data.get('argv') or [])}  → {status}", *(f"  | {line}" for line in tail)])
    if kind == "task.note":
        return f"note: {data.get('note')}"
    if kind == "task.done":
        return f"✓ done\n{data.get('answer') or ''}".rstrip()
    if kind == "task.failed":
        return f"✗ failed: {data.get('error')}"
    if kind in ("task.cancelled", "task.interrupted"):
        return f"✗ {kind.split('.')[1]}: {data.get('reason')}"
    return None
