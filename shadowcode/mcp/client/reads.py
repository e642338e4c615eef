"""Reading a resource and getting a prompt on a connection, bounded and redacted (CW-06).

Covers CW-06, CW-07.

:func:`read_resource` sends ``resources/read`` (within the connection's ``read`` timeout) and
:func:`get_prompt` ``prompts/get`` (within its ``call`` timeout, CW-07), never retried. A
result larger than ``helper_result_max_bytes`` (for a resource: the UTF-8 bytes of its text and
the characters of its base64 blobs; for a prompt: its messages as compact UTF-8 JSON) is
refused whole, never cut; the connection stays usable. :func:`check_prompt_arguments` refuses arguments that do not
match a prompt's declaration before anything is sent. Results are redacted like tool results.
Approvals are decided above this package.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
from pydantic import TypeAdapter

from shadowcode.errors import ToolError, UpstreamServerError
from shadowcode.json_values import json_object
from shadowcode.mcp.client.connection import Connection

__all__ = ["check_prompt_arguments", "get_prompt", "read_resource"]

_READ_RESULT: TypeAdapter[types.ReadResourceResult | types.InputRequiredResult] = TypeAdapter(
    types.ReadResourceResult | types.InputRequiredResult
)
_PROMPT_RESULT: TypeAdapter[types.GetPromptResult | types.InputRequiredResult] = TypeAdapter(
    types.GetPromptResult | types.InputRequiredResult
)


def _refuse_input(conn: Connection, result: Any, what: str) -> None:
    if isinstance(result, types.InputRequiredResult) or getattr(result, "result_type", "complete") != "complete":
        raise UpstreamServerError(
            f"{conn.server_id}: {what} asked for further input; this client refuses it", server=conn.server_id
        )


def _too_large(conn: Connection, what: str, size: int) -> UpstreamServerError:
    limit = conn.catalog_limits.helper_result_max_bytes
    return UpstreamServerError(
        f"{conn.server_id}: {what} is {size} bytes; the limit is {limit} bytes, so none of it is returned",
        server=conn.server_id,
    )


async def read_resource(
    conn: Connection, uri: str, *, check: Callable[[list[dict[str, Any]]], object] | None = None
) -> dict[str, Any]:
    """Send one ``resources/read`` and return ``{"uri", "contents": [...]}`` (as sent, redacted).

    ``check``, when given, sees the contents as sent (before redaction) and may refuse them by
    raising; nothing is returned then (a skill file's verification, CW-09).

    Raises:
        CallRefused: the server answered with a JSON-RPC error (the connection stays usable).
        UpstreamServerError: the result is larger than ``helper_result_max_bytes``, asked for more
            input, or the connection failed or timed out.
    """
    request = types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri))
    result = await conn.send(request, _READ_RESULT, "resources/read", "the resource read", timeout="read")
    _refuse_input(conn, result, "the resource read")
    size = 0
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            size += len(item.text.encode("utf-8"))
        else:
            size += len(item.blob)
    if size > conn.catalog_limits.helper_result_max_bytes:
        raise _too_large(conn, f"the resource {uri!r}", size)
    contents = [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in result.contents]
    if check is not None:
        check(contents)
    return conn.redactor.redact({"uri": uri, "contents": contents})


def check_prompt_arguments(prompt: dict[str, Any], arguments: object) -> dict[str, str]:
    """The arguments of a ``prompts/get``, checked against the prompt's declaration (CW-06).

    Args:
        prompt: the ``prompts/list`` entry (``name``, ``arguments: [{"name", "required"}]``).
        arguments: what the model sent (None for none).

    Raises:
        ToolError: not an object of strings, an undeclared name or a required one missing;
            nothing is sent.
    """
    name = prompt.get("name")
    given = json_object({} if arguments is None else arguments)
    if given is None:
        raise ToolError(f"the arguments of prompt {name!r} must be a JSON object of strings; nothing was sent")
    declared = {str(a.get("name")): bool(a.get("required")) for a in prompt.get("arguments") or ()}
    unknown = sorted(k for k in given if k not in declared)
    if unknown:
        raise ToolError(
            f"prompt {name!r} declares no argument {', '.join(map(repr, unknown))} "
            f"(declared: {', '.join(sorted(declared)) or 'none'}); nothing was sent"
        )
    missing = sorted(k for k, required in declared.items() if required and k not in given)
    if missing:
        raise ToolError(f"prompt {name!r} requires {', '.join(map(repr, missing))}; nothing was sent")
    not_text = sorted(k for k, v in given.items() if not isinstance(v, str))
    if not_text:
        raise ToolError(
            f"prompt arguments are strings; {', '.join(map(repr, not_text))} of {name!r} is not; nothing was sent"
        )
    return {k: str(v) for k, v in given.items()}


async def get_prompt(conn: Connection, name: str, arguments: dict[str, str]) -> dict[str, Any]:
    """Send one ``prompts/get`` (arguments already checked) and return ``{"prompt", "description", "messages"}``.

    Raises:
        CallRefused: the server answered with a JSON-RPC error (the connection stays usable).
        UpstreamServerError: the result is larger than ``helper_result_max_bytes``, asked for more
            input, or the connection failed or timed out.
    """
    request = types.GetPromptRequest(params=types.GetPromptRequestParams(name=name, arguments=arguments))
    result = await conn.send(request, _PROMPT_RESULT, "prompts/get", "the prompt request", timeout="call")
    _refuse_input(conn, result, "the prompt request")
    messages = [m.model_dump(by_alias=True, mode="json", exclude_none=True) for m in result.messages]
    size = len(json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > conn.catalog_limits.helper_result_max_bytes:
        raise _too_large(conn, f"the prompt {name!r}", size)
    return conn.redactor.redact({"prompt": name, "description": result.description, "messages": messages})
