"""JSON-RPC batches on a stdio connection that negotiated 2025-03-26 (SRV-01, SRV-25).

The 2025-03-26 revision is the one MCP revision with batches: implementations "MUST support
receiving JSON-RPC batches" (basic, batching). Every later revision removed them, and
``initialize`` may not be part of one. So a JSON array frame is served as a batch only once the
connection's ``initialize`` was answered with 2025-03-26; before that, and on every other
revision, it stays one invalid request (-32600), as the stdio transport answers any frame that
is not a JSON-RPC message.

A batch is split into its messages, each served as if it had come alone; the answers to its
requests are held and written as one JSON array once the last one is ready (JSON-RPC 2.0,
batch). A request the client cancels (``notifications/cancelled``) gets no answer, so the
array is written without it. A batch of notifications and responses only gets no answer at
all; an empty array, or one of more than ``STDIO_BATCH_MAX_MESSAGES`` messages, gets one
invalid-request error and nothing in it is served.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from shadowcode.json_values import json_array
from shadowcode.limits import STDIO_BATCH_MAX_MESSAGES

if TYPE_CHECKING:
    import mcp_types as types
else:
    from shadowcode.mcp.server.lazy_modules import lazy_module

    types = lazy_module("mcp_types")  # imported on first use: lazy_start

__all__ = ["BATCH_REVISION", "Batches", "is_batch"]

BATCH_REVISION: Final = "2025-03-26"
"""The one protocol revision whose connections accept batches."""

Decode = Callable[[bytes], "tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]"]


def is_batch(line: bytes) -> bool:
    """Whether ``line`` (one frame, newline removed) is a JSON array by its first character."""
    return line.lstrip()[:1] == b"["


@dataclass
class _Batch:
    waiting: Counter[object]
    answers: list[bytes] = field(default_factory=list[bytes])

    def frame(self) -> bytes | None:
        """The whole batch answer once nothing is waiting (newline included); None while something
        waits, or when nothing in the batch is to be answered (JSON-RPC: then no array at all)."""
        if +self.waiting or not self.answers:
            return None
        return b"[" + b",".join(self.answers) + b"]\n"


def _error_json(error: types.JSONRPCError) -> bytes:
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")


def _refusal(message: str) -> bytes:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )
    return _error_json(error) + b"\n"


class Batches:
    """The connection's negotiated revision and the batches whose answers are still being made.

    The transport tells it every request it serves (:meth:`request_seen`) and every message it
    writes (:meth:`take_answer`), so it learns the revision from the ``initialize`` answer and
    can hold a batch's answers back until the array is whole.
    """

    def __init__(self) -> None:
        self.revision: str | None = None
        self._initialize_id: object | None = None
        self._pending: dict[object, _Batch] = {}

    @property
    def accepted(self) -> bool:
        """Whether this connection negotiated the revision that has batches."""
        return self.revision == BATCH_REVISION

    def request_seen(self, message: types.JSONRPCMessage) -> bytes | None:
        """Note a message read from the client, alone or in a batch.

        Returns:
            A batch's whole answer (newline included) when ``message`` cancels the last request
            that batch waited for (a cancelled request is never answered), else None.
        """
        if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
            # The revision asked for, until the answer names the one agreed: a batch may follow
            # the request before the answer has been written.
            self._initialize_id = message.id
            asked = (message.params or {}).get("protocolVersion")
            self.revision = asked if isinstance(asked, str) else None
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, str | int) and (batch := self._pending.pop(request_id, None)) is not None:
                batch.waiting[request_id] -= 1
                return batch.frame()
        return None

    def split(self, line: bytes, decode: Decode) -> tuple[list[types.JSONRPCMessage], bytes | None]:
        """Split a batch frame into the messages to serve and the frame to write at once.

        Args:
            line: the frame (a JSON array), newline removed; only called when :attr:`accepted`.
            decode: the transport's decoder of one message's JSON text.

        Returns:
            ``(messages, frame)``: the messages to serve in order, and a frame to write now
            (newline included): the refusal of an empty or too long batch, or the batch's answer
            when nothing in it waits for the server (errors for its invalid members only);
            None when nothing is to be written yet.
        """
        try:
            members = json_array(json.loads(line))
        except (ValueError, RecursionError):
            members = None
        if not members:
            return [], _refusal("Invalid request: an empty batch")
        if len(members) > STDIO_BATCH_MAX_MESSAGES:
            return [], _refusal(f"Invalid request: a batch holds at most {STDIO_BATCH_MAX_MESSAGES} messages")
        messages: list[types.JSONRPCMessage] = []
        batch = _Batch(Counter())
        for member in members:
            message, error = decode(json.dumps(member).encode("utf-8"))
            if message is None:
                assert error is not None
                batch.answers.append(_error_json(error))
                continue
            messages.append(message)
            if isinstance(message, types.JSONRPCRequest) and message.id not in self._pending:
                batch.waiting[message.id] += 1
                self._pending[message.id] = batch
        return messages, batch.frame()

    def take_answer(self, message: types.JSONRPCMessage, payload: bytes) -> tuple[bool, bytes | None]:
        """Route one outgoing message: held for a batch, or written as it is.

        Args:
            message: the message about to be written.
            payload: its JSON text (newline excluded).

        Returns:
            ``(held, frame)``: whether the message belongs to a batch (then it must not be
            written alone), and the batch's whole answer when this was its last one.
        """
        if isinstance(message, types.JSONRPCResponse) and message.id == self._initialize_id:
            self.revision = str(message.result.get("protocolVersion") or "") or None
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False, None
        batch = self._pending.pop(message.id, None)
        if batch is None:
            return False, None
        batch.waiting[message.id] -= 1
        batch.answers.append(payload)
        return True, batch.frame()
