"""The loopback listener that receives the browser's redirect at the end of a sign-in (CW-08).

:class:`CallbackListener` listens on ``127.0.0.1`` only (a fixed port when the definition
names one, else any free port) and answers ``GET /callback?...``: a ``code`` and ``state``, or
the ``error`` an authorization server reports when the user denied. Anything else is answered
404 (another path) or 400 (neither a code nor an error) and waited past; a request over
MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES is answered 431. Requests are read with h11 within a few
seconds each; the whole wait is bounded by the deadline the caller gives.
"""

from __future__ import annotations

import re
from contextlib import suppress
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import h11
from anyio.abc import SocketAttribute
from mcp.shared.auth import AuthorizationCodeResult

from shadowcode.limits import MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES
from shadowcode.mcp.client.oauth_http import SignInError

__all__ = ["CallbackListener"]

_PATH = "/callback"
_REQUEST_SECONDS = 5.0
_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PAGE = b"<!doctype html><title>ShadowCode</title><p>%s You can close this window.</p>"


class CallbackListener:
    """A loopback HTTP listener for one sign-in's redirect (CW-08).

    Args:
        port: a fixed port, or 0 for any free one.

    Attributes:
        redirect_uri: ``http://127.0.0.1:PORT/callback`` once entered.
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.redirect_uri = ""
        self._listener: anyio.abc.SocketListener | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._result: AuthorizationCodeResult | SignInError | None = None
        self._done = anyio.Event()

    async def __aenter__(self) -> CallbackListener:
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        except OSError as exc:
            raise SignInError(
                f"the sign-in callback cannot listen on 127.0.0.1:{self.port} ({exc.strerror or type(exc).__name__})"
            ) from None
        first = listener.listeners[0]
        assert isinstance(first, anyio.abc.SocketListener)  # a TCP multi-listener holds socket listeners
        self._listener = first
        self.port = int(first.extra(SocketAttribute.local_port))
        self.redirect_uri = f"http://127.0.0.1:{self.port}{_PATH}"
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._serve)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._tg is not None and self._listener is not None
        self._tg.cancel_scope.cancel()
        try:
            await self._tg.__aexit__(None, None, None)
        finally:  # a cancelled caller gets its cancellation out of the task group: close the port all the same
            with anyio.CancelScope(shield=True):
                await self._listener.aclose()

    async def wait(self, seconds: float) -> AuthorizationCodeResult:
        """The redirect's parameters, once one reached the callback.

        Raises:
            SignInError: the user denied, the redirect carried neither code nor error, or
                nothing arrived within ``seconds``.
        """
        with anyio.move_on_after(seconds):
            await self._done.wait()
        if self._result is None:
            raise SignInError(
                f"time ran out: no sign-in reached the callback within {seconds:g} s; nothing was stored "
                "(run `shadowcode mcp login` again)"
            )
        if isinstance(self._result, SignInError):
            raise self._result
        return self._result

    async def _serve(self) -> None:
        assert self._listener is not None
        async with anyio.create_task_group() as tg:
            while True:
                stream = await self._listener.accept()
                tg.start_soon(self._one, stream)

    async def _one(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with anyio.move_on_after(_REQUEST_SECONDS), suppress(Exception):
                conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES)
                received = 0
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        data = await stream.receive(4096)
                        received += len(data)
                        if received > MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES:
                            await stream.send(
                                b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\r\n"
                            )
                            return
                        conn.receive_data(data)
                        continue
                    break
                if not isinstance(event, h11.Request):
                    return
                status, message = self._handle(event)
                page = _PAGE % message.encode("utf-8")
                headers = [("content-type", "text/html; charset=utf-8"), ("content-length", str(len(page)))]
                await stream.send(
                    conn.send(h11.Response(status_code=status, headers=[*headers, ("connection", "close")]))
                )
                await stream.send(conn.send(h11.Data(data=page)) + conn.send(h11.EndOfMessage()))

    def _handle(self, request: h11.Request) -> tuple[int, str]:
        target = request.target.decode("ascii", "replace")
        parts = urlsplit(target)
        if request.method != b"GET" or parts.path != _PATH or self._done.is_set():
            return 404, "Nothing here."
        query = {k: v[0] for k, v in parse_qs(parts.query, max_num_fields=16).items()}
        if "error" in query:
            code = query["error"] if _CODE.fullmatch(query["error"]) else "an error"
            self._finish(
                SignInError(
                    f"the sign-in was denied: the authorization server answered {code}; nothing was stored"
                    if code == "access_denied"
                    else f"the authorization server ended the sign-in with {code}; nothing was stored"
                )
            )
            return 200, "The sign-in did not complete."
        if "code" not in query:
            return 400, "This address expects an authorization code or an error."
        self._finish(AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss")))
        return 200, "Signed in to the MCP server."

    def _finish(self, result: AuthorizationCodeResult | SignInError) -> None:
        self._result = result
        self._done.set()
