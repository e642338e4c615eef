"""The loopback approval page (mcp/server/approval_page.py) over real sockets, with a recording judge.

Each rule, each limit at the limit and one past it, and that nothing reaches the engine on a refusal.

Covers SRV-30.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from shadowcode.engine.api import ApprovalAsked
from shadowcode.errors import PolicyError
from shadowcode.limits import (
    APPROVAL_PAGE_BODY_MAX_BYTES,
    APPROVAL_PAGE_CONNECTIONS_MAX,
    APPROVAL_PAGE_HEADER_MAX_BYTES,
    APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS,
)
from shadowcode.mcp.server.approval_page import ApprovalPage, PageLimits, PageLink

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-30")]

FOREVER = 2**31


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def asked(**changes: Any) -> ApprovalAsked:
    base: dict[str, Any] = {
        "approval_id": "appr_1",
        "task_id": "task_1",
        "kind": "command",
        "action": {"argv": ["make", "<b>x</b>", "a&b"], "cwd": "/p/<dir>"},
        "prompt": "fix <script>alert(1)</script>",
        "project": "/p",
        "changed_files": ["src/<i>.py", 'q"uote.txt'],
        "state": "ENGINE-STATE",
        "expires_at": FOREVER,
    }
    return ApprovalAsked(**(base | changes))


class Judge:
    """Records what reached the engine; refuses with ``refusal`` when set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, bool]] = []
        self.refusal: str | None = None

    async def __call__(self, link: PageLink, decision: str, check_only: bool) -> None:
        self.calls.append((link.asked.state, decision, check_only))
        if self.refusal is not None:
            raise PolicyError(self.refusal)

    def decided(self) -> list[tuple[str, str, bool]]:
        return [c for c in self.calls if not c[2]]


@asynccontextmanager
async def page(limits: PageLimits | None = None) -> AsyncIterator[tuple[ApprovalPage, Judge]]:
    judge = Judge()
    served = ApprovalPage(judge, limits=limits)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(served.serve)
            yield served, judge
            tg.cancel_scope.cancel()


async def exchange(port: int, raw: bytes) -> tuple[int, bytes]:
    """Send ``raw`` on a new connection, read the whole answer; ``(status, body)``."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(raw)
        return await read_answer(stream)


async def read_answer(stream: Any) -> tuple[int, bytes]:
    data = b""
    with anyio.fail_after(20):
        while True:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def request(method: str, path: str, port: int, *, origin: str | None = None, body: bytes = b"", **extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if method == "POST":
        lines += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def path_of(url: str) -> str:
    return url.split(str(url.split("/approval/")[0]))[1]


async def test_the_page_shows_the_job_command_folder_and_changed_files_escaped() -> None:
    async with page() as (served, judge):
        url, _ = served.open(asked(), "e1")
        status, body = await exchange(served.port, request("GET", path_of(url), served.port))
        text = body.decode()
        assert status == 200
        assert "<code>make</code> <code>&lt;b&gt;x&lt;/b&gt;</code> <code>a&amp;b</code>" in text
        assert "/p/&lt;dir&gt;" in text and "src/&lt;i&gt;.py" in text and "q&quot;uote.txt" in text
        assert "<script>" not in text and "ENGINE-STATE" not in text and "task_1" in text
        assert "value=approve" in text and "value=deny" in text
        assert judge.calls == [("ENGINE-STATE", "deny", True)]  # checked, nothing decided


async def test_an_answer_from_the_page_decides_once_and_reuse_is_refused() -> None:
    async with page() as (served, judge):
        url, link = served.open(asked(), "e1")
        post = request("POST", path_of(url), served.port, origin=served.origin, body=b"decision=approve")
        status, body = await exchange(served.port, post)
        assert status == 200 and b"Approved" in body and link.decided.is_set()
        for again in (post, request("GET", path_of(url), served.port)):
            assert (await exchange(served.port, again))[0] == 410
        served.forget("appr_1")  # decided: a used link still says it was used
        assert (await exchange(served.port, post))[0] == 410
        assert judge.decided() == [("ENGINE-STATE", "approve", False)]


async def test_deny_from_the_page_is_sent_as_deny() -> None:
    async with page() as (served, judge):
        url, _ = served.open(asked(), "e1")
        post = request("POST", path_of(url), served.port, origin=served.origin, body=b"decision=deny")
        assert (await exchange(served.port, post))[0] == 200
        assert judge.decided() == [("ENGINE-STATE", "deny", False)]


def _post(port: int, path: str, origin: str | None, body: bytes = b"decision=approve") -> bytes:
    return request("POST", path, port, origin=origin, body=body)


REFUSALS: dict[str, tuple[Any, int]] = {
    "another origin": (lambda p, path, o: _post(p, path, "http://evil.test"), 403),
    "a null origin": (lambda p, path, o: _post(p, path, "null"), 403),
    "no origin on a post": (lambda p, path, o: _post(p, path, None), 403),
    "another origin on a get": (lambda p, path, o: request("GET", path, p, origin="http://evil.test"), 403),
    "a wrong token": (lambda p, path, o: _post(p, path[:-3] + "abc", o), 404),
    "a query": (lambda p, path, o: _post(p, path + "?x=1", o), 400),
    "another host": (lambda p, path, o: request("GET", path, p).replace(f"127.0.0.1:{p}".encode(), b"evil.test"), 421),
    "localhost": (lambda p, path, o: request("GET", path, p).replace(b"127.0.0.1", b"localhost"), 421),
    "another decision": (lambda p, path, o: _post(p, path, o, b"decision=yes"), 400),
    "two decisions": (lambda p, path, o: _post(p, path, o, b"decision=deny&decision=approve"), 400),
    "not a form": (
        lambda p, path, o: _post(p, path, o).replace(b"application/x-www-form-urlencoded", b"application/json"),
        400,
    ),
    "another method": (lambda p, path, o: request("PUT", path, p, origin=o), 405),
    "not http": (lambda p, path, o: b"HELLO\r\n\r\n", 400),
}


@pytest.mark.parametrize("why", list(REFUSALS))
async def test_a_refused_request_decides_nothing_and_uses_nothing(why: str) -> None:
    build, status = REFUSALS[why]
    async with page() as (served, judge):
        url, link = served.open(asked(), "e1")
        got, _ = await exchange(served.port, build(served.port, path_of(url), served.origin))
        assert got == status, why
        assert judge.decided() == [] and not link.used, why
        post = request("POST", path_of(url), served.port, origin=served.origin, body=b"decision=approve")
        assert (await exchange(served.port, post))[0] == 200, why  # the link still answers


async def test_a_link_whose_approval_was_decided_elsewhere_shows_why_and_forgotten_links_are_unknown() -> None:
    async with page() as (served, judge):
        url, _ = served.open(asked(), "e1")
        judge.refusal = "approval appr_1 is already denied by the command line; nothing was approved"
        status, body = await exchange(served.port, request("GET", path_of(url), served.port))
        assert status == 410 and b"already denied by the command line" in body
        served.forget("appr_1")
        assert (await exchange(served.port, request("GET", path_of(url), served.port)))[0] == 404


async def test_a_link_expires_with_its_state() -> None:
    async with page() as (served, judge):
        url, _ = served.open(asked(expires_at=0), "e1")
        assert (await exchange(served.port, request("GET", path_of(url), served.port)))[0] == 404
        assert judge.calls == []


async def test_only_the_tokens_hash_is_kept() -> None:
    async with page() as (served, _):
        url, _ = served.open(asked(), "e1")
        token = url.rsplit("/", 1)[1]
        assert len(token) == 43
        kept = list(served._links)  # noqa: SLF001 - the test looks at what is held
        assert kept == [hashlib.sha256(token.encode()).hexdigest()] and token not in repr(served.__dict__)


# -- limits -------------------------------------------------------------------------------------


async def test_a_head_at_its_limit_is_read_and_one_byte_longer_is_refused_431() -> None:
    assert PageLimits().header_max_bytes == APPROVAL_PAGE_HEADER_MAX_BYTES
    async with page() as (served, judge):
        url, _ = served.open(asked(), "e1")
        base = request("GET", path_of(url), served.port, X_Pad="")
        pad = APPROVAL_PAGE_HEADER_MAX_BYTES - len(base)
        at_limit = request("GET", path_of(url), served.port, X_Pad="p" * pad)
        assert len(at_limit) == APPROVAL_PAGE_HEADER_MAX_BYTES
        assert (await exchange(served.port, at_limit))[0] == 200
        over = request("GET", path_of(url), served.port, X_Pad="p" * (pad + 1))
        assert (await exchange(served.port, over))[0] == 431


async def test_a_body_at_its_limit_is_read_and_one_byte_longer_is_refused_413() -> None:
    assert PageLimits().body_max_bytes == APPROVAL_PAGE_BODY_MAX_BYTES
    async with page() as (served, judge):
        url, link = served.open(asked(), "e1")
        at_limit = b"decision=approve&x=" + b"y" * (APPROVAL_PAGE_BODY_MAX_BYTES - 19)
        assert len(at_limit) == APPROVAL_PAGE_BODY_MAX_BYTES
        post = request("POST", path_of(url), served.port, origin=served.origin, body=at_limit)
        assert (await exchange(served.port, post))[0] == 400  # read whole, refused by the form rule
        over = request("POST", path_of(url), served.port, origin=served.origin, body=at_limit + b"y")
        assert (await exchange(served.port, over))[0] == 413
        chunked = (
            request("POST", path_of(url), served.port, origin=served.origin).replace(
                b"Content-Length: 0", b"Transfer-Encoding: chunked"
            )
            + b"%x\r\n" % (APPROVAL_PAGE_BODY_MAX_BYTES + 1)
            + at_limit
            + b"y\r\n0\r\n\r\n"
        )
        assert (await exchange(served.port, chunked))[0] == 413
        assert judge.decided() == [] and not link.used


async def test_connections_at_the_limit_are_served_and_one_more_is_refused_429() -> None:
    assert PageLimits().connections_max == APPROVAL_PAGE_CONNECTIONS_MAX
    async with page(PageLimits(connections_max=3)) as (served, _):
        url, _ = served.open(asked(), "e1")
        held = [await anyio.connect_tcp("127.0.0.1", served.port) for _ in range(3)]
        try:
            await held[0].send(b"G")  # each is accepted and waits for its request
            assert (await exchange(served.port, request("GET", path_of(url), served.port)))[0] == 429
            await held[2].send(request("GET", path_of(url), served.port))
            assert (await read_answer(held[2]))[0] == 200
        finally:
            for stream in held:
                await stream.aclose()


async def test_a_request_slower_than_the_deadline_is_answered_408() -> None:
    assert PageLimits().request_deadline_seconds == APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS
    async with page(PageLimits(request_deadline_seconds=1.0)) as (served, judge):
        url, link = served.open(asked(), "e1")
        async with await anyio.connect_tcp("127.0.0.1", served.port) as slow:
            raw = request("POST", path_of(url), served.port, origin=served.origin, body=b"decision=approve")
            await slow.send(raw[:-3])  # the rest never comes
            assert (await read_answer(slow))[0] == 408
        assert judge.decided() == [] and not link.used
