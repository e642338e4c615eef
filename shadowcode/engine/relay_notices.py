"""Closing notices of relayed MCP sessions, kept until their relay asks for them (SRV-25).

An in-process ``mcp serve`` writes ``shadowcode: closing the connection: ...`` on its own
stderr when a limit ends the connection. Attached, the engine serves the session and the
relay only copies bytes, so the engine keeps those lines per session; when the engine has
closed the session's socket, the relay fetches them (``mcp/notices``) and writes them on
its stderr, where the host looks. Bounded: a relay that died never asks, so only the newest
sessions are kept.
"""

from __future__ import annotations

import secrets
import sys
from collections import OrderedDict
from collections.abc import Callable

from shadowcode.limits import RELAY_NOTICE_SESSIONS_MAX, RELAY_NOTICES_PER_SESSION_MAX

__all__ = ["RelayNotices"]


class RelayNotices:
    """Notices by session id, at most ``sessions_max`` sessions of ``per_session_max`` lines each.

    Args:
        sessions_max: sessions kept; opening one more forgets the oldest.
        per_session_max: lines kept per session; later lines go to the engine's stderr only.
    """

    def __init__(
        self, sessions_max: int = RELAY_NOTICE_SESSIONS_MAX, per_session_max: int = RELAY_NOTICES_PER_SESSION_MAX
    ) -> None:
        self.sessions_max = sessions_max
        self.per_session_max = per_session_max
        self._kept: OrderedDict[str, list[str]] = OrderedDict()

    def open(self) -> tuple[str, Callable[[str], None]]:
        """Start a session; returns its id (16 hex digits) and the callable that records a line.

        Each recorded line also goes to the engine's own stderr.
        """
        session = secrets.token_hex(8)
        lines: list[str] = []
        self._kept[session] = lines
        while len(self._kept) > self.sessions_max:
            self._kept.popitem(last=False)

        def notice(text: str) -> None:
            sys.stderr.write(text)
            if len(lines) < self.per_session_max:
                lines.append(text)

        return session, notice

    def take(self, session: str) -> list[str]:
        """The session's lines, forgotten once returned; [] for an unknown or forgotten session."""
        return self._kept.pop(session, [])
