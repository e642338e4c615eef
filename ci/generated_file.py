"""The command line of the scripts under ci/ that render a tracked file from the code.

``python ci/<script>.py`` writes the file; ``--check`` exits 1 when the tracked file differs
from what the code renders now; any other argument exits 2 with a usage line and writes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def write_or_check(argv: list[str], target: Path, render: Callable[[], str], script: str) -> int:
    """Write ``render()`` to ``target``, or with ``["--check"]`` compare it; returns the exit status.

    Args:
        argv: the script's arguments: ``[]`` or ``["--check"]``.
        target: the generated file.
        render: the file's text as the code renders it now (UTF-8 when written).
        script: the script's path from the checkout's root, for the messages.

    Returns:
        0 written or current; 1 ``--check`` found the file out of date; 2 an unknown argument.
    """
    if argv not in ([], ["--check"]):
        sys.stderr.write(f"usage: python {script} [--check]\n")
        return 2
    text = render()
    name = target.relative_to(REPO)
    if argv == ["--check"]:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            sys.stderr.write(f"{name} is out of date: run python {script}\n")
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    sys.stderr.write(f"wrote {name}\n")
    return 0
