"""Render docs/limits.md from shadowcode/limits.py (STYLE 12), or check it is current.

Usage: ``python ci/limits_doc.py`` writes the file; ``--check`` exits 1 when it differs.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from generated_file import write_or_check

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "shadowcode" / "limits.py"
TARGET = REPO / "docs" / "limits.md"


def render() -> str:
    """The Markdown table of every limit: name, value, and its docstring."""
    import shadowcode.limits as limits

    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    rows = []
    body = tree.body
    for node, after in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            doc = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else ""
            name = node.target.id
            text = " ".join(str(doc).split())
            rows.append(f"| `{name}` | {getattr(limits, name)!r} | {text} |")
    head = [
        "# Limits",
        "",
        "Every numeric limit of ShadowCode, generated from `shadowcode/limits.py` by `python ci/limits_doc.py`.",
        "Each is tested at the limit (accepted) and one past it (refused).",
        "",
        "| name | value | meaning |",
        "| --- | --- | --- |",
    ]
    return "\n".join(head + rows) + "\n"


def main(argv: list[str]) -> int:
    return write_or_check(argv, TARGET, render, "ci/limits_doc.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
