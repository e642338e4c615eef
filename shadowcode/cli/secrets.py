"""``shadowcode secret set|list|remove``: the protected secret store (GW-01, CLI-04)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from shadowcode.cli.context import emit, globals_of

__all__ = ["secret_app"]

secret_app = typer.Typer(help="Secrets stored in the profile (values are read from stdin).", no_args_is_help=True)


@secret_app.command("set")
def secret_set(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Secret name.")]) -> None:
    """Store a secret read from stdin (one line; never from the command line)."""
    from shadowcode.profile import Profile
    from shadowcode.secrets import SecretStore

    g = globals_of(ctx)
    value = sys.stdin.readline().rstrip("\r\n")
    SecretStore(Profile.select(g.profile)).set(name, value)
    emit(g, {"name": name, "stored": True}, f"stored secret {name}")


@secret_app.command("list")
def secret_list(ctx: typer.Context) -> None:
    """List stored secret names (never values)."""
    from shadowcode.profile import Profile
    from shadowcode.secrets import SecretStore

    g = globals_of(ctx)
    names = SecretStore(Profile.select(g.profile)).names()
    emit(g, {"names": names}, "\n".join(names) or "no secrets stored")


@secret_app.command("remove")
def secret_remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Secret name.")]) -> None:
    """Remove a stored secret."""
    from shadowcode.errors import NotFound
    from shadowcode.profile import Profile
    from shadowcode.secrets import SecretStore

    g = globals_of(ctx)
    if not SecretStore(Profile.select(g.profile)).remove(name):
        raise NotFound(f"no secret {name!r} is stored")
    emit(g, {"name": name, "removed": True}, f"removed secret {name}")
