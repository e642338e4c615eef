"""Render docs/cli-reference.md from the CLI's own --help (STYLE 28), or check it is current.

Usage: ``python ci/cli_doc.py`` writes the file; ``--check`` exits 1 when it differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from generated_file import write_or_check

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "docs" / "cli-reference.md"


def commands() -> list[tuple[str, object, object]]:
    """Every command as ``(full name, click command, click context)``, depth first, in order."""
    import typer.main

    from shadowcode.cli.app import app

    root = typer.main.get_command(app)
    out: list[tuple[str, object, object]] = []

    def walk(cmd: object, path: list[str], parent: object | None) -> None:
        ctx = cmd.make_context(path[-1], [], parent=parent, resilient_parsing=True)  # type: ignore[attr-defined]
        out.append((" ".join(path), cmd, ctx))
        for name in getattr(cmd, "list_commands", lambda _ctx: [])(ctx):
            walk(cmd.get_command(ctx, name), [*path, name], ctx)  # type: ignore[attr-defined]

    walk(root, ["shadowcode"], None)
    return out


def render() -> str:
    """The reference page: one section per command with its --help text."""
    import os

    os.environ["COLUMNS"] = "100"
    lines = ["# CLI reference", "", "Generated from `--help` by `python ci/cli_doc.py`; do not edit by hand.", ""]
    for name, cmd, ctx in commands():
        lines += [f"## `{name}`", "", "```text", cmd.get_help(ctx).rstrip(), "```", ""]  # type: ignore[attr-defined]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    return write_or_check(argv, TARGET, render, "ci/cli_doc.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
