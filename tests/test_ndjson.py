"""The shared bounded NDJSON framing: limits at and one past the edge, chunking, blank lines, linear scan."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import anyio
import pytest

from shadowcode import ndjson
from shadowcode.ndjson import FrameRate, FrameTooLong, LineReader, LineSplitter, read_fd_chunk

pytestmark = pytest.mark.req("SRV-25", "CLI-13", "ENG-03")

MAX = 16


def _lines(splitter: LineSplitter, *chunks: bytes) -> list[bytes]:
    out: list[bytes] = []
    for chunk in chunks:
        splitter.feed(chunk)
        while (line := splitter.next_line()) is not None:
            out.append(line)
    return out


def test_a_line_of_exactly_the_limit_is_accepted() -> None:
    assert _lines(LineSplitter(MAX), b"a" * MAX + b"\n") == [b"a" * MAX]


def test_a_complete_line_one_byte_past_the_limit_is_refused() -> None:
    splitter = LineSplitter(MAX)
    splitter.feed(b"a" * (MAX + 1) + b"\n")
    with pytest.raises(FrameTooLong) as caught:
        splitter.next_line()
    assert caught.value.max_bytes == MAX
    assert f"longer than {MAX} bytes" in caught.value.message


def test_a_stripped_cr_does_not_count_against_the_limit() -> None:
    assert _lines(LineSplitter(MAX), b"a" * MAX + b"\r\n", b"b\r\n") == [b"a" * MAX, b"b"]


def test_without_cr_stripping_the_cr_is_kept_and_counts() -> None:
    assert _lines(LineSplitter(MAX, strip_cr=False), b"a" * (MAX - 1) + b"\r\n") == [b"a" * (MAX - 1) + b"\r"]
    splitter = LineSplitter(MAX, strip_cr=False)
    splitter.feed(b"a" * MAX + b"\r\n")
    with pytest.raises(FrameTooLong):
        splitter.next_line()


def test_a_partial_line_is_refused_as_soon_as_it_cannot_fit() -> None:
    # With CR stripping a partial line may hold one byte more (a possible CR) before it is refused.
    splitter = LineSplitter(MAX)
    assert _lines(splitter, b"a" * MAX, b"\r") == []
    splitter.feed(b"a")
    with pytest.raises(FrameTooLong):
        splitter.next_line()
    # Without it, one byte past the limit is enough, newline or not.
    strict = LineSplitter(MAX, strip_cr=False)
    assert _lines(strict, b"a" * MAX) == []
    strict.feed(b"a")
    with pytest.raises(FrameTooLong):
        strict.next_line()


def test_lines_split_across_chunks_are_joined() -> None:
    chunks = [b'{"a"', b":1}\n{", b'"b":2', b"}\r", b"\n", b"\n", b"tail"]
    splitter = LineSplitter(MAX)
    assert _lines(splitter, *chunks) == [b'{"a":1}', b'{"b":2}', b""]
    assert splitter.leftover() == b"tail"
    assert splitter.leftover() == b""


def test_several_lines_in_one_chunk_come_out_in_order_and_blank_lines_are_returned() -> None:
    assert _lines(LineSplitter(MAX), b"one\n\n  \ntwo\r\n") == [b"one", b"", b"  ", b"two"]


def test_a_too_long_line_is_refused_only_after_the_lines_before_it() -> None:
    splitter = LineSplitter(MAX)
    splitter.feed(b"ok\n" + b"a" * (MAX + 2))
    assert splitter.next_line() == b"ok"
    with pytest.raises(FrameTooLong):
        splitter.next_line()


def test_feeding_while_a_complete_line_waits_is_refused() -> None:
    splitter = LineSplitter(MAX)
    splitter.feed(b"one\ntwo\n")
    assert splitter.next_line() == b"one"
    with pytest.raises(RuntimeError):
        splitter.feed(b"more")


class _CountingBuffer(bytearray):
    """A buffer that adds up how many bytes its newline searches cover."""

    searched = 0

    def find(self, sub: bytes, start: int = 0) -> int:  # type: ignore[override]
        _CountingBuffer.searched += len(self) - start
        return super().find(sub, start)


def test_each_byte_is_searched_for_a_newline_once(monkeypatch: pytest.MonkeyPatch) -> None:
    size = 64 * 1024
    splitter = LineSplitter(size)
    monkeypatch.setattr(splitter, "_buffer", _CountingBuffer())
    monkeypatch.setattr(_CountingBuffer, "searched", 0)
    data = b"x" * size + b"\n" + b"y" * size + b"\n"
    lines = [line for i in range(len(data)) for line in _lines(splitter, data[i : i + 1])]
    assert lines == [b"x" * size, b"y" * size]
    # Rescanning the whole buffer on every byte would search about size**2 bytes.
    assert _CountingBuffer.searched <= len(data)


def test_a_frame_of_one_mebibyte_fed_one_byte_at_a_time_finishes_fast() -> None:
    size = 1024 * 1024
    splitter = LineSplitter(size)
    data = b"x" * size + b"\n"
    started = time.monotonic()
    lines = [line for i in range(len(data)) for line in _lines(splitter, data[i : i + 1])]
    elapsed = time.monotonic() - started
    assert lines == [b"x" * size]
    assert elapsed < 60, elapsed  # about 2 seconds on an idle machine


@pytest.mark.anyio
async def test_line_reader_returns_lines_then_none_at_eof_keeping_a_partial_line() -> None:
    source = [b"one\n\ntw", b"o\npart", b""]
    calls = 0

    async def receive() -> bytes:
        nonlocal calls
        calls += 1
        return source.pop(0)

    reader = LineReader(receive, MAX)
    with anyio.fail_after(5):
        got = [await reader.line() for _ in range(4)]
        assert got == [b"one", b"", b"two", None]
        assert await reader.line() is None
    assert calls == 3  # nothing is read past end of file
    assert reader.leftover() == b"part"


@pytest.mark.anyio
async def test_line_reader_reads_only_when_no_complete_line_is_buffered() -> None:
    source = [b"a\nb\n", b"c\n"]
    reads = 0

    async def receive() -> bytes:
        nonlocal reads
        reads += 1
        return source.pop(0) if source else b""

    reader = LineReader(receive, MAX)
    with anyio.fail_after(5):
        assert await reader.line() == b"a"
        assert await reader.line() == b"b"
        assert reads == 1
        assert await reader.line() == b"c"
        assert reads == 2


@pytest.mark.anyio
async def test_line_reader_refuses_a_partial_line_past_the_limit() -> None:
    source = [b"a" * MAX, b"aa"]

    async def receive() -> bytes:
        return source.pop(0)

    reader = LineReader(receive, MAX)
    with anyio.fail_after(5), pytest.raises(FrameTooLong):
        await reader.line()


def test_frame_rate_admits_the_limit_and_refuses_one_more_within_a_second() -> None:
    rate = FrameRate(3)
    assert [rate.admit() for _ in range(4)] == [True, True, True, False]


def test_frame_rate_admits_again_once_the_window_has_slid(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(ndjson, "time", SimpleNamespace(monotonic=lambda: now[0]))
    rate = FrameRate(2)
    assert rate.admit() and rate.admit()
    assert not rate.admit()
    now[0] += 0.999
    assert not rate.admit()
    now[0] += 0.001
    assert rate.admit()


@pytest.mark.anyio
async def test_read_fd_chunk_waits_for_data_and_returns_empty_at_end_of_file() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def write_later() -> None:
                    await anyio.sleep(0)
                    os.write(write_fd, b"hello\n")

                tg.start_soon(write_later)
                assert await read_fd_chunk(read_fd) == b"hello\n"
            os.close(write_fd)
            write_fd = -1
            assert await read_fd_chunk(read_fd) == b""
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
