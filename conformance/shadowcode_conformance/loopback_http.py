"""One HTTP request read off a loopback socket, for the hostile servers the checks play.

The checks that play a misbehaving MCP server over Streamable HTTP write their replies byte by
byte (wrong headers, bombs, broken framing), so they need only the request: its head and its
JSON body, parsed with ``h11``.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

import anyio
import anyio.abc
import h11

__all__ = ["read_request"]


async def read_request(stream: anyio.abc.SocketStream) -> tuple[h11.Request, Any] | None:
    """Read one request from ``stream``.

    Args:
        stream: a connection accepted on loopback; left open for the reply.

    Returns:
        ``(head, message)``: the request head and its body parsed as JSON (``{}`` for an empty
        body); None when the client closed, sent something that is not HTTP/1.1, or a body that
        is not JSON.
    """
    conn = h11.Connection(h11.SERVER)
    head: h11.Request | None = None
    body = bytearray()
    with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError, h11.RemoteProtocolError):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive())
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                try:
                    return head, json.loads(body) if body else {}
                except ValueError:
                    return None
            else:
                return None
    return None
