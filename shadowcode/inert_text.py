"""One rule for text a server, a project or a model wrote, shown to a person (CW-04, SRV-26).

Every control character (newlines and tabs included unless kept), format character (bidi
overrides, zero-width characters), line or paragraph separator, surrogate, private-use or
unassigned code point is written as a visible escape (``\\x1b``, ``\\u202e``,
``\\U000e0001``), so nothing such a string holds reaches a terminal or a host's screen as a
command, a fake line or reordered text. The CLI's views (``shadowcode.cli.render``) and the
engine's one-line job step (``shadowcode.engine.job_steps``) both use it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["cut", "inert"]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories never written raw: controls, format (bidi overrides, zero widths),
surrogates, private use, unassigned, line and paragraph separators."""

_ELLIPSIS = "…"


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def inert(text: str, keep: str = "") -> str:
    """``text`` with every hidden character written as its escape.

    Args:
        text: anything a server, a project or a model wrote.
        keep: characters to leave as they are (a block view keeps ``"\\n\\t"``).

    Returns:
        Text of printable characters (and those of ``keep``); never shorter than ``text``.
    """
    return "".join(c if c in keep or unicodedata.category(c) not in _HIDDEN_CATEGORIES else _escape(c) for c in text)


def cut(text: str, max_chars: int) -> str:
    """``text`` when it has at most ``max_chars`` characters, else its first ``max_chars - 1`` and ``…``."""
    return text if len(text) <= max_chars else text[: max_chars - 1] + _ELLIPSIS
