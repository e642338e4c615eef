"""The gateway's rules for one request head, its limits and its fixed refusals (GW-03, GW-04, GW-07).

Every request passes :func:`guard_head` before the SDK sees it: the Host must be the bound IP
(``[::1]`` for IPv6) or ``localhost`` with the real port (421), no Origin (403), no query
string (400), exactly one ``Authorization: Bearer`` header whose token matches under a
constant-time compare (401), path ``/mcp`` (404), method POST (405), and no MCP metadata header
twice (400), ``Content-Length`` included even when both values are equal or are given as a
list (h11 merges those, so :func:`sent_fields` reads the head as sent). Refusals carry fixed
bodies: nothing the peer sent is echoed back. :func:`response_bytes` writes any answer,
refusal or not, as one HTTP/1.1 message.
"""

from __future__ import annotations

import collections
import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from shadowcode.limits import (
    GATEWAY_BODY_DEADLINE_SECONDS,
    GATEWAY_CONNECTIONS_MAX,
    GATEWAY_HEADER_DEADLINE_SECONDS,
    GATEWAY_HEADER_MAX_BYTES,
    GATEWAY_LINGER_SECONDS,
    GATEWAY_REQUEST_DEADLINE_SECONDS,
    GATEWAY_REQUEST_MAX_BYTES,
    GATEWAY_REQUESTS_PER_SECOND_MAX,
    GATEWAY_RESPONSE_MAX_BYTES,
)

__all__ = [
    "BAD_REQUEST",
    "BUSY",
    "DEADLINE",
    "ENDPOINT_PATH",
    "FAILED",
    "HEAD_TOO_LARGE",
    "RESPONSE_TOO_LARGE",
    "TIMED_OUT",
    "TOO_LARGE",
    "GatewayLimits",
    "Refusal",
    "RequestRate",
    "guard_head",
    "refusal_bytes",
    "refusal_headers",
    "response_bytes",
    "sent_fields",
]

ENDPOINT_PATH = "/mcp"
"""The one path the gateway serves (GW-05)."""

_METADATA_PREFIX = b"mcp-"
_SINGLE_HEADERS = frozenset({b"host", b"authorization", b"content-type", b"content-length", b"transfer-encoding"})
_HEAD_END = re.compile(b"\n\r?\n")
"""Where a request head ends: h11's blank-line rule."""


@dataclass(frozen=True)
class Refusal:
    """A plain HTTP refusal with a fixed body (GW-03, GW-04, GW-07).

    Attributes:
        status: the HTTP status code.
        body: fixed text; never holds anything the peer sent.
        headers: extra response headers (``WWW-Authenticate``, ``Allow``).
    """

    status: int
    body: str
    headers: tuple[tuple[str, str], ...] = ()


BAD_REQUEST = Refusal(400, "bad request\n")
MISDIRECTED = Refusal(421, "the Host header does not name this gateway\n")
ORIGIN_REFUSED = Refusal(403, "requests with an Origin header are refused\n")
QUERY_REFUSED = Refusal(400, "query strings are refused\n")
UNAUTHORIZED = Refusal(401, "a valid bearer token is required\n", (("WWW-Authenticate", "Bearer"),))
NOT_FOUND = Refusal(404, "not found; the MCP endpoint is /mcp\n")
METHOD_REFUSED = Refusal(405, "only POST is served\n", (("Allow", "POST"),))
DUPLICATE_HEADER = Refusal(400, "a header that must appear once appears more than once\n")
TOO_LARGE = Refusal(413, "the request body is too large\n")
HEAD_TOO_LARGE = Refusal(431, "the request head is too large\n")
TIMED_OUT = Refusal(408, "the request did not arrive in time\n")
BUSY = Refusal(429, "too many connections or requests; retry later\n")
RESPONSE_TOO_LARGE = Refusal(500, "the response is too large to send\n")
DEADLINE = Refusal(504, "the request did not finish in time\n")
FAILED = Refusal(500, "the request failed\n")


@dataclass(frozen=True)
class GatewayLimits:
    """The gateway's limits; each defaults to its constant in :mod:`shadowcode.limits` (GW-07).

    Attributes:
        connections_max: connections served at once.
        requests_per_second_max: requests taken in any one-second window.
        header_deadline_seconds: seconds from accept until the head is complete.
        body_deadline_seconds: seconds from the end of the head until the body is complete.
        header_max_bytes: bytes of the request line and headers.
        body_max_bytes: bytes of one request body.
        request_deadline_seconds: seconds from a complete request until its response is written.
        response_max_bytes: bytes of one response body.
        linger_seconds: seconds a refused connection is drained before it is closed.
    """

    connections_max: int = GATEWAY_CONNECTIONS_MAX
    requests_per_second_max: int = GATEWAY_REQUESTS_PER_SECOND_MAX
    header_deadline_seconds: float = GATEWAY_HEADER_DEADLINE_SECONDS
    body_deadline_seconds: float = GATEWAY_BODY_DEADLINE_SECONDS
    header_max_bytes: int = GATEWAY_HEADER_MAX_BYTES
    body_max_bytes: int = GATEWAY_REQUEST_MAX_BYTES
    request_deadline_seconds: float = GATEWAY_REQUEST_DEADLINE_SECONDS
    response_max_bytes: int = GATEWAY_RESPONSE_MAX_BYTES
    linger_seconds: float = GATEWAY_LINGER_SECONDS


class RequestRate:
    """A sliding one-second window of accepted requests (GW-07).

    Args:
        limit: requests allowed in any window of one second.
        clock: monotonic seconds; replaceable so tests can hold time still.
    """

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._times: collections.deque[float] = collections.deque()

    def admit(self) -> bool:
        """Count one request; False when ``limit`` requests were already taken in the last second."""
        now = self.clock()
        while self._times and now - self._times[0] >= 1.0:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return False
        self._times.append(now)
        return True


def _host_allowed(value: bytes, bound_host: str, port: int) -> bool:
    text = value.decode("latin-1").lower()
    names = {f"localhost:{port}", f"[{bound_host}]:{port}" if ":" in bound_host else f"{bound_host}:{port}"}
    return text in names


def _bearer_matches(value: bytes, token: bytes) -> bool:
    scheme, _, credential = value.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(credential.strip(), token)


def sent_fields(head: bytes) -> list[tuple[bytes, bytes]]:
    """The header fields of a request head as sent: duplicates kept, in order (GW-04).

    h11 merges repeated ``Content-Length`` fields with equal values (and a list such as
    ``5, 5``) into one; the gateway must see them to refuse them. Only call this with a head
    h11 has parsed into a request, so every line is a well-formed field or an obsolete line
    fold, which continues the previous field's value as in h11.

    Args:
        head: the bytes received from the start of the request, at least through the blank
            line that ends its head (what follows is ignored).

    Returns:
        ``(lowercase name, value)`` pairs, values without surrounding spaces or tabs.
    """
    end = _HEAD_END.search(head)
    lines = head[: end.start() if end is not None else len(head)].split(b"\n")[1:]  # after the request line
    fields: list[tuple[bytes, bytes]] = []
    for raw in lines:
        line = raw.removesuffix(b"\r")
        if line[:1] in (b" ", b"\t") and fields:
            name, value = fields[-1]
            fields[-1] = (name, (value + b" " + line.strip(b" \t")).strip(b" \t"))
            continue
        name, _, value = line.partition(b":")
        fields.append((name.lower(), value.strip(b" \t")))
    return fields


def guard_head(
    method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], *, bound_host: str, port: int, token: bytes
) -> Refusal | None:
    """Check a request head against the gateway's rules, in a fixed order (GW-03, GW-04, GW-05).

    Args:
        method: the request method as sent (``b"POST"``).
        target: the request target as sent (``b"/mcp"``).
        headers: ``(lowercase name, value)`` pairs in the order sent, duplicates kept
            (:func:`sent_fields`).
        bound_host: the IP literal the gateway listens on (``127.0.0.1``, ``::1``).
        port: the port it listens on.
        token: the gateway's bearer token.

    Returns:
        The refusal to send, or None when the request may reach the SDK.
    """
    counts = collections.Counter(name for name, _ in headers)
    host = [value for name, value in headers if name == b"host"]
    if len(host) != 1:
        return BAD_REQUEST
    if not _host_allowed(host[0], bound_host, port):
        return MISDIRECTED
    if counts[b"origin"]:
        return ORIGIN_REFUSED
    if b"?" in target:
        return QUERY_REFUSED
    if not target.startswith(b"/"):
        return BAD_REQUEST
    authorization = [value for name, value in headers if name == b"authorization"]
    if len(authorization) != 1 or not _bearer_matches(authorization[0], token):
        return UNAUTHORIZED
    if target != ENDPOINT_PATH.encode():
        return NOT_FOUND
    if method != b"POST":
        return METHOD_REFUSED
    for name, count in counts.items():
        if count > 1 and (name.startswith(_METADATA_PREFIX) or name in _SINGLE_HEADERS):
            return DUPLICATE_HEADER
    if any(name == b"content-length" and b"," in value for name, value in headers):
        return DUPLICATE_HEADER  # a list of lengths is the same length sent more than once
    return None


def response_bytes(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """One whole HTTP/1.1 response: status line, ``headers`` as given, then ``body``.

    Adds ``Content-Length`` and ``Connection: close`` (one request per connection, GW-07);
    ``headers`` must not carry either, nor any CR or LF.
    """
    head = [b"HTTP/1.1 %d %s" % (status, _reason(status))]
    head += [name + b": " + value for name, value in headers]
    head += [b"content-length: %d" % len(body), b"connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def refusal_bytes(refusal: Refusal) -> bytes:
    """The whole HTTP/1.1 response for ``refusal`` (plain text, its extra headers)."""
    return response_bytes(refusal.status, refusal_headers(refusal), refusal.body.encode())


def refusal_headers(refusal: Refusal) -> list[tuple[bytes, bytes]]:
    """The headers of ``refusal``'s response, before the length and connection headers."""
    return [
        *[(n.lower().encode(), v.encode()) for n, v in refusal.headers],
        (b"content-type", b"text/plain; charset=utf-8"),
    ]


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""
