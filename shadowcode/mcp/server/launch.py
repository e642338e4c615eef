"""``mcp serve`` over stdio: open the engine, fix the project, serve one client (SRV-01, SRV-07).

Errors before serving (bad workspace, bad profile) are raised as ShadowcodeError so the CLI
prints them on stderr with exit 2; nothing is ever written to stdout but JSON-RPC frames.

A served connection that ended cleanly ends the process at once: hosts send SIGTERM two
seconds after closing stdin, and tearing the interpreter down (every module the SDK loaded)
takes longer than that on a loaded machine, while by then the engine has closed its owner,
its jobs and its store, and nothing is left to run.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from shadowcode.engine.api import Access
    from shadowcode.mcp.server.handover import Handover
    from shadowcode.profile import Profile

__all__ = ["LAZY_SDK_ENV", "serve_stdio"]

LAZY_SDK_ENV = "SHADOWCODE_LAZY_SDK"
"""``0`` makes the SDK serve a stdio session from its first frame (:mod:`shadowcode.mcp.server.lazy_start`)."""


def serve_stdio(
    *,
    workspace: Path,
    profile: str | None,
    allow_write: bool,
    allow_approvals: bool,
    approve_in_host: bool = False,
    approval_page: bool = False,
) -> None:
    """Serve MCP on stdin/stdout until EOF, a transport limit, or SIGTERM/SIGINT, then exit with status 0.

    Args:
        workspace: the project as given; canonicalized here (ENG-02).
        profile: ``--profile`` name or None.
        allow_write: ``--allow-write`` (SRV-09).
        allow_approvals: ``--allow-approvals`` (SRV-11).
        approve_in_host: ``--approve-in-host``: ask the host about the connection's approvals (SRV-29).
        approval_page: ``--approval-page``: ask through the loopback approval page when the client
            declares URL-mode elicitation (SRV-30).

    Raises:
        ConfigError: bad workspace or profile (before anything is served).
        StoreError: the profile's store cannot be opened.
    """
    from shadowcode.engine.api import Access
    from shadowcode.mcp.server import READY_FD_ENV
    from shadowcode.profile import Profile

    ready_fd = os.environ.pop(READY_FD_ENV, None)  # not inherited by anything this process starts
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="shadowcode: %(levelname)s %(message)s")
    selected = Profile.select(profile)
    access = Access(allow_write, allow_approvals, approve_in_host)
    anyio.run(_serve, selected, workspace, access, approval_page, ready_fd)
    _exit_now()


def _exit_now() -> None:
    """Flush what Python buffers and end the process with status 0, skipping interpreter teardown (SRV-07)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(0)


def _say_ready(ready_fd: str | None, handover: bool) -> None:
    """Tell the stdio front that started this process (if one did) that it serves now (issue 15).

    ``ready handover`` when this process takes the client's stdin and stdout from the front
    (:mod:`shadowcode.mcp.server.handover`), plain ``ready`` when it does not.
    """
    if not ready_fd or not ready_fd.isdigit():
        return
    try:
        os.write(int(ready_fd), b"ready handover\n" if handover else b"ready\n")
        os.close(int(ready_fd))
    except OSError:
        pass


def _front_socket(ready_fd: str | None, read_fd: int) -> Handover | None:
    """The stdio front's socket, which may hand over the client's stdin and stdout; None without a front."""
    from shadowcode.mcp.server.handover import Handover

    if not ready_fd or not stat.S_ISSOCK(os.fstat(read_fd).st_mode):
        return None
    return Handover(read_fd)


async def _serve(profile: Profile, workspace: Path, access: Access, approval_page: bool, ready_fd: str | None) -> None:
    from shadowcode.engine import open_engine
    from shadowcode.engine.api import Caller, Empty
    from shadowcode.mcp.server.context import ServerContext
    from shadowcode.mcp.server.discovery import load_manifest
    from shadowcode.mcp.server.lazy_start import serve_when_needed, session_calls
    from shadowcode.mcp.server.stdio import claim_stdio, stdio_transport

    # Signals are received until the engine has closed, so a second SIGTERM queues instead of
    # cutting the cleanup short: PR_SET_PDEATHSIG fires again as each thread of a killed stdio
    # front exits, and hosts repeat their SIGTERM.
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with open_engine(profile) as api:
            project = await api.project_get(Empty(), Caller(project=workspace))
            ctx = ServerContext(api=api, root=Path(project.path), access=access, approval_page=approval_page)
            manifest = load_manifest() if os.environ.get(LAZY_SDK_ENV) != "0" else None
            calls, direct, lazy = session_calls(ctx, manifest)
            read_fd, write_fd = claim_stdio()
            handover = _front_socket(ready_fd, read_fd)
            _say_ready(ready_fd, handover is not None)
            reason = "connection closed"
            try:
                async with anyio.create_task_group() as tg:

                    async def stop_on_signal() -> None:
                        nonlocal reason
                        async for signum in signals:
                            reason = f"signal {signal.Signals(signum).name}"
                            tg.cancel_scope.cancel()
                            return

                    tg.start_soon(stop_on_signal)
                    async with stdio_transport(read_fd, write_fd, direct=direct, handover=handover, lazy=lazy) as (
                        read_stream,
                        write_stream,
                    ):
                        await serve_when_needed(ctx, calls, lazy, read_stream, write_stream)
                    tg.cancel_scope.cancel()
            finally:
                if handover is not None:
                    handover.close()
                if ctx.owner is not None:
                    with anyio.CancelScope(shield=True):
                        await api.close_owner(ctx.owner, reason)
