"""Entry point: ``python -m shadowcode``, the console script and the zipapp's entry."""

from __future__ import annotations


def main() -> None:
    """Run the ``shadowcode`` command line; exits the process with the command's status."""
    from shadowcode.cli import run

    run()


if __name__ == "__main__":
    main()
