"""The engine's socket protocol: newline-delimited JSON frames of at most CONTROL_FRAME_MAX_BYTES (ENG-03).

A request is ``{"id": int, "method": str, "params": {...}}``; its reply is
``{"id": int, "result": ...}`` or ``{"id": int, "error": {"code", "message", "fields"}}``
(:mod:`shadowcode.engine.wire`), so the client raises the same error class with its fields.
Frames are read without buffering more than the limit; a longer or malformed frame closes the
connection (the peer can no longer be trusted), which for an ownership socket is an owner close.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.abc

from shadowcode.errors import ProtocolError
from shadowcode.json_values import json_object
from shadowcode.limits import CONTROL_FRAME_MAX_BYTES
from shadowcode.ndjson import FrameTooLong, LineReader

__all__ = ["FrameReader", "send_frame"]

_RECEIVE_CHUNK_BYTES = 65536
"""Bytes asked of one socket receive; a read size, not a limit."""


class FrameReader:
    """Reads newline-delimited JSON objects from a byte stream, bounded per frame.

    Framing is :class:`shadowcode.ndjson.LineReader`'s (each byte scanned once); here a line's
    CR counts against the limit (json ignores it), blank lines are skipped, and a line over
    the limit, not JSON or not an object fails the read.
    """

    def __init__(self, stream: anyio.abc.ByteReceiveStream, *, max_bytes: int = CONTROL_FRAME_MAX_BYTES) -> None:
        self._stream = stream
        self._max = max_bytes
        self._lines = LineReader(self._receive, max_bytes, strip_cr=False)

    async def _receive(self) -> bytes:
        try:
            return await self._stream.receive(_RECEIVE_CHUNK_BYTES)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return b""

    async def read(self) -> dict[str, Any] | None:
        """The next frame, or None at EOF (a partial last frame counts as EOF).

        Raises:
            ProtocolError: a frame over the limit, not JSON, or not an object.
        """
        while True:
            try:
                line = await self._lines.line()
            except FrameTooLong:
                raise ProtocolError(f"a control frame is longer than {self._max} bytes") from None
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                doc = json_object(json.loads(line))
            except ValueError as exc:
                raise ProtocolError("a control frame is not JSON") from exc
            if doc is None:
                raise ProtocolError("a control frame is not a JSON object")
            return doc

    def leftover(self) -> bytes:
        """Bytes received past the last frame read (for a connection that switches protocol)."""
        return self._lines.leftover()


async def send_frame(stream: anyio.abc.ByteSendStream, doc: dict[str, Any]) -> None:
    """Write one frame."""
    await stream.send(json.dumps(doc, ensure_ascii=False).encode("utf-8") + b"\n")
