"""``shadowcode goal …`` and ``shadowcode memory …``: the project's goals and memory notes from the
terminal (SRV-12, SRV-14).

Frontends over the engine verbs shadow_goal and shadow_memory call, with their rules: reading
needs nothing, every change needs a trusted project above read_only (checked by the engine),
``memory replace`` needs the note's current hash, and only an active goal advances.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import GoalRecord, MemoryNote

__all__ = ["goal_app", "memory_app"]

goal_app = typer.Typer(help="The project's goals: create, list, show, advance, abandon (SRV-14).", no_args_is_help=True)
memory_app = typer.Typer(help="The project's memory note, or one task's (SRV-12).", no_args_is_help=True)


def _when(at: int | None) -> str:
    return "never" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _goal_text(goal: GoalRecord) -> str:
    lines = [f"{goal.id}  {goal.status:<9} {goal.title}"]
    lines += [f"  {_when(p.at)}  {p.note}" for p in goal.progress]
    return "\n".join(lines)


def _show_goal(g: Globals, goal: GoalRecord) -> None:
    from shadowcode.engine.wire import to_json

    emit(g, {"goal": to_json(goal)}, _goal_text(goal))


@goal_app.command("create")
def goal_create(ctx: typer.Context, title: Annotated[str, typer.Argument(help="What the goal is.")]) -> None:
    """Create an active goal in the --workspace project (SRV-14)."""
    from shadowcode.engine.api import GoalCreate

    g = globals_of(ctx)
    _show_goal(g, with_engine(g, lambda api: api.goal_create(GoalCreate(title), g.caller())))


@goal_app.command("list")
def goal_list(ctx: typer.Context) -> None:
    """List the project's goals, newest first (SRV-14)."""
    from shadowcode.engine.api import Empty
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    goals = with_engine(g, lambda api: api.goal_list(Empty(), g.caller()))
    lines = [f"{goal.id}  {goal.status:<9} {goal.title}" for goal in goals]
    emit(g, {"goals": to_json(goals)}, "\n".join(lines) or "no goals")


@goal_app.command("show")
def goal_show(ctx: typer.Context, goal_id: Annotated[str, typer.Argument(help="Exact goal id.")]) -> None:
    """Show one goal with its progress notes (SRV-14)."""
    from shadowcode.engine.api import GoalRef

    g = globals_of(ctx)
    _show_goal(g, with_engine(g, lambda api: api.goal_get(GoalRef(goal_id), g.caller())))


@goal_app.command("advance")
def goal_advance(
    ctx: typer.Context,
    goal_id: Annotated[str, typer.Argument(help="Exact id of an active goal.")],
    note: Annotated[str, typer.Argument(help="The progress made.")],
    done: Annotated[bool, typer.Option("--done", help="The goal is reached: mark it done.")] = False,
) -> None:
    """Add a progress note to an active goal; --done also completes it (SRV-14)."""
    from shadowcode.engine.api import GoalAdvance

    g = globals_of(ctx)
    request = GoalAdvance(goal_id, note, done=done)
    _show_goal(g, with_engine(g, lambda api: api.goal_advance(request, g.caller())))


@goal_app.command("abandon")
def goal_abandon(
    ctx: typer.Context,
    goal_id: Annotated[str, typer.Argument(help="Exact id of an active goal.")],
    note: Annotated[str | None, typer.Option("--note", help="Why it is abandoned.")] = None,
) -> None:
    """Abandon an active goal, with an optional reason (SRV-14)."""
    from shadowcode.engine.api import GoalAbandon

    g = globals_of(ctx)
    _show_goal(g, with_engine(g, lambda api: api.goal_abandon(GoalAbandon(goal_id, note), g.caller())))


_TASK_HELP = "A task's note (exact task id) instead of the project's."
_TEXT_HELP = "The text; '-' reads it from stdin."


def _text(text: str) -> str:
    return sys.stdin.read() if text == "-" else text


def _show_note(g: Globals, note: MemoryNote, *, content: bool) -> None:
    from shadowcode.engine.wire import to_json

    whose = f"task {note.task_id}" if note.task_id else "project"
    head = f"{whose} note  hash {note.hash}  updated {_when(note.updated_at)}"
    text = head + ("\n" + note.content if content and note.content else "")
    emit(g, to_json(note), text)


@memory_app.command("read")
def memory_read(
    ctx: typer.Context, task: Annotated[str | None, typer.Option("--task", help=_TASK_HELP)] = None
) -> None:
    """Print the note and its hash (pass the hash to replace) (SRV-12)."""
    from shadowcode.engine.api import MemoryRef

    g = globals_of(ctx)
    ref = MemoryRef("task" if task else "project", task)
    _show_note(g, with_engine(g, lambda api: api.memory_read(ref, g.caller())), content=True)


@memory_app.command("append")
def memory_append(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help=_TEXT_HELP)],
    task: Annotated[str | None, typer.Option("--task", help=_TASK_HELP)] = None,
) -> None:
    """Append a paragraph to the note (SRV-12)."""
    from shadowcode.engine.api import MemoryAppend

    g = globals_of(ctx)
    request = MemoryAppend(_text(text), "task" if task else "project", task)
    _show_note(g, with_engine(g, lambda api: api.memory_append(request, g.caller())), content=False)


@memory_app.command("replace")
def memory_replace(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help=_TEXT_HELP)],
    expected_hash: Annotated[str, typer.Option("--expected-hash", help="The note's hash as `memory read` showed it.")],
    task: Annotated[str | None, typer.Option("--task", help=_TASK_HELP)] = None,
) -> None:
    """Replace the note, only if it still has the hash you read; a stale hash changes nothing (SRV-12)."""
    from shadowcode.engine.api import MemoryReplace

    g = globals_of(ctx)
    request = MemoryReplace(_text(text), expected_hash, "task" if task else "project", task)
    _show_note(g, with_engine(g, lambda api: api.memory_replace(request, g.caller())), content=False)
