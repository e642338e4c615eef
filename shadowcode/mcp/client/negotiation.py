"""Choosing the protocol revision of one external connection, through the SDK's own policy (CLI-15, CLI-16).

Both transports run the SDK's ``negotiate_auto``: a ``server/discover`` probe at 2026-07-28
first, adopted when the answer is a modern discovery result; anything else (a JSON-RPC error,
an unrelated or unparseable result, a discovery result naming only legacy revisions) falls
back to the legacy ``initialize`` handshake. After a 2026-07-28 discovery every request
carries the per-request metadata (protocol version, client info, the empty capability set)
in its ``_meta``, stamped by the SDK session; on stdio there are no headers.

What this module adds is the bound the stdio transport needs, which the SDK leaves at its own
ten seconds:

- The probe waits at most ``probe_seconds`` (``MCP_STDIO_PROBE_SECONDS`` by default, never more
  than the connection's timeout); no answer reads as a timeout error, so the policy falls back
  to ``initialize``. The probe is abandoned without ``notifications/cancelled`` (the spec
  forbids cancelling it); a late answer is dropped by the SDK.
- When the transport fails while the probe is pending (the server exited when probed, or
  answered with a frame that is not JSON-RPC), :class:`ProbeEnded` is raised instead: the
  connection then starts the server once more and goes straight to ``initialize``.
- The caller's handshake deadline starts once the probe is settled: ``on_probe_settled`` is
  called when each probe ends, however it ends.

:attr:`BoundedSession.fallback` says why a connection that probed ended up legacy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["BoundedSession", "ProbeEnded", "negotiate"]


class ProbeEnded(Exception):
    """The transport failed while ``server/discover`` was pending; the message names how."""


class BoundedSession(ClientSession):
    """The SDK session with an empty capability advertisement (CLI-15) and an optionally bounded probe (CLI-16).

    Attributes:
        probe_seconds: the probe's deadline, or None for the SDK's own (HTTP, where the
            connection's deadline bounds the whole negotiation).
        transport_failure: returns why the transport failed, or None while it is sound.
        on_probe_settled: called each time a probe ends (answered, refused, timed out, failed).
        fallback: why the probe did not lead to 2026-07-28, when it did not.
    """

    probe_seconds: float | None = None
    transport_failure: Callable[[], str | None] = staticmethod(lambda: None)
    on_probe_settled: Callable[[], None] = staticmethod(lambda: None)
    fallback: str | None = None

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        return types.ClientCapabilities()

    async def send_discover(self, version: str) -> dict[str, Any]:
        """One probe, bounded by :attr:`probe_seconds` when set.

        Raises:
            MCPError: the server answered with a JSON-RPC error, or did not answer in time
                (``REQUEST_TIMEOUT``): the SDK's policy falls back to ``initialize``.
            ProbeEnded: the transport failed while the probe was pending.
        """
        try:
            if self.probe_seconds is None:
                return await self._probe(version)
            with anyio.move_on_after(self.probe_seconds):
                return await self._probe(version)
            self._ended()
            self.fallback = f"server/discover got no answer within {self.probe_seconds:g} s"
            raise MCPError(types.REQUEST_TIMEOUT, self.fallback)
        finally:
            self.on_probe_settled()

    async def _probe(self, version: str) -> dict[str, Any]:
        try:
            raw = await super().send_discover(version)
        except MCPError as exc:
            self._ended()
            self.fallback = f"server/discover was answered with JSON-RPC error {exc.code}"
            raise
        self.fallback = None
        return raw

    def _ended(self) -> None:
        reason = self.transport_failure()
        if reason is not None:
            raise ProbeEnded(reason)


async def negotiate(session: BoundedSession, *, probe: bool) -> None:
    """Negotiate on ``session``: probe first (the SDK's policy) when ``probe``, else ``initialize`` only.

    Raises:
        MCPError: the handshake was refused.
        ProbeEnded: the transport failed during the probe.
        pydantic.ValidationError, RuntimeError: the handshake's result is unusable.
    """
    if not probe:
        await session.initialize()
        return
    await negotiate_auto(session)
    if session.protocol_version not in MODERN_PROTOCOL_VERSIONS and session.fallback is None:
        session.fallback = "server/discover was answered with something other than a 2026-07-28 discovery result"
