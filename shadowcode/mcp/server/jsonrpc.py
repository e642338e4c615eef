"""JSON-RPC rules that every transport of the MCP server applies the same way (SRV-01, SRV-25, GW-05).

The SDK's message model takes a message with a ``method`` whose ``id`` is neither a string nor
an integer (null, a boolean, a fraction, an object, an array) for a notification, which gets no
answer. The stdio transport and the HTTP gateway both refuse such a message instead, with the
same invalid-request error (-32600, id null).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mcp_types as types
else:
    from shadowcode.mcp.server.lazy_modules import lazy_module

    types = lazy_module("mcp_types")  # imported on first use: lazy_start


__all__ = ["batch_refusal", "invalid_request", "is_notification_with_id", "unusable_id_error"]


def invalid_request(
    request_id: str | int | None, message: str = "Invalid request: not a JSON-RPC 2.0 message"
) -> types.JSONRPCError:
    """The invalid-request error (-32600) for a message that is not a JSON-RPC 2.0 message.

    Args:
        request_id: the message's id when it is usable (a string or an integer), else None.
        message: the error's message.
    """
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )


def batch_refusal(body: bytes) -> types.JSONRPCError | None:
    """The error answering an HTTP request body that is a JSON array (a JSON-RPC batch) (GW-05).

    The gateway serves one message a request; batches are served on stdio connections that
    negotiated 2025-03-26 only (:mod:`shadowcode.mcp.server.batches`). Without this the SDK
    answers an array with a validation error (-32602) quoting its own models.

    Args:
        body: the request body.

    Returns:
        The invalid-request error (-32600, id null) for an array, else None.
    """
    if body.lstrip()[:1] != b"[":
        return None
    return invalid_request(None, "Invalid request: the HTTP gateway serves one JSON-RPC message a request, no batch")


def is_notification_with_id(message: types.JSONRPCMessage, raw: bytes) -> bool:
    """Whether ``message`` decoded as a notification although its JSON object has an ``id`` member.

    Args:
        message: what the SDK's model made of ``raw``.
        raw: the message's JSON text.

    Returns:
        True for a message to refuse with :func:`invalid_request` (None as its id).
    """
    if not isinstance(message, types.JSONRPCNotification) or b'"id"' not in raw:
        return False
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "id" in doc


def unusable_id_error(body: bytes) -> types.JSONRPCError | None:
    """The error answering an HTTP request body that the SDK would take as a notification despite its ``id``.

    Bodies that are not a JSON-RPC message at all are left to the SDK, which answers them.

    Args:
        body: the request body.

    Returns:
        The invalid-request error to answer with, or None when the body may go to the SDK.
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(body, by_name=False)
    except ValueError:
        return None
    return invalid_request(None) if is_notification_with_id(message, body) else None
