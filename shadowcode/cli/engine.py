"""``shadowcode engine [status|stop]``, ``bg list|stop`` and ``models list|add`` (ENG-03, ENG-05, SRV-23)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from shadowcode.cli.context import Globals, emit, globals_of, with_engine

if TYPE_CHECKING:
    from shadowcode.engine.api import EngineApi

T = TypeVar("T")

__all__ = ["bg_app", "engine_app", "models_app"]

engine_app = typer.Typer(help="The profile's headless engine.", invoke_without_command=True)
bg_app = typer.Typer(help="Background processes of the headless engine.", no_args_is_help=True)
models_app = typer.Typer(help="Model providers configured in the profile.", no_args_is_help=True)


def _profile(g: Globals) -> Any:
    from shadowcode.profile import Profile

    return Profile.select(g.profile)


def _with_headless(g: Globals, work: Callable[[EngineApi], Awaitable[T]]) -> T:
    """Run ``work`` against the running headless engine.

    Raises:
        ConfigError: no headless engine runs for the profile.
    """
    import anyio

    from shadowcode.engine import open_headless
    from shadowcode.errors import ConfigError

    async def main() -> T:
        async with open_headless(_profile(g)) as api:
            if api is None:
                raise ConfigError("no headless engine runs for this profile (start it with `shadowcode engine &`)")
            return await work(api)

    return anyio.run(main)


@engine_app.callback()
def engine(ctx: typer.Context) -> None:
    """Run the headless engine in the foreground until SIGTERM/SIGINT (ENG-03)."""
    if ctx.invoked_subcommand is not None:
        return
    import logging
    import sys

    from shadowcode.engine import run_headless
    from shadowcode.mcp.server.attached import serve_attached

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="shadowcode engine: %(levelname)s %(message)s")
    run_headless(_profile(globals_of(ctx)), attach=serve_attached)


@engine_app.command("status")
def engine_status(ctx: typer.Context) -> None:
    """Show whether the headless engine runs, and what it is doing."""
    import anyio

    from shadowcode.engine import open_headless
    from shadowcode.engine.api import Empty, EngineStatus
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)

    async def probe() -> EngineStatus | None:
        async with open_headless(_profile(g)) as api:
            return None if api is None else await api.engine_status(Empty())

    status = anyio.run(probe)
    if status is None:
        emit(g, {"running": False}, "no headless engine runs for this profile")
        raise typer.Exit(3)
    emit(g, {"running": True} | to_json(status),
         f"engine {status.id} (pid {status.pid}): {status.owners} owners, "
         f"{len(status.running_jobs)} running, {len(status.queued_jobs)} queued")  # fmt: skip


@engine_app.command("stop")
def engine_stop(ctx: typer.Context) -> None:
    """Stop the headless engine after it cancels and cleans up every owner's work."""
    from shadowcode.engine.api import Empty

    g = globals_of(ctx)
    _with_headless(g, lambda api: api.engine_stop(Empty()))
    emit(g, {"stopping": True}, "engine stopping")


@bg_app.command("list")
def bg_list(ctx: typer.Context) -> None:
    """List the headless engine's background processes (SRV-23)."""
    from shadowcode.engine.api import Empty
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    found = _with_headless(g, lambda api: api.background_list(Empty()))
    lines = [f"{p.id}  pid {p.pid}  {' '.join(p.argv)}" for p in found]
    emit(g, {"processes": to_json(found)}, "\n".join(lines) or "no background processes")


@bg_app.command("stop")
def bg_stop(ctx: typer.Context, process_id: Annotated[str, typer.Argument(help="Background process id.")]) -> None:
    """Stop one background process: TERM, 150 ms, KILL its group (SRV-23)."""
    from shadowcode.engine.api import BackgroundRef
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    done = _with_headless(g, lambda api: api.background_stop(BackgroundRef(process_id)))
    emit(g, to_json(done), f"stopped {process_id}")


@models_app.command("list")
def models_list(ctx: typer.Context) -> None:
    """List configured models and the default (ENG-05)."""
    from shadowcode.engine.api import Empty

    g = globals_of(ctx)
    listing = with_engine(g, lambda api: api.model_list(Empty(), g.caller(project=False)))
    doc = {"models": [m.model_dump() for m in listing.models], "default": listing.default}
    lines = [f"{m.name}  {m.provider}  {m.model or m.script or ''}" for m in listing.models]
    emit(g, doc, "\n".join(lines) or "no models configured")


@models_app.command("add")
def models_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Name tasks select the model by.")],
    provider: Annotated[str, typer.Option("--provider", help="scripted or openai.")],
    script: Annotated[Path | None, typer.Option("--script", help="Model script (scripted).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Provider's model id (openai).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (openai).")] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Variable or stored secret holding the key.")
    ] = None,
    request_log: Annotated[
        Path | None, typer.Option("--request-log", help="Append one JSON line per model request to this file.")
    ] = None,
    default: Annotated[bool, typer.Option("--default", help="Make it the default model.")] = False,
) -> None:
    """Add (or replace) a model in the profile's settings (ENG-05)."""
    from pydantic import ValidationError

    from shadowcode.engine.api import ModelAdd
    from shadowcode.errors import UsageError
    from shadowcode.settings import ModelSettings

    g = globals_of(ctx)
    try:
        entry = ModelSettings(name=name, provider=provider, model=model, base_url=base_url,
                              script=str(script.resolve()) if script else None, api_key_env=api_key_env,
                              request_log=str(request_log.resolve()) if request_log else None)  # fmt: skip
    except ValidationError as exc:
        raise UsageError(f"invalid model: {exc.errors()[0]['msg']}") from exc
    listing = with_engine(g, lambda api: api.model_add(ModelAdd(entry, make_default=default), g.caller(project=False)))
    doc = {"models": [m.model_dump(exclude_none=True) for m in listing.models], "default_model": listing.default}
    emit(g, doc, f"model {name} saved ({provider}); default: {listing.default}")
