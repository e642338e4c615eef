"""What a host's model request offers and carries back, on the Chat Completions and Gemini wires (REG-08).

The host checks read two things out of the requests a host sends its model: which of
ShadowCode's tools the first request offers (and under which name the host calls each), and
the result of the scripted ``shadow_status`` call as a later request carries it back. Hosts
name an MCP tool each in their own way (``shadow_status``, ``mcp__shadowcode__shadow_status``,
``shadowcode_shadow_status``, ``mcp_shadowcode_shadow_status``): a name counts as the tool
when it is the tool's name, or ends with it after a separator and names the server before it.

* Chat Completions (Qwen Code, Cline, opencode, Kilo, Continue): ``tools`` is a list of
  ``{"type": "function", "function": {"name": ...}}``; a result comes back as a message with
  ``role`` ``tool`` and the call's ``tool_call_id``.
* Gemini (Gemini CLI): ``tools`` is a list of ``{"functionDeclarations": [{"name": ...}]}``; a
  result comes back as a ``functionResponse`` part naming the function.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from shadowcode_conformance.checks.python_client import EXPECTED_TOOLS
from shadowcode_conformance.json_values import json_array, json_member, json_object, json_objects
from shadowcode_conformance.scripted_model import ModelRequest

__all__ = [
    "chat_offered",
    "chat_result",
    "gemini_offered",
    "gemini_result",
    "is_chat",
    "is_gemini",
    "result_text",
    "tool_named",
]

_SERVER = "shadowcode"


def tool_named(name: str) -> str | None:
    """The ShadowCode tool a host's function name stands for, or None."""
    if name in EXPECTED_TOOLS:
        return name
    for tool in EXPECTED_TOOLS:
        head = name[: -len(tool)]
        if name.endswith(tool) and head[-1:] in ("_", "-", ".", "0") and _SERVER in head.lower():
            return tool
    return None


def _offered(names: Iterable[object]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in names:
        if isinstance(name, str) and (tool := tool_named(name)) is not None:
            found.setdefault(tool, name)
    return found


def is_chat(request: ModelRequest) -> bool:
    """A Chat Completions request (``POST .../chat/completions``)."""
    return request.method == "POST" and request.path.split("?")[0].endswith("/chat/completions")


def is_gemini(request: ModelRequest) -> bool:
    """A Gemini ``generateContent`` or ``streamGenerateContent`` request."""
    path = request.path.split("?")[0]
    return request.method == "POST" and path.endswith((":generateContent", ":streamGenerateContent"))


def chat_offered(body: object) -> dict[str, str]:
    """ShadowCode tools a Chat Completions request offers: tool name to the function name the host gave it."""
    tools = json_objects((json_object(body) or {}).get("tools"))
    return _offered(json_member(t, "function").get("name") for t in tools)


def gemini_offered(body: object) -> dict[str, str]:
    """ShadowCode tools a Gemini request offers: tool name to the function name the host gave it."""
    names: list[object] = []
    for tool in json_objects((json_object(body) or {}).get("tools")):
        names += [d.get("name") for d in json_objects(tool.get("functionDeclarations"))]
    return _offered(names)


def result_text(value: object) -> str:
    """A result as text: a string as is; else every string in it, one a line, then the value as JSON.

    A host may carry the tool's text block, its structured content, or both, wrapped in its
    own object (``{"output": ...}``) or as a string of JSON content blocks (Continue CLI); the
    status reader finds the summary or the JSON in this.
    """
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        nested = json_array(parsed) is not None or json_object(parsed) is not None
        return result_text(parsed) if nested else value
    strings: list[str] = []

    def walk(part: object) -> None:
        if isinstance(part, str):
            strings.append(part)
        elif (items := json_array(part)) is not None:
            for item in items:
                walk(item)
        elif (members := json_object(part)) is not None:
            for item in members.values():
                walk(item)

    walk(value)
    return "\n".join(strings) + "\n" + json.dumps(value)


def chat_result(requests: Iterable[ModelRequest], call_id: str) -> str | None:
    """The text of the ``tool`` message answering ``call_id``, from any request."""
    for request in requests:
        for message in json_objects((json_object(request.body) or {}).get("messages")):
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return result_text(message.get("content"))
    return None


def gemini_result(requests: Iterable[ModelRequest], function: str) -> str | None:
    """The ``functionResponse`` for ``function``, as text, from any request."""
    for request in requests:
        for content in json_objects((json_object(request.body) or {}).get("contents")):
            for part in json_objects(content.get("parts")):
                answer = json_object(part.get("functionResponse"))
                if answer is not None and answer.get("name") == function:
                    return result_text(answer.get("response"))
    return None
