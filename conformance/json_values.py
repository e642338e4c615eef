"""Decoded JSON narrowed at the boundary: an object, an array, or the objects in an array.

``json.loads`` (and ``yaml.safe_load``) give ``Any``; ``isinstance(value, dict)`` narrows it to
a dict whose keys and values a type checker cannot know. These accessors make the one
assumption decoded JSON allows (an object's keys are strings) and say so once, here, instead
of a ``cast`` at every read. The values stay ``Any``: what a server, host or report wrote is
checked where it is read (a ``.get`` compared with an expected value, an ``isinstance``).

The suite carries its own copy of the product's ``shadowcode/json_values.py`` idea because it
imports nothing of the implementation it checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["json_array", "json_member", "json_object", "json_objects"]


def json_object(value: object) -> dict[str, Any] | None:
    """``value`` when it is a JSON object (a ``dict``, keys taken to be strings), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def json_array(value: object) -> list[Any] | None:
    """``value`` when it is a JSON array (a ``list``), else None."""
    return cast("list[Any]", value) if isinstance(value, list) else None


def json_objects(value: object) -> list[dict[str, Any]]:
    """The JSON objects in ``value`` when it is an array (other items dropped); else []."""
    return [found for item in json_array(value) or [] if (found := json_object(item)) is not None]


def json_member(parent: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The JSON object under ``key`` in ``parent``; {} when it is missing or not an object."""
    return json_object(parent.get(key)) or {}
