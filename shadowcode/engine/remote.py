"""The headless engine over its control socket, as an :class:`~shadowcode.engine.api.EngineApi` (ENG-03, SRV-22).

Every verb of the table becomes one request on the socket (``{"id", "method", "params":
{"request", "caller"}}``, :mod:`shadowcode.engine.control`); its reply is validated back into
the verb's result type (or, asked through :meth:`RemoteEngine.call_as_json`, returned as the JSON
it came as), and an error reply raised as the same typed error. Calls that are not
about an owner share one control connection. :meth:`RemoteEngine.open_owner` opens a private
connection that becomes the owner's socket: the owner's calls travel on it, and its EOF,
however this process ends, makes the engine cancel the owner's jobs (SRV-21, SRV-22).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc

from shadowcode.engine import api
from shadowcode.engine.api import NOBODY, Caller, EngineApi, OwnerClosed, OwnerHandle, verb_name, verb_named
from shadowcode.engine.control import FrameReader, send_frame
from shadowcode.engine.wire import error_from_wire, from_json, to_json
from shadowcode.enums import EngineMode
from shadowcode.errors import ProtocolError
from shadowcode.limits import OWNER_REPLY_DEADLINE_SECONDS
from shadowcode.profile import Profile

__all__ = ["RemoteEngine", "RemoteOwner", "caller_to_wire", "connect_remote"]

Req = TypeVar("Req")
Res = TypeVar("Res")


class _Channel:
    """One socket connection with request/reply correlation (one request at a time)."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader(stream)
        self.lock = anyio.Lock()
        self.ids = itertools.count(1)

    async def call(self, method: str, params: dict[str, Any], *, deadline: float = OWNER_REPLY_DEADLINE_SECONDS) -> Any:
        async with self.lock:
            request_id = next(self.ids)
            with anyio.fail_after(deadline):
                await send_frame(self.stream, {"id": request_id, "method": method, "params": params})
                reply = await self.reader.read()
            if reply is None:
                raise ProtocolError("the engine closed the connection")
            if reply.get("id") != request_id:
                raise ProtocolError("the engine answered another request")
            if "error" in reply:
                raise error_from_wire(reply["error"])
            return reply.get("result")

    async def call_door(self, door: api.Door[Req, Res], request: Req) -> Res:
        """Send one connection method's request; its reply validated as the door's result type."""
        result = await self.call(door.wire, to_json(request), deadline=door.deadline_seconds)
        return from_json(door.result, result)

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass
class RemoteOwner:
    """An owner held by this process: its id and its private socket."""

    id: str
    channel: _Channel = field(repr=False)


def caller_to_wire(caller: Caller) -> dict[str, Any]:
    """The caller as the engine reads it: its project, access flags, ``owned`` and ``confined``.

    The keys: ``project``, ``allow_write``, ``allow_approvals``, ``approve_in_host``, ``owned``, ``confined``.

    The owner itself never travels: ``owned`` tells the engine to use the connection's owner.
    """
    return to_json(_wire_caller(caller))


def _wire_caller(caller: Caller) -> api.WireCaller:
    access = caller.access
    return api.WireCaller(
        project=None if caller.project is None else str(caller.project),
        allow_write=access.allow_write,
        allow_approvals=access.allow_approvals,
        approve_in_host=access.approve_in_host,
        owned=caller.owner is not None,
        confined=caller.confined,
    )


class RemoteEngine(EngineApi):
    """The profile's headless engine, reached over its unix socket."""

    mode = EngineMode.ATTACHED

    def __init__(self, profile: Profile, control: _Channel) -> None:
        self.profile = profile
        self._control = control

    async def call_verb(self, name: str, request: Any, caller: Caller) -> Any:
        return from_json(verb_named(name).result, await self._call(name, request, caller))

    async def call_as_json(
        self, declared: Callable[[Any, Req, Caller], Awaitable[object]], request: Req, caller: Caller = NOBODY
    ) -> Any:
        """The verb's reply as it came over the socket: JSON the engine encoded once, not decoded here."""
        return await self._call(verb_name(declared), request, caller)

    async def _call(self, name: str, request: Any, caller: Caller) -> Any:
        declared = verb_named(name)
        channel = self._control
        if caller.owner is not None:
            if not isinstance(caller.owner, RemoteOwner):
                raise ProtocolError("this owner does not belong to the remote engine")
            channel = caller.owner.channel
        params = {"request": to_json(request), "caller": caller_to_wire(caller)}
        return await channel.call(declared.wire, params, deadline=declared.deadline_seconds)

    async def open_owner(self, kind: str, caller: Caller) -> OwnerHandle:
        """Open a private ownership socket for ``caller.project`` (SRV-22)."""
        channel = _Channel(await anyio.connect_unix(self.profile.control_socket_path))
        try:
            opened = await channel.call_door(api.OWNER_OPEN, api.OwnerOpen(kind, _wire_caller(caller)))
        except BaseException:
            await channel.aclose()
            raise
        return RemoteOwner(id=opened.owner, channel=channel)

    async def close_owner(self, owner: OwnerHandle, reason: str) -> OwnerClosed:
        """Close normally: the engine cancels the owner's jobs and acknowledges after cleanup (SRV-21)."""
        if not isinstance(owner, RemoteOwner):
            raise ProtocolError("this owner does not belong to the remote engine")
        try:
            return await owner.channel.call_door(api.OWNER_CLOSE, api.OwnerClose(reason))
        finally:
            await owner.channel.aclose()

    async def aclose(self) -> None:
        """Close the control connection; the engine keeps running."""
        await self._control.aclose()


async def connect_remote(profile: Profile) -> RemoteEngine | None:
    """A :class:`RemoteEngine` when the profile's headless engine accepts connections, else None."""
    path = profile.control_socket_path
    if not path.exists():
        return None
    try:
        stream = await anyio.connect_unix(path)
    except OSError:
        return None
    return RemoteEngine(profile, _Channel(stream))
