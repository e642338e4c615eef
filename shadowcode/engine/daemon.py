"""``shadowcode engine``: the headless engine of a profile, serving its unix socket (ENG-03).

One engine per profile: the process holding ``run/engine.lock`` (``flock``) is it. It listens
on the profile's control socket (mode 0600) for newline-delimited JSON requests
(:mod:`shadowcode.engine.control`). A connection that sends ``owner/open`` becomes that
owner's socket: its EOF, however the peer died, cancels the owner's unfinished jobs and waits
for their cleanup (SRV-21, SRV-22). SIGTERM, SIGINT or ``engine/stop`` stop the engine after
the same cleanup for every owner, and background processes stop with it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from shadowcode.engine.api import (
    MCP_ATTACH,
    MCP_NOTICES,
    OWNER_CLOSE,
    OWNER_OPEN,
    Access,
    Caller,
    McpAttach,
    McpAttached,
    Notices,
    OwnerClose,
    OwnerClosed,
    OwnerOpen,
    OwnerOpened,
    WireCaller,
    verbs,
)
from shadowcode.engine.control import FrameReader, send_frame
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.owners import Owner
from shadowcode.engine.relay_notices import RelayNotices
from shadowcode.engine.wire import error_to_wire, from_json, to_json
from shadowcode.enums import EngineMode
from shadowcode.errors import ConfigError, ProtocolError, ShadowcodeError, ToolError
from shadowcode.json_values import json_object
from shadowcode.profile import Profile

__all__ = ["run_headless"]

logger = logging.getLogger(__name__)

_CLOSED = "closed by its connection"
"""The reason recorded for an ``owner/close`` that gives none."""


AttachHandler = Callable[[LocalEngine, anyio.abc.SocketStream, McpAttach, Callable[[str], None]], Awaitable[str]]
"""Serves one attached MCP connection on a socket after ``mcp/attach``, given its validated request;
returns the close reason.

Its last argument records a closing notice for the relay to fetch (:mod:`shadowcode.engine.relay_notices`)."""


def run_headless(profile: Profile, *, attach: AttachHandler | None = None) -> None:
    """Run the profile's headless engine until SIGTERM/SIGINT or ``engine/stop``.

    Args:
        profile: the profile whose engine this is.
        attach: serves MCP connections relayed by ``mcp serve`` (``mcp/attach`` requests);
            the frontend supplies it, so the engine never imports the MCP server. Without it,
            ``mcp/attach`` is refused and relays fall back to serving in their own process.

    Raises:
        ConfigError: another engine already holds the profile's lock.
    """
    profile.ensure()
    lock = open(profile.lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        lock.seek(0)
        holder = lock.read().strip() or "another process"
        lock.close()
        raise ConfigError(f"an engine already runs for profile {profile.name!r} (pid {holder})") from exc
    lock.seek(0)
    lock.truncate()
    lock.write(str(os.getpid()))
    lock.flush()
    try:
        anyio.run(_serve, profile, attach)
    finally:
        with suppress(FileNotFoundError):
            profile.control_socket_path.unlink()
        lock.close()


async def _serve(profile: Profile, attach: AttachHandler | None) -> None:
    path = profile.control_socket_path
    with suppress(FileNotFoundError):
        path.unlink()
    old = os.umask(0o177)
    try:
        listener = await anyio.create_unix_listener(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    stop = anyio.Event()
    engine = LocalEngine(profile, mode=EngineMode.HEADLESS)
    notices = RelayNotices()
    # Signals are received until the engine has closed: a repeated SIGTERM queues instead of
    # cutting the cleanup of jobs and commands short.
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with engine.running(), listener, anyio.create_task_group() as tg:

            async def on_signal() -> None:
                async for _ in signals:
                    stop.set()
                    return

            async def accept() -> None:
                async def handle(stream: anyio.abc.SocketStream) -> None:
                    await _Connection(engine, stream, stop, attach, notices).serve()

                await listener.serve(handle)

            tg.start_soon(on_signal)
            tg.start_soon(accept)
            sys.stderr.write(f"shadowcode engine ready: profile {profile.name}, pid {os.getpid()}, socket {path}\n")
            sys.stderr.flush()
            await stop.wait()
            tg.cancel_scope.cancel()
        await engine.aclose()
    sys.stderr.write("shadowcode engine stopped\n")


class _Connection:
    """One client connection: control requests, and owner requests once ``owner/open`` was sent."""

    def __init__(
        self,
        engine: LocalEngine,
        stream: anyio.abc.SocketStream,
        stop: anyio.Event,
        attach: AttachHandler | None,
        notices: RelayNotices,
    ) -> None:
        self.engine = engine
        self.stream = stream
        self.stop = stop
        self.attach = attach
        self.notices = notices
        self.owner: Owner | None = None

    async def serve(self) -> None:
        reader = FrameReader(self.stream)
        reason = "socket closed"
        try:
            async with self.stream:
                while True:
                    try:
                        frame = await reader.read()
                    except ProtocolError as exc:
                        reason = f"protocol error: {exc.message}"
                        return
                    if frame is None:
                        return
                    if frame.get("method") == MCP_ATTACH.wire and self.attach is not None:
                        if reader.leftover():
                            reason = "protocol error: bytes sent before the attach reply"
                            return
                        try:
                            attach: McpAttach = from_json(MCP_ATTACH.request, frame.get("params") or {})
                        except ProtocolError as exc:
                            reason = f"protocol error: {exc.message}"
                            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                                await send_frame(self.stream, {"id": frame.get("id"), "error": error_to_wire(exc)})
                            return
                        session, notice = self.notices.open()
                        try:
                            reply = to_json(McpAttached(attached=True, session=session, handover=True))
                            await send_frame(self.stream, {"id": frame.get("id"), "result": reply})
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                            reason = "the relay left before its attach reply"
                            return
                        reason = await self.attach(self.engine, self.stream, attach, notice)
                        return
                    reply = await self.answer(frame)
                    try:
                        await send_frame(self.stream, reply)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        reason = "socket closed before a reply was read"
                        return
                    if frame.get("method") == "engine/stop" and "result" in reply:
                        self.stop.set()
                    if frame.get("method") == OWNER_CLOSE.wire:
                        return
        finally:
            if self.owner is not None:
                with anyio.CancelScope(shield=True):
                    await self.engine.close_owner(self.owner, reason)

    async def answer(self, frame: dict[str, Any]) -> dict[str, Any]:
        request_id = frame.get("id")
        method = frame.get("method")
        params = json_object(frame.get("params") or {})
        try:
            if not isinstance(method, str) or params is None:
                raise ProtocolError("a request needs a method and object params")
            result = await self.dispatch(method, params)
        except ShadowcodeError as exc:
            return {"id": request_id, "error": error_to_wire(exc)}
        except Exception:  # noqa: BLE001 - one bad request never stops the engine
            logger.exception("control request failed")
            return {"id": request_id, "error": error_to_wire(ShadowcodeError("internal engine error"))}
        return {"id": request_id, "result": result}

    def _caller(self, doc: Any) -> Caller:
        return self._caller_of(from_json(WireCaller, doc if doc is not None else {}))

    def _caller_of(self, wire: WireCaller) -> Caller:
        if wire.owned and self.owner is None:
            raise ProtocolError("owner request on a connection that opened no owner")
        return Caller(
            project=None if wire.project is None else Path(wire.project),
            access=Access(wire.allow_write, wire.allow_approvals, wire.approve_in_host),
            owner=self.owner if wire.owned else None,
            confined=wire.confined,
        )

    async def dispatch(self, method: str, params: dict[str, Any]) -> Any:
        engine = self.engine
        if method == MCP_NOTICES.wire:
            query = from_json(MCP_NOTICES.request, params)
            return to_json(Notices(self.notices.take(query.session)))
        if method == OWNER_OPEN.wire:
            return to_json(await self._owner_open(from_json(OWNER_OPEN.request, params)))
        if method == OWNER_CLOSE.wire:
            return to_json(await self._owner_close(from_json(OWNER_CLOSE.request, params)))
        declared = verbs().get(method)
        if declared is None:
            raise ToolError(f"unknown engine method {method!r}")
        request = from_json(declared.request, params.get("request") or {})
        result = await getattr(engine, declared.name)(request, self._caller(params.get("caller")))
        return to_json(result)

    async def _owner_open(self, request: OwnerOpen) -> OwnerOpened:
        if self.owner is not None:
            raise ProtocolError("this connection already owns jobs")
        owner = await self.engine.open_owner(request.kind, self._caller_of(request.caller))
        assert isinstance(owner, Owner)
        self.owner = owner
        return OwnerOpened(owner.id)

    async def _owner_close(self, request: OwnerClose) -> OwnerClosed:
        if self.owner is None:
            raise ProtocolError("this connection opened no owner")
        closing, self.owner = self.owner, None
        return await self.engine.close_owner(closing, request.reason or _CLOSED)
