"""How the CLI shows jobs, their events and text others wrote to a person (ENG-07, ENG-08, CW-04).

One rule for every string a server, a project or a model wrote (tool names, titles,
descriptions, errors, resource names, prompt text, answers, command output): a plain-text
view shows it through :func:`visible` (one line) or :func:`visible_lines` (a block), which
make every control, format and line-separator character visible as an escape (``\\x1b``,
``\\n``, ``\\u202e``) so nothing reaches the terminal as a command, and cut each line at
CLI_SHOWN_TEXT_MAX_CHARS characters. :func:`terminal_text` is the last guard of a whole view
before it is written (newlines and tabs kept). ``--json`` output is JSON, escaped by the
encoder, and keeps every string whole.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from shadowcode.inert_text import cut as _cut
from shadowcode.inert_text import inert as _inert
from shadowcode.limits import CLI_SHOWN_TEXT_MAX_CHARS

if TYPE_CHECKING:
    from shadowcode.engine.api import ApprovalRecord, EventRecord, JobSummary, JobView, TaskRecord

__all__ = ["action_text", "event_line", "job_line", "terminal_text", "visible", "visible_lines"]


def visible(text: object, max_chars: int = CLI_SHOWN_TEXT_MAX_CHARS) -> str:
    """``text`` (``str()`` of it) as one inert line, cut to at most ``max_chars`` characters (CW-04).

    Every control character (newlines and tabs included), format character (bidi overrides,
    zero-width characters), line or paragraph separator, surrogate, private-use or unassigned
    code point becomes a visible escape; a result longer than ``max_chars`` keeps
    ``max_chars - 1`` characters and ends in ``…``.
    """
    return _cut(_inert(str(text), ""), max_chars)


def visible_lines(text: object, max_chars: int = CLI_SHOWN_TEXT_MAX_CHARS) -> list[str]:
    """``text`` split at its line breaks (``\\n``, ``\\r\\n``), each line as :func:`visible` makes it
    but with tabs kept (CW-04). A lone ``\\r`` stays visible as ``\\x0d``."""
    return [_cut(_inert(line, "\t"), max_chars) for line in str(text).replace("\r\n", "\n").split("\n")]


def terminal_text(text: str) -> str:
    """A whole plain-text view made inert before it is written: as :func:`visible`, newlines and
    tabs kept, nothing cut (the view's own lines are already bounded) (CW-04)."""
    return _inert(text, "\n\t")


def job_line(job: JobSummary | JobView | TaskRecord) -> str:
    """One line for a job: id, status, mode, level, prompt (shortened)."""
    prompt = visible(" ".join(job.prompt.split()))
    if len(prompt) > 60:
        prompt = prompt[:57] + "..."
    return f"{job.id}  {job.status:<11} {job.mode:<6} {job.permission_level:<10} {prompt}"


def action_text(approval: ApprovalRecord) -> str:
    """An approval's exact action in one line: argv and cwd, or server, tool and arguments (ENG-07).

    Every part is shown through :func:`visible`, so an argument holding a newline or an escape
    sequence cannot fake or hide part of the line being approved.
    """
    action: dict[str, Any] = approval.action
    if "argv" in action:
        return f"{visible(' '.join(action['argv']))}  (in {visible(action.get('cwd'))})"
    arguments = json.dumps(action.get("arguments"), ensure_ascii=False, sort_keys=True)
    return f"MCP {visible(action.get('server'))} {visible(action.get('tool'))} {visible(arguments)}"


def event_line(event: EventRecord) -> str | None:
    """A readable line (or block) for one event, or None for events not worth a line (ENG-08, CW-04).

    Every value taken from the event (model text, tool names, results, errors, notes, command
    output) is shown through :func:`visible` or :func:`visible_lines`.
    """
    kind = event.kind
    data: dict[str, Any] = event.data
    if kind == "model.request":
        return f"… asking {visible(data.get('model'))} (turn {visible(data.get('step'))})"
    if kind == "model.reply" and data.get("content") and data.get("tool_calls"):
        return f"model: {visible(data['content'])}"
    if kind == "tool.call":
        arguments = json.dumps(data.get("arguments"), ensure_ascii=False)
        return f"→ {visible(data['name'])} {visible(arguments, 200)}"
    if kind == "tool.result" and not data.get("ok"):
        return f"  ✗ {visible(data['name'])}: {visible(data.get('summary'))}"
    if kind == "approval.waiting":
        argv = " ".join(data.get("argv") or []) or f"{data.get('server')} {data.get('tool')} (MCP call)"
        approval = visible(data["approval_id"])
        return (
            f"⏸ waiting for approval {approval}: {visible(argv)}  (in {visible(data.get('cwd'))})\n"
            f"  approve with: shadowcode approve {approval}   or deny: shadowcode deny {approval}"
        )
    if kind == "approval.resolved":
        return f"  approval {visible(data['approval_id'])}: {visible(data['status'])}"
    if kind == "command.result":
        output = str(data.get("output") or "").rstrip()
        tail = visible_lines(output)[-10:] if output else []
        status = f"exit {data.get('exit_code')}" if data.get("signal") is None else f"signal {data.get('signal')}"
        argv = visible(" ".join(data.get("argv") or []))
        return "\n".join([f"  $ {argv}  → {visible(status)}", *(f"  | {line}" for line in tail)])
    if kind == "task.note":
        return f"note: {visible(data.get('note'))}"
    if kind == "task.done":
        # The answer's lines are indented: no line of it can pass for one of the CLI's own.
        answer = str(data.get("answer") or "").rstrip()
        return "\n".join(["✓ done", *(f"  {line}" for line in visible_lines(answer))]) if answer else "✓ done"
    if kind == "task.failed":
        return f"✗ failed: {visible(data.get('error'))}"
    if kind in ("task.cancelled", "task.interrupted"):
        return f"✗ {kind.split('.')[1]}: {visible(data.get('reason'))}"
    return None
