"""Decoded JSON (or YAML) narrowed to the shapes the checks read: an object, or a list of objects.

``json.loads`` gives ``Any``; ``isinstance(value, dict)`` narrows it to a dict whose keys and
values a type checker cannot know. :func:`json_object` and :func:`json_objects` make the one
assumption decoded JSON allows (an object's keys are strings) and leave every read after them to
the check that makes it; :func:`json_array` narrows a list, :func:`json_member` reads the object
under a key (``{}`` when it is missing or not an object). The conformance distribution imports
nothing of the implementation it checks, so it keeps these accessors of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["json_array", "json_member", "json_object", "json_objects"]


def json_object(value: object) -> dict[str, Any] | None:
    """``value`` when it is a JSON (or YAML) mapping, keys taken to be strings; else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def json_objects(value: object) -> list[dict[str, Any]]:
    """The mappings in ``value`` when it is a list (others dropped); else []."""
    items = cast("list[object]", value) if isinstance(value, list) else []
    return [found for item in items if (found := json_object(item)) is not None]


def json_array(value: object) -> list[Any] | None:
    """``value`` when it is a JSON (or YAML) list, else None."""
    return cast("list[Any]", value) if isinstance(value, list) else None


def json_member(parent: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The mapping under ``key`` in ``parent``; {} when it is missing or not a mapping."""
    return json_object(parent.get(key)) or {}
