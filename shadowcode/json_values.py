"""Decoded JSON narrowed to a typed shape: an object or an array, or None.

``json.loads`` gives ``Any``; ``isinstance(value, dict)`` narrows it to a dict whose keys and
values a type checker cannot know. :func:`json_object` and :func:`json_array` make the one
assumption decoded JSON allows (an object's keys are strings) and type each value as
``object``, so every read after them is checked where it is used.

This module imports nothing, not even :mod:`typing` (the relay's start-up path uses it).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is too heavy to import on the relay's fast path
if TYPE_CHECKING:
    from typing import cast
else:

    def cast(_type: object, value: object) -> object:
        """:func:`typing.cast` without importing typing: the value itself."""
        return value


__all__ = ["json_array", "json_object"]


def json_object(value: object) -> dict[str, object] | None:
    """``value`` when it is a JSON object (a ``dict``, keys taken to be strings), else None."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def json_array(value: object) -> list[object] | None:
    """``value`` when it is a JSON array (a ``list``), else None."""
    return cast("list[object]", value) if isinstance(value, list) else None
