"""The OAuth sign-ins one engine is waiting on, between ``signin/start`` and ``signin/wait`` (CW-08).

A sign-in is one call of :func:`shadowcode.engine.mcp.login.sign_in` that runs in a task of
the engine's own, so it outlives the verb that started it: ``signin/start`` returns as soon as
the authorization URL is known (or raises the error that ended the sign-in before it), and
``signin/wait`` waits for the outcome and hands it over once. Each sign-in is bounded by
MCP_OAUTH_LOGIN_SECONDS whether or not anyone waits for it; stopping the engine cancels those
still waiting (nothing is stored for them). This module loads nothing of the MCP client: the
sign-in is imported when one starts.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from shadowcode.errors import NotAvailable, NotFound
from shadowcode.limits import MCP_OAUTH_LOGIN_SECONDS
from shadowcode.profile import Profile

if TYPE_CHECKING:
    from shadowcode.engine.api import McpServerInfo, McpSignedIn, McpSignIn, McpSignInStarted

__all__ = ["PendingLogins"]


@dataclass
class _Login:
    server: str
    announced: anyio.Event = field(default_factory=anyio.Event)
    finished: anyio.Event = field(default_factory=anyio.Event)
    urls: tuple[str, str] | None = None
    result: McpSignedIn | None = None
    error: Exception | None = None


class PendingLogins:
    """The engine's sign-ins in progress, by the ``sign_in`` name their start returned (CW-08)."""

    def __init__(self) -> None:
        self._tg: anyio.abc.TaskGroup | None = None
        self._logins: dict[str, _Login] = {}

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None, None]:
        """Accept sign-ins while the context is open; leaving it cancels those still waiting.

        An error of the body comes out as it was raised, not wrapped in a group: the sign-in
        tasks raise nothing of their own.
        """
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    yield
                finally:
                    self._tg = None
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def start(self, profile: Profile, server: McpServerInfo, request: McpSignIn) -> McpSignInStarted:
        """Start signing in to ``server``; return once the authorization URL is known.

        Raises:
            NotAvailable: the engine is not running.
            UsageError, SignInError: what ended the sign-in before the URL was known.
        """
        from shadowcode.engine.mcp.login import sign_in

        if self._tg is None:
            raise NotAvailable("this engine is not running; sign in again")
        for old in [n for n, done in self._logins.items() if done.server == server["id"] and done.finished.is_set()]:
            del self._logins[old]  # a new sign-in of the server supersedes an outcome nobody took
        name = "signin_" + secrets.token_hex(8)
        login = self._logins[name] = _Login(server=server["id"])

        def announce(url: str, callback: str) -> None:
            login.urls = (url, callback)
            login.announced.set()

        async def run() -> None:
            try:
                login.result = await sign_in(
                    profile, server, scopes=tuple(request.scopes), announce=announce, browser=request.browser
                )
            except Exception as exc:  # noqa: BLE001 - handed to the waiting verb as it was raised
                login.error = exc
            finally:
                login.finished.set()
                login.announced.set()

        self._tg.start_soon(run, name=f"sign-in {server['id']}")
        await login.announced.wait()
        if login.urls is None:
            del self._logins[name]
            raise login.error or NotAvailable("the engine stopped before the sign-in started")
        url, callback = login.urls
        from shadowcode.engine.api import McpSignInStarted  # the servers part, built on first use (issue 32)

        return McpSignInStarted(name, login.server, url, callback, MCP_OAUTH_LOGIN_SECONDS)

    async def wait(self, name: str) -> McpSignedIn:
        """The outcome of the sign-in ``name``, once it finished; it is forgotten then.

        Raises:
            NotFound: no sign-in of that name waits in this engine.
            SignInError: the sign-in failed (nothing stored). NotAvailable: the engine stopped first.
        """
        login = self._logins.get(name)
        if login is None:
            raise NotFound(f"no sign-in {name!r} is waiting in this engine; run `shadowcode mcp login` again")
        try:
            await login.finished.wait()
        finally:
            if login.finished.is_set():
                self._logins.pop(name, None)
        if login.error is not None:
            raise login.error
        if login.result is None:
            raise NotAvailable("the engine stopped before the sign-in finished; nothing was stored")
        return login.result
