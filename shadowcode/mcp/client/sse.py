"""A bounded, incremental parser of a ``text/event-stream`` body (CLI-16, CLI-17).

Bytes are fed as they arrive, in chunks of any size; the parser keeps at most one event's
bytes. Lines end with CRLF, LF or CR (a CR at the end of a chunk waits for the next one), so a
UTF-8 character or a CRLF split across chunks is parsed as if it had arrived whole. Every
dispatched event counts against the rate, blank and comment-only ones included, so a flood of
keep-alives is refused like any other. Refusals raise :class:`SseError` before the offending
bytes are parsed further: an event longer than ``event_max_bytes`` (its raw lines together,
detected as soon as it is seen), an event id longer than ``event_id_max_bytes``, a line that is
not UTF-8, or a rate above ``events_per_second_max``. ``retry`` fields are ignored: this client
never reconnects.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.limits import (
    MCP_HTTP_EVENT_ID_MAX_BYTES,
    MCP_HTTP_SSE_EVENT_MAX_BYTES,
    MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX,
)
from shadowcode.ndjson import FrameRate

__all__ = ["SseError", "SseEvent", "SseParser"]


class SseError(Exception):
    """The stream broke a limit or is not an event stream; the message names how."""


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event.

    Attributes:
        event: the ``event`` field, ``"message"`` when absent.
        data: the ``data`` lines joined with ``\\n``; empty for blank and comment-only events.
        id: the ``id`` field, or None.
    """

    event: str
    data: str
    id: str | None


class SseParser:
    """Turns chunks of an event stream into :class:`SseEvent` values, within limits.

    Args:
        event_max_bytes: raw bytes of one event at most.
        event_id_max_bytes: bytes of one ``id`` value at most.
        events_per_second_max: events admitted in any one-second window.
        rate: that window, shared between the streams of a connection (built from
            ``events_per_second_max`` when not given).
    """

    def __init__(
        self,
        *,
        event_max_bytes: int = MCP_HTTP_SSE_EVENT_MAX_BYTES,
        event_id_max_bytes: int = MCP_HTTP_EVENT_ID_MAX_BYTES,
        events_per_second_max: int = MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX,
        rate: FrameRate | None = None,
    ) -> None:
        self.event_max_bytes = event_max_bytes
        self.event_id_max_bytes = event_id_max_bytes
        self.events_per_second_max = events_per_second_max
        self.rate = rate or FrameRate(events_per_second_max)
        self._buffer = bytearray()
        self._event_bytes = 0
        self._started = False
        self._pending_cr = False
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None

    @property
    def partial(self) -> bool:
        """True when bytes of an unfinished event are held (the stream ended mid-event if it ends now)."""
        return bool(self._buffer) or self._event_bytes > 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse ``chunk`` and return the events it completed (comment-only and blank ones included).

        Raises:
            SseError: a limit was crossed or a line is not UTF-8.
        """
        events: list[SseEvent] = []
        data = bytes(chunk)
        start = 0
        if self._pending_cr:
            self._pending_cr = False
            if data[:1] == b"\n":
                start = 1
        while True:
            cut = _line_end(data, start)
            if cut is None:
                self._buffer += data[start:]
                if len(self._buffer) + self._event_bytes > self.event_max_bytes:
                    raise SseError(f"the server sent an SSE event longer than {self.event_max_bytes} bytes")
                return events
            end, after = cut
            if after is None:  # a CR at the very end of the chunk: the LF may follow
                self._pending_cr = True
                after = end + 1
            line = bytes(self._buffer) + data[start:end]
            self._buffer.clear()
            self._event_bytes += len(line) + (after - end)
            if self._event_bytes > self.event_max_bytes:
                raise SseError(f"the server sent an SSE event longer than {self.event_max_bytes} bytes")
            event = self._line(line)
            if event is not None:
                events.append(event)
            start = after
            if start >= len(data):
                return events

    def _line(self, raw: bytes) -> SseEvent | None:
        if not self._started:
            self._started = True
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        if not raw:
            return self._dispatch()
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SseError("the server sent an SSE line that is not UTF-8") from None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if len(value.encode("utf-8")) > self.event_id_max_bytes:
                raise SseError(f"the server sent an SSE event id longer than {self.event_id_max_bytes} bytes")
            if "\x00" not in value:
                self._id = value
        return None

    def _dispatch(self) -> SseEvent:
        if not self.rate.admit():
            raise SseError(f"the server sent more than {self.events_per_second_max} SSE events in one second")
        event = SseEvent(event=self._event or "message", data="\n".join(self._data), id=self._id)
        self._event, self._data, self._event_bytes = None, [], 0
        return event


def _line_end(data: bytes, start: int) -> tuple[int, int | None] | None:
    """Where the next line of ``data`` from ``start`` ends: (end, start of the next line), or None.

    The second value is None for a CR that is the last byte (it may be the first half of CRLF).
    """
    lf = data.find(b"\n", start)
    cr = data.find(b"\r", start, lf if lf >= 0 else len(data))
    if cr >= 0:
        if cr + 1 == len(data):
            return cr, None
        return cr, cr + 2 if data[cr + 1 : cr + 2] == b"\n" else cr + 1
    if lf >= 0:
        return lf, lf + 1
    return None
