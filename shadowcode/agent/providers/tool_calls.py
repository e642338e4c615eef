"""Building :class:`ToolCall` values from what a model or a script gave (ENG-05)."""

from __future__ import annotations

import json
from typing import Any

from shadowcode.agent.providers.base import ToolCall
from shadowcode.json_values import json_object

__all__ = ["make_tool_call", "parse_arguments"]


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """The JSON object in ``raw``, or None when ``raw`` is not JSON or not an object."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return json_object(value)


def make_tool_call(call_id: str, name: str, arguments: dict[str, Any] | str | None) -> ToolCall:
    """A :class:`ToolCall` from arguments given as text (parsed here) or as an object.

    Args:
        call_id: the call id to keep.
        name: the tool name.
        arguments: JSON text as received, an already decoded object, or None (no arguments:
            the raw text is empty and ``arguments`` None).
    """
    if arguments is None:
        return ToolCall(id=call_id, name=name, arguments=None, raw_arguments="")
    if isinstance(arguments, str):
        return ToolCall(id=call_id, name=name, arguments=parse_arguments(arguments), raw_arguments=arguments)
    return ToolCall(id=call_id, name=name, arguments=dict(arguments), raw_arguments=json.dumps(arguments))
