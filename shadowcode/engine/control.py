"""The engine's socket protocol: newline-delimited JSON frames of at most CONTROL_FRAME_MAX_BYTES (ENG-03).

A request is ``{"id": int, "method": str, "params": {...}}``; its reply is
``{"id": int, "result": ...}`` or ``{"id": int, "error": {"type": str, "message": str}}``
where ``type`` names the :mod:`shadowcode.errors` class so the client raises the same error.
Frames are read without buffering more than the limit; a longer or malformed frame closes the
connection (the peer can no longer be trusted), which for an ownership socket is an owner close.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.abc

from shadowcode import errors
from shadowcode.errors import ProtocolError, ShadowcodeError
from shadowcode.limits import CONTROL_FRAME_MAX_BYTES

__all__ = ["FrameReader", "error_from_wire", "error_to_wire", "send_frame"]


class FrameReader:
    """Reads newline-delimited JSON objects from a byte stream, bounded per frame."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, *, max_bytes: int = CONTROL_FRAME_MAX_BYTES) -> None:
        self._stream = stream
        self._max = max_bytes
        self._buffer = bytearray()

    async def read(self) -> dict[str, Any] | None:
        """The next frame, or None at EOF (a partial last frame counts as EOF).

        Raises:
            ProtocolError: a frame over the limit, not JSON, or not an object.
        """
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                if len(line) > self._max:
                    raise ProtocolError(f"a control frame is longer than {self._max} bytes")
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except ValueError as exc:
                    raise ProtocolError("a control frame is not JSON") from exc
                if not isinstance(doc, dict):
                    raise ProtocolError("a control frame is not a JSON object")
                return doc
            if len(self._buffer) > self._max:
                raise ProtocolError(f"a control frame is longer than {self._max} bytes")
            try:
                chunk = await self._stream.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return None
            self._buffer += chunk

    def leftover(self) -> bytes:
        """Bytes received past the last frame read (for a connection that switches protocol)."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


async def send_frame(stream: anyio.abc.ByteSendStream, doc: dict[str, Any]) -> None:
    """Write one frame."""
    await stream.send(json.dumps(doc, ensure_ascii=False).encode("utf-8") + b"\n")


def error_to_wire(exc: ShadowcodeError) -> dict[str, Any]:
    """``{"type", "message"}`` for an error reply."""
    return {"type": type(exc).__name__, "message": exc.message}


def error_from_wire(doc: Any) -> ShadowcodeError:
    """The error an error reply describes (unknown types become ShadowcodeError)."""
    if not isinstance(doc, dict):
        return ProtocolError("the engine sent a malformed error")
    cls = getattr(errors, str(doc.get("type")), None)
    message = str(doc.get("message", "engine error"))
    if isinstance(cls, type) and issubclass(cls, ShadowcodeError):
        return cls(message)
    return ShadowcodeError(message)
