"""The ``shadowcode`` command line: a typer app, one module per verb group.

Global options ``--workspace``, ``--profile`` and ``--json`` sit before the verb
(``shadowcode --workspace DIR mcp serve``). With ``--json`` a command prints exactly one
JSON document on stdout and nothing else. A :class:`~shadowcode.errors.ShadowcodeError`
becomes a message on stderr and the error's ``exit_code``; usage errors exit 2.
"""

from __future__ import annotations

import sys

__all__ = ["run"]


def run(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, and exit with its status."""
    import typer

    from shadowcode.cli.app import app
    from shadowcode.errors import ShadowcodeError

    try:
        code = app(args=argv, prog_name="shadowcode", standalone_mode=False)
    except ShadowcodeError as exc:
        from shadowcode.cli.render import terminal_text

        sys.stderr.write(f"shadowcode: {terminal_text(exc.message)}\n")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("Aborted.\n")
        sys.exit(1)
    except typer.TyperException as exc:  # usage errors: message on stderr, exit 2
        show = getattr(exc, "show", None)
        if callable(show):
            show(file=sys.stderr)
        else:
            sys.stderr.write(f"shadowcode: {exc}\n")
        sys.exit(int(getattr(exc, "exit_code", 2)))
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
