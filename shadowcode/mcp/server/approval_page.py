"""The loopback approval page: a person approves or denies one pending approval in a browser (SRV-30).

URL mode of ``mcp serve --approve-in-host``: the host is handed ``http://127.0.0.1:PORT/approval/TOKEN``
and shows it to the person, never to the model. The page shows the job, the exact command and
its folder, and the files the job changed so far, with Approve and Deny buttons; the engine
decides (``approval/answer`` with ``via="page"``), so the first answer wins whichever way it
came. Served with ``h11`` on 127.0.0.1 port 0 (the system picks the port), one request per
connection, always ``Connection: close``.

Rules, in the order a request meets them:

- at most ``connections_max`` connections at once (429); the whole request (head and body)
  within ``request_deadline_seconds`` of the accept (408); a head (request line, headers and
  the blank line ending them) of at most ``header_max_bytes`` (431) and a body of at most
  ``body_max_bytes`` (413); a malformed request is 400;
- exactly one ``Host`` header naming ``127.0.0.1:PORT`` (421): a page reached under another
  name (DNS rebinding) is refused;
- an ``Origin`` header other than the page's own is refused (403) for every method, and a
  ``POST`` without one is refused too: only the page's own form may answer;
- the path is ``/approval/TOKEN`` without a query (404, 400); a token is 43 URL-safe
  characters from :func:`secrets.token_urlsafe`, kept only as its SHA-256; an unknown token is
  404, a used one 410 (*reuse*), and so is one whose approval was decided elsewhere or whose
  state expired (the engine's sentence says which);
- ``GET`` shows the page; ``POST`` with ``decision=approve`` or ``decision=deny``
  (``application/x-www-form-urlencoded``) answers it; other methods are 405.

A token is used by the first ``POST`` that reaches the engine, whatever the engine answers; a
refused request uses nothing. Everything shown is HTML-escaped and made inert: argv, folder,
prompt and file names are data. Answers carry ``Cache-Control: no-store``, ``Referrer-Policy:
same-origin`` (the link never leaves as a referrer; ``no-referrer`` would make a browser send
``Origin: null`` with the page's own form) and a Content-Security-Policy that allows no script
and only same-origin forms.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc
import h11

from shadowcode.engine.api import ApprovalAsked
from shadowcode.errors import ShadowcodeError
from shadowcode.inert_text import inert
from shadowcode.limits import (
    APPROVAL_PAGE_BODY_MAX_BYTES,
    APPROVAL_PAGE_CONNECTIONS_MAX,
    APPROVAL_PAGE_HEADER_MAX_BYTES,
    APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS,
)
from shadowcode.mcp.server.http_guard import response_bytes

__all__ = ["ApprovalPage", "PageLimits", "PageLink"]

logger = logging.getLogger(__name__)

_PATH_PREFIX = "/approval/"
_HEAD_END = re.compile(b"\n\r?\n")
"""Where a request head ends (h11's blank-line rule); the head's size counts through it."""
_HOST = "127.0.0.1"
_READ_BYTES = 4096
_SECURITY_HEADERS = [
    (b"cache-control", b"no-store"),
    # Not no-referrer: with it a browser sends "Origin: null" on the page's own form post.
    (b"referrer-policy", b"same-origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
]

Judge = Callable[["PageLink", str, bool], Awaitable[None]]
"""``judge(link, decision, check_only)``: ask the engine; raises ShadowcodeError with its refusal."""


@dataclass(frozen=True)
class PageLimits:
    """The page's limits; each defaults to its constant in :mod:`shadowcode.limits` (SRV-30).

    Attributes:
        connections_max: connections served at once.
        header_max_bytes: bytes of one request line plus its header block.
        body_max_bytes: bytes of one form body.
        request_deadline_seconds: seconds from accept until the whole request has arrived.
    """

    connections_max: int = APPROVAL_PAGE_CONNECTIONS_MAX
    header_max_bytes: int = APPROVAL_PAGE_HEADER_MAX_BYTES
    body_max_bytes: int = APPROVAL_PAGE_BODY_MAX_BYTES
    request_deadline_seconds: float = APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS


@dataclass
class PageLink:
    """One approval's page: what it shows and the engine state that answers it.

    Attributes:
        asked: the engine's question (its ``state`` answers it; never shown on the page).
        elicitation_id: the URL-mode elicitation this page belongs to.
        used: True once a POST reached the engine.
    """

    asked: ApprovalAsked
    elicitation_id: str
    used: bool = False
    decided: anyio.Event = field(default_factory=anyio.Event)


class _Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class ApprovalPage:
    """The approval page of one server connection; run :meth:`serve` in a task group first (SRV-30).

    Args:
        judge: asks the engine to check (``check_only``) or apply a decision; raises
            ShadowcodeError naming the refusal.
        limits: the page's limits.
    """

    def __init__(self, judge: Judge, *, limits: PageLimits | None = None) -> None:
        self._judge = judge
        self.limits = limits or PageLimits()
        self.port = 0
        self._links: dict[str, PageLink] = {}  # by the SHA-256 (hex) of the token
        self._connections = 0

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``, the page's own origin."""
        return f"http://{_HOST}:{self.port}"

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 port 0 and serve until cancelled; ``task_status.started()`` once listening."""
        listener = await anyio.create_tcp_listener(local_host=_HOST, local_port=0)
        self.port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        async with listener:
            task_status.started()
            await listener.serve(self._connection)

    def open(self, asked: ApprovalAsked, elicitation_id: str) -> tuple[str, PageLink]:
        """A new one-time link for ``asked``; returns ``(url, link)``. Only the token's hash is kept."""
        token = secrets.token_urlsafe(32)
        link = PageLink(asked, elicitation_id)
        self._links[_digest(token)] = link
        return f"{self.origin}{_PATH_PREFIX}{token}", link

    def forget(self, approval_id: str) -> None:
        """Drop the unused links of an approval that was decided elsewhere: their tokens are unknown from now on.

        A used link is kept, so that its reuse is told so (410), until its state expires.
        """
        for key in [k for k, link in self._links.items() if link.asked.approval_id == approval_id and not link.used]:
            del self._links[key]

    def _prune(self) -> None:
        now = int(time.time())
        for key in [k for k, link in self._links.items() if link.asked.expires_at < now]:
            del self._links[key]

    # -- one connection -----------------------------------------------------------------

    async def _connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            if self._connections >= self.limits.connections_max:
                await _send(stream, 429, "too many connections; retry")
                return
            self._connections += 1
            try:
                await self._one_request(stream)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            finally:
                self._connections -= 1

    async def _one_request(self, stream: anyio.abc.SocketStream) -> None:
        try:
            with anyio.fail_after(self.limits.request_deadline_seconds):
                request, body = await self._read(stream)
            status, page = await self._answer(request, body)
        except TimeoutError:
            await _send(stream, 408, "the request did not arrive in time")
            return
        except _Refused as refused:
            await _send(stream, refused.status, refused.text)
            return
        await _send_html(stream, status, page)

    async def _read(self, stream: anyio.abc.SocketStream) -> tuple[h11.Request, bytes]:
        """The request and its whole body, under the size limits.

        Raises:
            _Refused: malformed (400), head too large (431), body too large (413).
        """
        limit = self.limits.header_max_bytes
        parser = h11.Connection(h11.SERVER, max_incomplete_event_size=limit + _READ_BYTES)
        request: h11.Request | None = None
        head = bytearray()  # what arrived before the head was complete: its size is the head's limit
        body = bytearray()
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as exc:
                status = 431 if exc.error_status_hint == 431 else 400
                raise _Refused(status, "the request head is too large" if status == 431 else "bad request") from None
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive(_READ_BYTES)
                except anyio.EndOfStream:
                    data = b""
                if request is None:
                    head += data
                    end = _HEAD_END.search(head)
                    if (end.end() if end is not None else len(head)) > limit:
                        raise _Refused(431, "the request head is too large")
                parser.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
                declared = [v for n, v in event.headers if n == b"content-length"]
                if declared and int(declared[0]) > self.limits.body_max_bytes:
                    raise _Refused(413, "the request body is too large")
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > self.limits.body_max_bytes:
                    raise _Refused(413, "the request body is too large")
            elif isinstance(event, h11.EndOfMessage) and request is not None:
                return request, bytes(body)
            else:
                raise _Refused(400, "bad request")

    async def _answer(self, request: h11.Request, body: bytes) -> tuple[int, str]:
        """``(status, html)`` for a request that arrived whole.

        Raises:
            _Refused: by the rules in the module's docstring.
        """
        headers = [(bytes(n), bytes(v)) for n, v in request.headers]
        hosts = [v for n, v in headers if n == b"host"]
        if len(hosts) != 1 or hosts[0].decode("latin-1").lower() != f"{_HOST}:{self.port}":
            raise _Refused(421, "the Host header does not name this page")
        origins = [v for n, v in headers if n == b"origin"]
        if origins and (len(origins) != 1 or origins[0].decode("latin-1") != self.origin):
            raise _Refused(403, "requests from another origin are refused")
        target = bytes(request.target).decode("latin-1")
        if "?" in target:
            raise _Refused(400, "query strings are refused")
        if not target.startswith(_PATH_PREFIX):
            raise _Refused(404, "not found")
        self._prune()
        link = self._links.get(_digest(target.removeprefix(_PATH_PREFIX)))
        if link is None:
            raise _Refused(404, "no such approval link: it is wrong, or its approval is over")
        if link.used:
            raise _Refused(410, "this approval link was already used; it answers once")
        method = bytes(request.method)
        if method == b"GET":
            try:
                await self._judge(link, "deny", True)
            except ShadowcodeError as exc:
                return 410, _closed_page(exc.message)
            return 200, _question_page(link.asked)
        if method != b"POST":
            raise _Refused(405, "only GET and POST are served")
        if not origins:
            raise _Refused(403, "an answer must come from the approval page itself")
        decision = _decision(headers, body)
        link.used = True  # before the engine is asked: a second POST meanwhile is a reuse
        try:
            await self._judge(link, decision, False)
        except ShadowcodeError as exc:
            return 409, _closed_page(exc.message)
        link.decided.set()
        return 200, _done_page(link.asked, decision)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def _decision(headers: list[tuple[bytes, bytes]], body: bytes) -> str:
    """``approve`` or ``deny`` from the form body.

    Raises:
        _Refused: not a form, or not exactly one decision of the two (400).
    """
    types = [v for n, v in headers if n == b"content-type"]
    if len(types) != 1 or types[0].split(b";")[0].strip().lower() != b"application/x-www-form-urlencoded":
        raise _Refused(400, "an answer is a form post")
    try:
        fields = urllib.parse.parse_qs(body.decode("ascii"), strict_parsing=True, max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "an answer is a form post with decision=approve or decision=deny") from None
    values = fields.get("decision", [])
    if len(values) != 1 or values[0] not in ("approve", "deny") or fields.keys() != {"decision"}:
        raise _Refused(400, "an answer is a form post with decision=approve or decision=deny")
    return values[0]


def _shown(text: str) -> str:
    return html.escape(inert(text), quote=True)


def _document(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_shown(title)}</title><style>"
        "body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em}"
        "code{background:#eee;padding:0 .2em;white-space:pre-wrap;word-break:break-all}"
        "button{font-size:1.1em;margin-right:1em;padding:.4em 1.2em}</style></head>"
        f"<body>{body}</body></html>"
    )


def _question_page(asked: ApprovalAsked) -> str:
    action = asked.action
    if isinstance(action.get("argv"), list):
        argv = " ".join(f"<code>{_shown(str(a))}</code>" for a in action["argv"])
        cwd = _shown(str(action.get("cwd")))
        what = f"<h2>Command</h2><p id=argv>{argv}</p><h2>Folder</h2><p><code id=cwd>{cwd}</code></p>"
    else:
        what = f"<h2>Action ({_shown(asked.kind)})</h2><p><code id=action>{_shown(json.dumps(action))}</code></p>"
    files = "".join(f"<li><code>{_shown(f)}</code></li>" for f in asked.changed_files) or "<li>none</li>"
    return _document(
        f"Approve {asked.approval_id}?",
        f"<h1>ShadowCode asks for an approval</h1>"
        f"<p>Job <code id=task>{_shown(asked.task_id)}</code>: <span id=prompt>{_shown(asked.prompt)}</span></p>"
        f"{what}<h2>Files the job changed so far</h2><ul id=files>{files}</ul>"
        "<form method=post>"
        "<button type=submit name=decision value=approve id=approve>Approve</button>"
        "<button type=submit name=decision value=deny id=deny>Deny</button></form>"
        "<p>Approve allows exactly this, once. The first answer counts, whichever way it comes.</p>",
    )


def _done_page(asked: ApprovalAsked, decision: str) -> str:
    word = "Approved" if decision == "approve" else "Denied"
    return _document(word, f"<h1 id=outcome>{word}</h1><p>Approval {_shown(asked.approval_id)} is {word.lower()}.</p>")


def _closed_page(message: str) -> str:
    return _document("Not answerable", f"<h1 id=outcome>Not answerable</h1><p id=reason>{_shown(message)}</p>")


async def _send_html(stream: anyio.abc.SocketStream, status: int, page: str) -> None:
    headers = [(b"content-type", b"text/html; charset=utf-8"), *_SECURITY_HEADERS]
    await stream.send(response_bytes(status, headers, page.encode("utf-8")))


async def _send(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *_SECURITY_HEADERS]
    try:
        await stream.send(response_bytes(status, headers, (text + "\n").encode("utf-8")))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
