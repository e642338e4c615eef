"""Removing configured values from what an external server returns (CLI-04).

Every value a definition puts into the server's environment (literal ``env`` entries and the
resolved ``env_refs``) counts as secret. Tool metadata, tool results and the captured stderr
pass through :meth:`Redactor.redact` once: each string (object keys included) is scanned once by
one compiled alternation, longest value first, so the cost is linear in the size of the
document, which the transport's frame limit already bounds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[redacted]"
"""What replaces a configured value."""


class Redactor:
    """Replaces configured values in strings and JSON-like documents.

    Args:
        values: the configured values; empty strings are ignored.
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        unique = sorted({v for v in values if v}, key=lambda v: (-len(v), v))
        self._pattern = re.compile("|".join(re.escape(v) for v in unique)) if unique else None

    @property
    def active(self) -> bool:
        """True when there is at least one value to remove."""
        return self._pattern is not None

    def text(self, value: str) -> str:
        """``value`` with every configured value replaced by :data:`REDACTED`."""
        if self._pattern is None:
            return value
        return self._pattern.sub(REDACTED, value)

    def redact(self, document: Any) -> Any:
        """A copy of a JSON-like ``document`` (dicts, lists, strings, numbers) with values replaced.

        Keys and string values are both scanned; other scalars are returned unchanged.
        """
        if self._pattern is None:
            return document
        return self._walk(document)

    def _walk(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, dict):
            return {self.text(str(k)): self._walk(v) for k, v in cast("dict[object, object]", node).items()}
        if isinstance(node, (list, tuple)):
            return [self._walk(v) for v in cast("list[object] | tuple[object, ...]", node)]
        return node
