"""The engine: policy, records and delegated work behind one API (ENG-03).

A frontend gets the profile's engine with :func:`open_engine` and talks to it through
:class:`~shadowcode.engine.api.EngineApi` only. When the profile's headless engine runs, the
frontend is attached to it over its socket; otherwise a temporary engine runs inside the
frontend's process and closes, with everything it started, when the frontend is done.

This package never imports ``shadowcode.mcp.server`` or ``shadowcode.cli``; its modules are
imported lazily here so that importing the package costs nothing.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowcode.engine.api import EngineApi
    from shadowcode.engine.daemon import AttachHandler
    from shadowcode.profile import Profile

__all__ = ["open_engine", "open_headless", "run_headless"]


def run_headless(profile: Profile, *, attach: AttachHandler | None = None) -> None:
    """Run the profile's headless engine in this process until SIGTERM, SIGINT or ``engine/stop`` (ENG-03).

    See :func:`shadowcode.engine.daemon.run_headless`.

    Raises:
        ConfigError: another engine already holds the profile's lock.
    """
    from shadowcode.engine.daemon import run_headless as serve

    serve(profile, attach=attach)


@asynccontextmanager
async def open_engine(profile: Profile) -> AsyncGenerator[EngineApi, None]:
    """The profile's engine: the running headless one, else a temporary one in this process (ENG-03).

    Yields:
        A running :class:`~shadowcode.engine.api.EngineApi`; leaving the context closes a
        temporary engine (cancelling its work, stopping its processes) or detaches from a
        headless one.

    Raises:
        StoreError: the profile's store cannot be opened (temporary engine).
    """
    if profile.control_socket_path.exists():  # else no engine listens: the remote client is not even imported
        async with open_headless(profile) as remote:
            if remote is not None:
                yield remote
                return
    from shadowcode.engine.local import LocalEngine

    engine = LocalEngine(profile)
    try:
        async with engine.running():
            yield engine
    finally:
        await engine.aclose()


@asynccontextmanager
async def open_headless(profile: Profile) -> AsyncGenerator[EngineApi | None, None]:
    """The profile's running headless engine over its socket, or None when none accepts connections (ENG-03)."""
    import anyio

    from shadowcode.engine.remote import connect_remote

    remote = await connect_remote(profile)
    try:
        yield remote
    finally:
        if remote is not None:
            with anyio.CancelScope(shield=True):
                await remote.aclose()
