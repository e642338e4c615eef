"""How the CLI shows jobs and their events to a person (ENG-08)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["event_line", "job_line"]


def job_line(job: dict[str, Any]) -> str:
    """One line for a job: id, status, mode, level, prompt (shortened)."""
    prompt = " ".join(str(job.get("prompt", "")).split())
    if len(prompt) > 60:
        prompt = prompt[:57] + "..."
    return f"{job['id']}  {job['status']:<11} {job['mode']:<6} {job.get('permission_level') or '':<10} {prompt}"


def event_line(event: dict[str, Any]) -> str | None:
    """A readable line for one event, or None for events not worth a line."""
    kind = event["kind"]
    data = event["data"]
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
