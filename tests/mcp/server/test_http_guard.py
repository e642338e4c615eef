"""Reading a request head as sent: the fields h11 merges stay visible to the duplicate rule (GW-04)."""

from __future__ import annotations

import h11
import pytest

from shadowcode.mcp.server.http_guard import BAD_REQUEST, DUPLICATE_HEADER, guard_head, sent_fields

pytestmark = pytest.mark.req("GW-04")

TOKEN = b"t" * 40


def _h11_fields(head: bytes) -> list[tuple[bytes, bytes]]:
    parser = h11.Connection(h11.SERVER)
    parser.receive_data(head)
    event = parser.next_event()
    assert isinstance(event, h11.Request)
    return [(bytes(n), bytes(v)) for n, v in event.headers]


@pytest.mark.parametrize(
    "head",
    [
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\nHost:127.0.0.1:9\nX-Spaces: \t a b \t\nAuthorization: Bearer x\n\n",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Folded: one\r\n  two\r\n\tthree\r\nX-Empty:\r\n\r\n",
    ],
)
def test_sent_fields_agree_with_h11_when_nothing_is_merged(head: bytes) -> None:
    assert sent_fields(head) == _h11_fields(head)


def test_sent_fields_keep_the_content_length_fields_h11_merges() -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n{}"
    assert _h11_fields(head) == [(b"host", b"h"), (b"content-length", b"2")]
    assert sent_fields(head) == [(b"host", b"h"), (b"content-length", b"2"), (b"content-length", b"2")]


def _guard(headers: list[tuple[bytes, bytes]]) -> object:
    base = [(b"host", b"127.0.0.1:9"), (b"authorization", b"Bearer " + TOKEN)]
    return guard_head(b"POST", b"/mcp", base + headers, bound_host="127.0.0.1", port=9, token=TOKEN)


def test_one_content_length_passes_and_two_or_a_list_are_refused_as_duplicates() -> None:
    assert _guard([(b"content-length", b"2")]) is None
    assert _guard([(b"content-length", b"2"), (b"content-length", b"2")]) is DUPLICATE_HEADER
    assert _guard([(b"content-length", b"2, 2")]) is DUPLICATE_HEADER


@pytest.mark.parametrize("other", [b"127.0.0.1:9", b"localhost:9", b"evil.example"])
def test_two_host_fields_are_a_bad_request_before_any_other_rule(other: bytes) -> None:
    """Whichever Host comes first, and whatever else the head holds (no token, an Origin)."""
    for hosts in ([b"127.0.0.1:9", other], [other, b"127.0.0.1:9"]):
        fields = [(b"host", value) for value in hosts]
        for rest in ([], [(b"origin", b"http://127.0.0.1:9")], [(b"authorization", b"Bearer " + TOKEN)]):
            refusal = guard_head(b"POST", b"/mcp", fields + rest, bound_host="127.0.0.1", port=9, token=TOKEN)
            assert refusal is BAD_REQUEST, (hosts, rest)
