"""Global options shared by every command, and the one way commands print results."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from shadowcode.errors import UsageError

if TYPE_CHECKING:
    from shadowcode.engine.api import Caller, EngineApi, OwnerHandle

__all__ = ["Globals", "emit", "globals_of", "with_engine"]

T = TypeVar("T")


@dataclass(frozen=True)
class Globals:
    """Options given before the verb.

    Attributes:
        workspace: ``--workspace`` as typed (not yet canonical), or None for the cwd.
        profile: ``--profile`` name, or None for the default profile.
        json: ``--json``: print one JSON document and nothing else.
    """

    workspace: Path | None
    profile: str | None
    json: bool

    def workspace_path(self) -> Path:
        """The workspace as given, or the current directory.

        Raises:
            UsageError: no ``--workspace`` and the current directory no longer exists.
        """
        if self.workspace is not None:
            return self.workspace
        try:
            return Path.cwd()
        except OSError as exc:
            raise UsageError(f"the current directory cannot be read ({exc.strerror}); pass --workspace DIR") from exc

    def caller(self, *, project: bool = True, owner: OwnerHandle | None = None) -> Caller:
        """The CLI as the engine sees it: interactive, so writes and approvals are its own to make,
        and it acts for the whole profile (ENG-07, ENG-08).

        Args:
            project: name the workspace as the caller's project (False: no project).
            owner: the CLI's owner, for a task it follows.
        """
        from shadowcode.engine.api import Access, Caller

        return Caller(
            project=self.workspace_path() if project else None,
            access=Access(allow_write=True, allow_approvals=True),
            owner=owner,
        )


def with_engine(g: Globals, work: Callable[[EngineApi], Awaitable[T]]) -> T:
    """Run ``work`` against the profile's engine: the headless one when it runs, else a temporary
    one inside this process that closes, with everything it started, when ``work`` returns (ENG-03)."""
    import anyio

    from shadowcode.engine import open_engine
    from shadowcode.profile import Profile

    profile = Profile.select(g.profile)

    async def main() -> T:
        async with open_engine(profile) as api:
            return await work(api)

    return anyio.run(main)


def globals_of(ctx: typer.Context) -> Globals:
    """The :class:`Globals` stored by the root callback."""
    root = ctx.find_root()
    obj = root.obj
    assert isinstance(obj, Globals)
    return obj


def emit(g: Globals, document: Any, text: str) -> None:
    """Print ``document`` as one JSON document with ``--json``, else ``text`` (a newline is added).

    ``text`` passes :func:`~shadowcode.cli.render.terminal_text` first: whatever a view took from
    a server, a project or a model reaches the terminal with its control characters made visible
    (CW-04).
    """
    if g.json:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    else:
        from shadowcode.cli.render import terminal_text

        sys.stdout.write(terminal_text(text.rstrip("\n")) + "\n")
