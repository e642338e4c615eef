"""``shadowcode engine [status|stop]``, ``bg list|stop`` and ``models list|add`` (ENG-03, ENG-05, SRV-23)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from shadowcode.cli.context import Globals, emit, globals_of

__all__ = ["bg_app", "engine_app", "models_app"]

engine_app = typer.Typer(help="The profile's headless engine.", invoke_without_command=True)
bg_app = typer.Typer(help="Background processes of the headless engine.", no_args_is_help=True)
models_app = typer.Typer(help="Model providers configured in the profile.", no_args_is_help=True)


def _profile(g: Globals) -> Any:
    from shadowcode.profile import Profile

    return Profile.select(g.profile)


async def _remote_call(g: Globals, method: str, *args: Any) -> Any:
    from shadowcode.engine.remote import connect_remote
    from shadowcode.errors import ConfigError

    remote = await connect_remote(_profile(g))
    if remote is None:
        raise ConfigError("no headless engine runs for this profile (start it with `shadowcode engine &`)")
    try:
        return await getattr(remote, method)(*args)
    finally:
        await remote.aclose()


@engine_app.callback()
def engine(ctx: typer.Context) -> None:
    """Run the headless engine in the foreground until SIGTERM/SIGINT (ENG-03)."""
    if ctx.invoked_subcommand is not None:
        return
    import logging
    import sys

    from shadowcode.engine.daemon import run_headless
    from shadowcode.mcp.server.attached import serve_attached

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="shadowcode engine: %(levelname)s %(message)s")
    run_headless(_profile(globals_of(ctx)), attach=serve_attached)


@engine_app.command("status")
def engine_status(ctx: typer.Context) -> None:
    """Show whether the headless engine runs, and what it is doing."""
    import anyio

    from shadowcode.engine.remote import connect_remote

    g = globals_of(ctx)

    async def probe() -> dict[str, Any] | None:
        remote = await connect_remote(_profile(g))
        if remote is None:
            return None
        try:
            return await remote.status()
        finally:
            await remote.aclose()

    status = anyio.run(probe)
    if status is None:
        emit(g, {"running": False}, "no headless engine runs for this profile")
        raise typer.Exit(3)
    emit(g, {"running": True} | status,
         f"engine {status['id']} (pid {status['pid']}): {status['owners']} owners, "
         f"{len(status['running_jobs'])} running, {len(status['queued_jobs'])} queued")  # fmt: skip


@engine_app.command("stop")
def engine_stop(ctx: typer.Context) -> None:
    """Stop the headless engine after it cancels and cleans up every owner's work."""
    import anyio

    g = globals_of(ctx)
    anyio.run(_remote_call, g, "stop")
    emit(g, {"stopping": True}, "engine stopping")


@bg_app.command("list")
def bg_list(ctx: typer.Context) -> None:
    """List the headless engine's background processes (SRV-23)."""
    import anyio

    g = globals_of(ctx)
    found = anyio.run(_remote_call, g, "background")
    lines = [f"{p['id']}  pid {p['pid']}  {' '.join(p['argv'])}" for p in found]
    emit(g, {"processes": found}, "\n".join(lines) or "no background processes")


@bg_app.command("stop")
def bg_stop(ctx: typer.Context, process_id: Annotated[str, typer.Argument(help="Background process id.")]) -> None:
    """Stop one background process: TERM, 150 ms, KILL its group (SRV-23)."""
    import anyio

    g = globals_of(ctx)
    done = anyio.run(_remote_call, g, "stop_background", process_id)
    emit(g, done, f"stopped {process_id}")


@models_app.command("list")
def models_list(ctx: typer.Context) -> None:
    """List configured models and the default (ENG-05)."""
    g = globals_of(ctx)
    settings = _profile(g).settings()
    doc = {"models": [m.model_dump() for m in settings.models], "default": settings.default_model}
    lines = [f"{m.name}  {m.provider}  {m.model or m.script or ''}" for m in settings.models]
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
    import json

    from pydantic import ValidationError

    from shadowcode.errors import UsageError
    from shadowcode.profile import ModelSettings

    g = globals_of(ctx)
    profile = _profile(g)
    profile.ensure()
    try:
        entry = ModelSettings(name=name, provider=provider, model=model, base_url=base_url,
                              script=str(script.resolve()) if script else None, api_key_env=api_key_env,
                              request_log=str(request_log.resolve()) if request_log else None)  # fmt: skip
    except ValidationError as exc:
        raise UsageError(f"invalid model: {exc.errors()[0]['msg']}") from exc
    if provider == "scripted" and not entry.script:
        raise UsageError("--provider scripted needs --script FILE")
    if provider == "openai" and not (entry.base_url and entry.model):
        raise UsageError("--provider openai needs --base-url and --model")
    settings = profile.settings()
    models = [m for m in settings.models if m.name != name] + [entry]
    chosen_default = name if default or not settings.default_model else settings.default_model
    doc = settings.model_copy(update={"models": tuple(models), "default_model": chosen_default}).model_dump(
        exclude_none=True
    )
    profile.settings_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    emit(g, doc, f"model {name} saved ({provider}); default: {chosen_default}")
