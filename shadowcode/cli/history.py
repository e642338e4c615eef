"""``shadowcode rollback``, ``checkpoint`` and ``why``: a task's recorded changes from the terminal
(ENG-06, SRV-18, SRV-19).

Each verb is a frontend over the engine verbs the MCP tools shadow_rollback, shadow_checkpoint
and shadow_why call; trust, write access and the conflict check are the engine's. ``rollback``
first asks the engine what it would restore and whether the conflict check passes, shows it,
and asks before changing anything (``--yes`` for scripts; without it, a stdin that is not a
terminal is refused).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shadowcode.cli.context import emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import CheckpointDetail, EngineApi, RollbackPlan, RollbackResult

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the history verbs to the root app."""
    app.command("rollback")(rollback)
    app.command("checkpoint")(checkpoint)
    app.command("why")(why)


def _short(sha: str | None) -> str:
    return "(absent)" if sha is None else sha[:12]


def _when(at: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def plan_text(plan: RollbackPlan) -> str:
    """A rollback preview for a person: what changes, and the conflict check's verdict."""
    lines = [f"rollback of {plan.task_id}:"]
    lines += [f"  restore  {path}" for path in plan.restore]
    lines += [f"  remove   {path}  (the task created it)" for path in plan.remove]
    lines += [f"  keep     {path}  (already as before the task)" for path in plan.unchanged]
    lines += [f"  CONFLICT {path}  (changed after the task wrote it)" for path in plan.conflicts]
    if plan.conflicts:
        lines.append("conflict check: failed; nothing will be rolled back")
    elif not plan.restore and not plan.remove:
        lines.append("conflict check: passed; nothing to roll back")
    else:
        lines.append("conflict check: passed")
    return "\n".join(lines)


def _stdin_is_terminal() -> bool:
    stream = sys.stdin
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def rollback(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="Exact id of a task of the --workspace project.")],
    yes: Annotated[bool, typer.Option("--yes", help="Roll back without asking (for scripts).")] = False,
) -> None:
    """Restore the files a task changed, after showing what changes and the conflict check (ENG-06, SRV-18).

    Exit 0 rolled back (or nothing to do); 1 conflict, declined or not a task of this project;
    2 no --yes and stdin is not a terminal; 3 refused by policy (an untrusted or read_only project).
    """
    from shadowcode.engine.api import Rollback, RollbackPreview
    from shadowcode.engine.wire import to_json
    from shadowcode.errors import ConflictError, UsageError

    g = globals_of(ctx)
    caller = g.caller()
    plan = with_engine(g, lambda api: api.rollback_preview(RollbackPreview(task_id), caller))
    if not g.json:
        from shadowcode.cli.render import terminal_text

        sys.stdout.write(terminal_text(plan_text(plan)) + "\n")
        sys.stdout.flush()
    if plan.conflicts:
        raise ConflictError(
            "files changed after the task wrote them; nothing was rolled back: " + ", ".join(plan.conflicts),
            task_id=task_id,
            paths=plan.conflicts,
        )
    if not plan.restore and not plan.remove:
        emit(g, {"task_id": task_id, "restored": [], "removed": [], "preview": to_json(plan)}, "")
        return
    if not yes:
        if not _stdin_is_terminal():
            raise UsageError("rollback asks before changing files and stdin is not a terminal: pass --yes")
        if not typer.confirm(f"Roll back {task_id}?", default=False, err=True):
            sys.stderr.write("shadowcode: nothing was rolled back\n")
            raise typer.Exit(1)

    done: RollbackResult = with_engine(g, lambda api: api.rollback(Rollback(task_id, confirm=True), caller))
    text = "\n".join(
        [f"restored {path}" for path in done.restored]
        + [f"removed  {path}" for path in done.removed]
        + [f"{task_id} rolled back"]
    )
    emit(g, to_json(done) | {"preview": to_json(plan)}, text)


def _checkpoint_text(detail: CheckpointDetail) -> list[str]:
    lines = [f"{detail.id}  task {detail.task_id}  {_when(detail.created_at)}"]
    for change in detail.changes:
        lines.append(
            f"  {change.kind:<8} {change.path}  {_short(change.before_sha256)} → {_short(change.after_sha256)}"
            f"  {_when(change.at)}"
        )
    return lines


def checkpoint(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="Exact id of a task of the --workspace project.")],
) -> None:
    """Show a task's checkpoint: every recorded change, its kind and content hashes (SRV-18)."""
    from shadowcode.engine.api import CheckpointQuery, CheckpointRef
    from shadowcode.engine.wire import to_json
    from shadowcode.errors import NotFound

    g = globals_of(ctx)
    caller = g.caller()

    async def details(api: EngineApi) -> list[CheckpointDetail]:
        found = await api.checkpoints(CheckpointQuery(task_id), caller)
        return [await api.checkpoint(CheckpointRef(summary.id), caller) for summary in found]

    shown = with_engine(g, details)
    if not shown:
        raise NotFound(f"no checkpoint of {task_id!r} in this project (the task wrote no file)", task_id=task_id)
    lines = [line for detail in shown for line in _checkpoint_text(detail)]
    emit(g, {"checkpoints": to_json(shown)}, "\n".join(lines))


def why(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A project path; omitted: every recorded change.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only the changes of this task.")] = None,
) -> None:
    """Show the recorded change history of a path (or of a task): writes and rollbacks, newest first (SRV-19)."""
    from shadowcode.engine.api import WhyQuery
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    caller = g.caller()
    entries = with_engine(g, lambda api: api.why(WhyQuery(path, task), caller))
    lines: list[str] = []
    for entry in entries:
        prompt: Any = " ".join((entry.prompt or "").split())
        if len(prompt) > 60:
            prompt = prompt[:57] + "..."
        lines.append(
            f"{_when(entry.at)}  {entry.kind:<8} {entry.path}  {_short(entry.before_sha256)} → "
            f"{_short(entry.after_sha256)}  {entry.task_id}  {prompt}"
        )
    emit(g, {"entries": to_json(entries)}, "\n".join(lines) or "no recorded changes")
