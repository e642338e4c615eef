"""Counting a reply's header block as it arrives, before the HTTP library buffers it (CLI-17, CW-08).

httpcore2 hands h11 whatever the socket gives and lets h11 buffer up to 100 KiB of an
unfinished header block before it gives up with a ``RemoteProtocolError`` that names no limit.
:class:`HeaderCountingTransport` puts a counter between the socket and h11: every byte read
while a reply's header block is still open is counted line by line, and the read that takes
the block past ``headers_max_bytes`` raises :class:`HeaderBlockTooLarge` before h11 sees it,
whatever the shape (a few long lines, thousands of short ones, padding around values).

How a block is measured, so that it agrees with :func:`headers_size` on what a server
normally writes: each header line counts its bytes less two for the ``": "`` separator (at
least one byte a line), line ends not counted; the status line (and any blank line before it)
is bounded on its own by the same number. Informational (1xx) blocks count into the block of
the reply that follows. The counter starts again with the next request written on the
connection (HTTP/1.1 sends one request at a time on a connection).

:func:`is_compressed` says whether a reply's ``Content-Encoding`` is anything but identity:
both HTTP clients of this package refuse such a reply before a byte of it is inflated.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

__all__ = ["HeaderBlockTooLarge", "HeaderCounter", "HeaderCountingTransport", "headers_size", "is_compressed"]


class HeaderBlockTooLarge(Exception):
    """A reply's header block passed the limit while it arrived; the message names the limit (CLI-17).

    Attributes:
        max_bytes: the limit that was passed.
    """

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"more than {max_bytes} bytes of headers")
        self.max_bytes = max_bytes


def headers_size(headers: dict[str, str] | list[tuple[bytes, bytes]]) -> int:
    """Bytes of a header block: every name and value (UTF-8), separators and line ends not counted."""
    if isinstance(headers, dict):
        return sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in headers.items())
    return sum(len(k) + len(v) for k, v in headers)


def is_compressed(headers: httpx2.Headers) -> bool:
    """True when ``Content-Encoding`` names any coding other than ``identity`` (CLI-17, CW-08)."""
    codings = [c.strip().lower() for v in headers.get_list("content-encoding") for c in v.split(",")]
    return any(c and c != "identity" for c in codings)


class HeaderCounter:
    """Counts one reply's header block from its first byte; :meth:`feed` raises past the limit.

    Args:
        max_bytes: the limit (``headers_max_bytes``).

    Attributes:
        done: True once the block of a final (non-1xx) reply ended; later bytes are the body.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.done = False
        self._line = bytearray()
        self._status = True
        self._lead = 0
        self._informational = False
        self._size = 0

    def feed(self, data: bytes) -> None:
        """Count ``data`` (bytes as read from the socket).

        Raises:
            HeaderBlockTooLarge: the block, or the status line, passed ``max_bytes``.
        """
        start = 0
        while not self.done:
            end = data.find(b"\n", start)
            if end < 0:
                self._line += data[start:]
                self._check_open_line()
                return
            self._line += data[start:end]
            start = end + 1
            line = bytes(self._line).removesuffix(b"\r")
            self._line.clear()
            self._take(line)

    def _take(self, line: bytes) -> None:
        if self._status:
            self._lead += len(line) + 2
            if self._lead > self.max_bytes:
                raise HeaderBlockTooLarge(self.max_bytes)
            if line:
                self._status = False
                self._informational = line[9:10] == b"1"  # "HTTP/1.1 1xx ..."
            return
        if not line:
            if self._informational:
                self._status, self._lead = True, 0
            else:
                self.done = True
            return
        self._size += max(len(line) - 2, 1)
        if self._size > self.max_bytes:
            raise HeaderBlockTooLarge(self.max_bytes)

    def _check_open_line(self) -> None:
        pending = len(self._line)
        over = self._lead + pending > self.max_bytes if self._status else self._size + pending - 2 > self.max_bytes
        if over:
            raise HeaderBlockTooLarge(self.max_bytes)


class _CountingStream(httpcore2.AsyncNetworkStream):
    """A network stream whose reads are counted while a reply's header block is open."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream, max_bytes: int) -> None:
        self._inner = inner
        self._max_bytes = max_bytes
        self._counter = HeaderCounter(max_bytes)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        if not self._counter.done:
            self._counter.feed(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._counter.done:
            self._counter = HeaderCounter(self._max_bytes)
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return _CountingStream(await self._inner.start_tls(ssl_context, server_hostname, timeout), self._max_bytes)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _CountingBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's anyio backend whose streams count reply header blocks."""

    def __init__(self, max_bytes: int) -> None:
        # httpcore2 types AnyIOBackend by the stand-in it defines when anyio is missing (no base, no methods).
        self._inner: httpcore2.AsyncNetworkBackend = httpcore2.AnyIOBackend()  # pyright: ignore[reportAttributeAccessIssue]
        self._max_bytes = max_bytes

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _CountingStream(stream, self._max_bytes)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        return _CountingStream(await self._inner.connect_unix_socket(path, timeout, socket_options), self._max_bytes)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class HeaderCountingTransport(httpx2.AsyncHTTPTransport):
    """httpx2's HTTP/1.1 transport (no proxies, no ``.netrc``) over streams that count reply headers.

    A reply whose header block passes ``headers_max_bytes`` makes the request raise
    :class:`HeaderBlockTooLarge` (not an ``httpx2.HTTPError``); callers translate it at their edge.

    Args:
        headers_max_bytes: the header block limit (CLI-17).
        limits: httpx2's connection pool limits.
    """

    def __init__(self, *, headers_max_bytes: int, limits: httpx2.Limits | None = None) -> None:
        pool = limits or httpx2.Limits()
        context = httpx2.create_ssl_context(trust_env=False)
        super().__init__(verify=context, trust_env=False, limits=pool)
        # httpx2 offers no network backend option: the pool it built is replaced by one that
        # has the counting backend and otherwise the same settings.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=context,
            max_connections=pool.max_connections,
            max_keepalive_connections=pool.max_keepalive_connections,
            keepalive_expiry=pool.keepalive_expiry,
            network_backend=_CountingBackend(headers_max_bytes),
        )
