"""A frontend's view of a running headless engine over its unix socket (ENG-03, SRV-22).

:class:`RemoteCore` offers the same async calls as :class:`~shadowcode.engine.core.EngineCore`
that frontends use. Control requests share one connection; :meth:`RemoteCore.open_owner`
opens a private connection that becomes the owner's socket, so the owner's jobs are cancelled
by the engine when that socket closes, however this process ends.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from shadowcode.engine.control import FrameReader, error_from_wire, send_frame
from shadowcode.engine.policy import Access
from shadowcode.engine.projects import Project
from shadowcode.errors import ProtocolError
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, OWNER_REPLY_DEADLINE_SECONDS
from shadowcode.profile import Profile

__all__ = ["RemoteCore", "RemoteOwner", "connect_remote"]


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

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass
class RemoteOwner:
    """An owner held by this process: its id and its private socket."""

    id: str
    channel: _Channel = field(repr=False)


class RemoteCore:
    """Calls into the profile's headless engine."""

    mode = "attached"

    def __init__(self, profile: Profile, control: _Channel) -> None:
        self.profile = profile
        self._control = control

    async def _connect(self) -> _Channel:
        return _Channel(await anyio.connect_unix(self.profile.control_socket_path))

    async def status(self) -> dict[str, Any]:
        """The engine's ``engine/status``."""
        return dict(await self._control.call("engine/status", {}))

    async def stop(self) -> dict[str, Any]:
        """Ask the engine to stop after owned cleanup."""
        return dict(await self._control.call("engine/stop", {}))

    async def open_owner(self, kind: str, project: Path) -> RemoteOwner:
        """Open a private ownership socket for ``project`` (SRV-22)."""
        channel = await self._connect()
        try:
            result = await channel.call("owner/open", {"kind": kind, "project": str(project)})
        except BaseException:
            await channel.aclose()
            raise
        return RemoteOwner(id=str(result["owner"]), channel=channel)

    async def close_owner(self, owner: RemoteOwner, reason: str) -> dict[str, Any]:
        """Close normally: the engine cancels the owner's jobs and acknowledges after cleanup."""
        try:
            return dict(await owner.channel.call("owner/close", {"reason": reason}, deadline=CLEANUP_DEADLINE_SECONDS))
        finally:
            await owner.channel.aclose()

    def _via(self, owner: RemoteOwner | None) -> _Channel:
        return owner.channel if owner is not None else self._control

    async def submit_task(
        self,
        *,
        owner: RemoteOwner | None,
        project: Project,
        prompt: str,
        mode: str = "build",
        level: str = "read_only",
        model: str | None = None,
        access: Access,
    ) -> dict[str, Any]:
        """As :meth:`EngineCore.submit_task`."""
        params = {"project": str(project.path), "prompt": prompt, "mode": mode, "level": level, "model": model,
                  "owned": owner is not None, "allow_write": access.allow_write,
                  "allow_approvals": access.allow_approvals}  # fmt: skip
        return dict(await self._via(owner).call("task/create", params))

    async def submit_test(
        self, *, owner: RemoteOwner | None, project: Project, command: list[str] | None, access: Access
    ) -> dict[str, Any]:
        """As :meth:`EngineCore.submit_test`."""
        params = {"project": str(project.path), "command": command, "owned": owner is not None,
                  "allow_write": access.allow_write, "allow_approvals": access.allow_approvals}  # fmt: skip
        return dict(await self._via(owner).call("test/create", params))

    async def jobs(self, owner: RemoteOwner) -> list[dict[str, Any]]:
        """As :meth:`EngineCore.jobs`."""
        return list(await owner.channel.call("job/list", {"owned": True}))

    async def job(self, task_id: str, *, owner: RemoteOwner | None, project: Path, cursor: int = 0) -> dict[str, Any]:
        """As :meth:`EngineCore.job`."""
        params = {"id": task_id, "project": str(project), "cursor": cursor, "owned": owner is not None}
        return dict(await self._via(owner).call("job/get", params))

    async def cancel(self, task_id: str, *, owner: RemoteOwner | None, project: Path) -> dict[str, Any]:
        """As :meth:`EngineCore.cancel`."""
        params = {"id": task_id, "project": str(project), "owned": owner is not None}
        return dict(await self._via(owner).call("job/cancel", params, deadline=CLEANUP_DEADLINE_SECONDS))

    async def resolve_approval(
        self, approval_id: str, decision: str, *, owner: RemoteOwner | None, by: str
    ) -> dict[str, Any]:
        """As :meth:`EngineCore.resolve_approval`."""
        params = {"id": approval_id, "decision": decision, "owned": owner is not None, "by": by}
        return dict(await self._via(owner).call("approval/resolve", params))

    async def rollback(self, task_id: str, *, project: Project, access: Access, confirm: bool) -> dict[str, Any]:
        """As :meth:`EngineCore.rollback`."""
        params = {"task_id": task_id, "project": str(project.path), "confirm": confirm,
                  "allow_write": access.allow_write}  # fmt: skip
        return dict(await self._control.call("rollback", params))

    async def background(self) -> list[dict[str, Any]]:
        """The engine's background processes (SRV-23)."""
        return list(await self._control.call("bg/list", {}))

    async def stop_background(self, process_id: str) -> dict[str, Any]:
        """Stop one background process (SRV-23)."""
        return dict(await self._control.call("bg/stop", {"id": process_id}, deadline=CLEANUP_DEADLINE_SECONDS))

    async def aclose(self) -> None:
        """Close the control connection."""
        await self._control.aclose()


async def connect_remote(profile: Profile) -> RemoteCore | None:
    """A :class:`RemoteCore` when the profile's headless engine accepts connections, else None."""
    path = profile.control_socket_path
    if not path.exists():
        return None
    try:
        stream = await anyio.connect_unix(path)
    except OSError:
        return None
    return RemoteCore(profile, _Channel(stream))


@asynccontextmanager
async def open_core(engine: Any) -> AsyncIterator[Any]:
    """The profile's running engine: attached when a headless one runs, else a temporary one (ENG-03).

    Yields:
        A :class:`RemoteCore` or a running :class:`~shadowcode.engine.core.EngineCore`.
    """
    remote = await connect_remote(engine.profile)
    if remote is not None:
        try:
            yield remote
        finally:
            with anyio.CancelScope(shield=True):
                await remote.aclose()
        return
    from shadowcode.engine.core import EngineCore

    core = EngineCore(engine)
    async with core.running():
        yield core
