"""Catalog freshness of one connection: ``list_changed`` notices, ``ttlMs`` expiry, in-place revalidation.

Covers CW-05, CW-06, CW-09.

:class:`CatalogFreshness` is part of :class:`~shadowcode.mcp.client.connection.Connection`:
it keeps the lists read on the connection (tools at connect; resources, templates, prompts and
skills on first use), marks them stale when the server sends ``notifications/tools/list_changed``,
``notifications/resources/list_changed`` or ``notifications/prompts/list_changed`` or when
their clamped ``ttlMs`` has passed, and revalidates them in place from one supervising task:
one revalidation at a time, at least ``revalidate_interval_seconds`` apart, so a flood of
notices costs at most one listing an interval. A changed tool list bumps ``tools_generation``.
A revalidation that fails retires the connection (its catalog is no longer served).

Every listing, at connect and after, is bounded like discovery (CW-07): the connection's
``connect`` timeout for all its pages, its ``read`` timeout for each page; waiting for a
pending revalidation of the tools is bounded by ``connect`` too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from shadowcode.errors import UpstreamServerError
from shadowcode.mcp.client.catalog import LIST_KINDS, CatalogLimits, ListKind, read_list
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.skills import Skill, SkippedSkill, check_entries, offers_skills
from shadowcode.mcp.client.timeouts import Timeouts

__all__ = ["CatalogFreshness"]

logger = logging.getLogger(__name__)


class CatalogFreshness:
    """The freshness half of a connection; the attributes below are the connection's own."""

    if TYPE_CHECKING:
        server_id: str
        _limits: Timeouts
        redactor: Redactor
        catalog_limits: CatalogLimits
        tools: list[dict[str, Any]]
        tools_generation: int
        ttl_seconds: float | None
        revalidations: int
        on_tools_changed: Callable[[], None] | None
        _server: Any
        _session: Any
        _close: anyio.Event

        def _set_failed(self, reason: str) -> None: ...

        def _require_ready(self) -> Any: ...

    def _init_freshness(self) -> None:
        self._lists: dict[ListKind, list[dict[str, Any]]] = {}
        self._expires: dict[ListKind, float] = {}
        self._stale: set[ListKind] = set()
        self._wake = anyio.Event()
        self._fresh = anyio.Event()
        self._fresh.set()
        self._list_lock = anyio.Lock()

    async def _read(self, session: Any, kind: ListKind, *, deadline: float | None = None) -> list[dict[str, Any]]:
        """Read one list under the catalog limits and timeouts, redact it, keep it and its expiry.

        ``deadline`` is the connect budget already running at connect; later listings get the
        whole ``connect`` timeout from when they start.

        Raises:
            UpstreamServerError: a limit was crossed, the listing failed or ran out of time.
        """
        server = self._server
        listing = await read_list(
            session,
            kind,
            self.catalog_limits,
            timeout_seconds=self._limits.connect,
            read_seconds=self._limits.read,
            deadline=deadline,
            server_id=self.server_id,
            failure=lambda: server.failure if server is not None else None,
        )
        items = [self.redactor.redact(item) for item in listing.items]
        changed = kind == "tools" and kind in self._lists and items != self.tools
        if kind == "tools":
            self.tools = items
            self.ttl_seconds = listing.ttl_seconds
        self._lists[kind] = items
        self._expires.pop(kind, None)
        if listing.ttl_seconds is not None:
            self._expires[kind] = anyio.current_time() + listing.ttl_seconds
            self._wake.set()  # the supervisor recomputes its next expiry
        if changed:
            self.tools_generation += 1
            if self.on_tools_changed is not None:
                try:
                    self.on_tools_changed()
                except Exception:  # noqa: BLE001 - a listener's failure never fails the connection
                    logger.exception("the tools-changed listener failed")
        return items

    async def _on_message(self, message: Any) -> None:
        """Mark the lists a ``list_changed`` notice names as stale and wake the supervisor (CW-05)."""
        if isinstance(message, types.ToolListChangedNotification):
            self._mark_stale("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._mark_stale("resources", "templates", "skills")
        elif isinstance(message, types.PromptListChangedNotification):
            self._mark_stale("prompts")

    def _mark_stale(self, *kinds: ListKind) -> None:
        self._stale.update(kinds)
        if "tools" in kinds and self._fresh.is_set():
            self._fresh = anyio.Event()
        self._wake.set()

    async def _supervise(self) -> None:
        """Revalidate stale or expired lists, one revalidation at a time, until the connection ends (CW-05)."""
        session = self._session
        assert session is not None
        while not self._close.is_set():
            due = min(self._expires.values(), default=None)
            with anyio.move_on_after(None if due is None else max(0.0, due - anyio.current_time())):
                await self._wake.wait()
            self._wake = anyio.Event()
            now = anyio.current_time()
            expired: list[ListKind] = [kind for kind, at in self._expires.items() if at <= now]
            if expired:
                self._mark_stale(*expired)
            kinds: list[ListKind] = [kind for kind in LIST_KINDS if kind in self._stale and kind in self._lists]
            self._stale.clear()
            try:
                if kinds:
                    self.revalidations += 1
                    async with self._list_lock:
                        for kind in kinds:
                            await self._read(session, kind)
            except UpstreamServerError as exc:
                self._set_failed(f"revalidating the catalog failed ({exc.message}); the stale catalog is not served")
                self._fresh.set()
                return
            if not self._stale:
                self._fresh.set()
            await anyio.sleep(self.catalog_limits.revalidate_interval_seconds)

    async def settled(self) -> None:
        """Wait until no revalidation of the tool list is pending, at most the ``connect`` timeout; never raises."""
        with anyio.move_on_after(self._limits.connect):
            await self._fresh.wait()

    async def fresh_tools(self) -> list[dict[str, Any]]:
        """The tool list once no revalidation of it is pending, waiting at most ``connect`` (CW-05).

        Raises:
            UpstreamServerError: the connection is not ready (a failed revalidation retires it) or
                the pending revalidation did not finish in time.
        """
        await self.settled()
        self._require_ready()
        if not self._fresh.is_set():
            raise UpstreamServerError(
                f"{self.server_id}: the server's tools changed and were not listed again within "
                f"{self._limits.connect} s; nothing was sent",
                server=self.server_id,
            )
        return self.tools

    async def listing(self, kind: ListKind) -> list[dict[str, Any]]:
        """One list (read on first use, then kept fresh like the tools), or ``[]`` when the server
        does not offer that capability (CW-05, CW-06; ``skills`` only with the Skills extension, CW-09).

        Raises:
            UpstreamServerError: the connection is not ready, or the listing failed (a first listing
                that fails leaves the connection as it was; a failed revalidation retires it).
        """
        session = self._require_ready()
        if kind == "tools":
            return await self.fresh_tools()
        capabilities = session.server_capabilities
        if kind == "skills":
            offered = offers_skills(capabilities)
        else:
            offered = capabilities is not None and (
                capabilities.prompts is not None if kind == "prompts" else capabilities.resources is not None
            )
        if not offered:
            return []
        async with self._list_lock:
            if kind in self._lists and kind not in self._stale:
                return self._lists[kind]
            try:
                return await self._read(session, kind)
            except UpstreamServerError as exc:
                raise UpstreamServerError(f"{self.server_id}: {exc.message}", server=self.server_id) from None

    async def skills(self) -> tuple[list[Skill], list[SkippedSkill]]:
        """The server's kept skills and skipped entries, from its ``skills/list`` checked against its
        ``resources/list`` (CW-09); ``([], [])`` without the Skills extension. Reads no skill file.

        Raises:
            UpstreamServerError: the connection is not ready, or a listing failed.
        """
        entries = await self.listing("skills")
        if not entries:
            return [], []
        resources = await self.listing("resources")
        return check_entries(entries, {str(r.get("uri")) for r in resources})
