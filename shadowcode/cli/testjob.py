"""``shadowcode test [COMMAND...]``: a test job from the terminal (SRV-17, ENG-07).

A frontend over the engine's ``test_submit`` verb (what shadow_test calls): the job runs the
given command, or the one test command the engine detects, after an exact approval like any
command (approve it with ``shadowcode approve ID`` from another terminal). The command follows
the job like ``shadowcode run`` and ends it when interrupted.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from shadowcode.cli.context import emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import EngineApi

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``test`` to the root app."""
    app.command("test", context_settings={"allow_interspersed_args": False})(test)


def test(
    ctx: typer.Context,
    command: Annotated[
        list[str] | None, typer.Argument(help="The test command and its arguments; omitted: the detected one.")
    ] = None,
) -> None:
    """Run the project's tests as a job: approval as for any command, then follow it. Exit 0 when it passed."""
    from shadowcode.cli.tasks import follow_job
    from shadowcode.engine.api import TestRequest

    g = globals_of(ctx)
    request = TestRequest(list(command) if command else None)

    async def submit(api: EngineApi) -> str:
        import anyio

        from shadowcode.engine.wire import to_json

        owner = await api.open_owner("cli", g.caller())
        try:
            job = await api.test_submit(request, g.caller(owner=owner))
            if not g.json:
                from shadowcode.cli.render import visible

                sys.stdout.write(f"{job.job_id} started: {visible(' '.join(job.command))}\n")
                sys.stdout.flush()
            final = await follow_job(g, api, job.job_id)
        finally:
            with anyio.CancelScope(shield=True):
                await api.close_owner(owner, "the command ended")
        if g.json:
            emit(g, to_json(final.job) | {"command": job.command}, "")
        return str(final.job.status)

    status = with_engine(g, submit)
    raise typer.Exit(0 if status == "done" else 1)
