"""Global options shared by every command, and the one way commands print results."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from shadowcode.errors import UsageError

__all__ = ["Globals", "emit", "globals_of"]


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


def globals_of(ctx: typer.Context) -> Globals:
    """The :class:`Globals` stored by the root callback."""
    root = ctx.find_root()
    obj = root.obj
    assert isinstance(obj, Globals)
    return obj


def emit(g: Globals, document: Any, text: str) -> None:
    """Print ``document`` as one JSON document with ``--json``, else ``text`` (a newline is added)."""
    if g.json:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")
