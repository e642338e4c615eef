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
    from shadowcode.cli.app import app
    from shadowcode.errors import ShadowcodeError

    try:
        app(args=argv, prog_name="shadowcode", standalone_mode=False)
    except ShadowcodeError as exc:
        sys.stderr.write(f"shadowcode: {exc.message}\n")
        sys.exit(exc.exit_code)
    except _click_exceptions() as exc:  # usage errors, aborts
        _report_click(exc)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)


def _click_exceptions() -> tuple[type[BaseException], ...]:
    import click

    return (click.ClickException, click.exceptions.Exit, click.exceptions.Abort)


def _report_click(exc: BaseException) -> None:
    import click

    if isinstance(exc, click.exceptions.Exit):
        sys.exit(exc.exit_code)
    if isinstance(exc, click.exceptions.Abort):
        sys.stderr.write("Aborted.\n")
        sys.exit(1)
    assert isinstance(exc, click.ClickException)
    exc.show(file=sys.stderr)
    sys.exit(exc.exit_code)
