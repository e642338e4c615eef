"""The bounded SSE parser: framing, split input, and its limits at and one past each value.

Covers CLI-16, CLI-17.
"""

from __future__ import annotations

import pytest

from shadowcode.limits import (
    MCP_HTTP_EVENT_ID_MAX_BYTES,
    MCP_HTTP_SSE_EVENT_MAX_BYTES,
    MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX,
)
from shadowcode.mcp.client.sse import SseError, SseEvent, SseParser


def _feed(parser: SseParser, *chunks: bytes) -> list[SseEvent]:
    events: list[SseEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events


@pytest.mark.req("CLI-16")
def test_utf8_and_crlf_split_across_chunks_parse_as_if_whole() -> None:
    text = 'data: {"t":"Zürich ✓"}\r\n\r\n'.encode()
    whole = SseParser().feed(text)
    for cut in range(1, len(text)):
        assert _feed(SseParser(), text[:cut], text[cut:]) == whole
    assert _feed(SseParser(), *(bytes([b]) for b in text)) == whole
    assert whole == [SseEvent("message", '{"t":"Zürich ✓"}', None)]


@pytest.mark.req("CLI-16")
def test_fields_comments_cr_line_ends_and_multi_line_data() -> None:
    stream = b"\xef\xbb\xbf: hello\revent: message\rid: 7\rdata: a\rdata:b\rretry: 5\r\r"
    assert SseParser().feed(stream) == [SseEvent("message", "a\nb", "7")]


@pytest.mark.req("CLI-17")
def test_an_event_of_exactly_the_limit_is_accepted_and_one_byte_more_is_refused() -> None:
    prefix, end = b"data: ", b"\n\n"
    filler = MCP_HTTP_SSE_EVENT_MAX_BYTES - len(prefix) - len(end)
    event = prefix + b"x" * filler + end
    assert len(event) == MCP_HTTP_SSE_EVENT_MAX_BYTES
    assert len(SseParser().feed(event)[0].data) == filler
    over = prefix + b"x" * (filler + 1) + end
    with pytest.raises(SseError, match=f"longer than {MCP_HTTP_SSE_EVENT_MAX_BYTES} bytes"):
        SseParser().feed(over)


@pytest.mark.req("CLI-17")
def test_an_endless_line_is_refused_before_it_is_buffered_whole() -> None:
    parser = SseParser(event_max_bytes=1024)
    parser.feed(b"data: " + b"x" * 1000)
    with pytest.raises(SseError, match="longer than 1024 bytes"):
        parser.feed(b"x" * 100)


@pytest.mark.req("CLI-17")
def test_an_event_id_at_the_limit_is_accepted_and_one_byte_more_is_refused() -> None:
    ok = SseParser().feed(b"id: " + b"i" * MCP_HTTP_EVENT_ID_MAX_BYTES + b"\ndata: {}\n\n")
    assert ok[0].id is not None and len(ok[0].id) == MCP_HTTP_EVENT_ID_MAX_BYTES
    with pytest.raises(SseError, match=f"event id longer than {MCP_HTTP_EVENT_ID_MAX_BYTES} bytes"):
        SseParser().feed(b"id: " + b"i" * (MCP_HTTP_EVENT_ID_MAX_BYTES + 1) + b"\n")


@pytest.mark.req("CLI-17")
def test_blank_and_comment_only_events_count_against_the_rate() -> None:
    parser = SseParser()
    assert len(parser.feed(b": ping\n\n" + b"\n" * (MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX - 1))) == (
        MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX
    )
    with pytest.raises(SseError, match=f"more than {MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX} SSE events in one second"):
        parser.feed(b"\n")


@pytest.mark.req("CLI-17")
def test_a_line_that_is_not_utf8_is_refused_and_a_partial_event_is_visible() -> None:
    with pytest.raises(SseError, match="not UTF-8"):
        SseParser().feed(b"data: \xff\xfe\n\n")
    parser = SseParser()
    parser.feed(b"data: {}\n")
    assert parser.partial
    parser.feed(b"\n")
    assert not parser.partial
