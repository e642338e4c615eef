"""``mcp serve --http``: start the authenticated loopback gateway for one fixed project (GW-01, GW-02, GW-06).

Start-up, in order: the bind address is checked (loopback IP literals only), the token is
looked up by name (environment, then the profile's secret store) and checked, the profile's
engine is attached or a temporary one opened, the listener is bound, and only then the ready
line ``shadowcode gateway ready: http://HOST:PORT/mcp`` goes to stderr. Stdout is pointed at
stderr so it stays empty whatever happens; stdin is never read, so its EOF changes nothing.

The whole gateway is one engine owner (``owner_kind="gateway"``) shared by every request:
the owner is opened by the first delegated job, survives across requests and reconnects, and
is closed when the gateway stops (SIGINT/SIGTERM), which cancels its unfinished jobs and waits
for their cleanup. A SIGKILL closes the owner's socket instead, with the same effect on the
engine's side (SRV-22).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from shadowcode.engine.api import Access, Caller
from shadowcode.errors import ConfigError, UsageError
from shadowcode.limits import (
    GATEWAY_LISTEN_SECONDS,
    GATEWAY_REQUEST_MAX_BYTES,
    GATEWAY_TOKEN_MAX_CHARS,
    GATEWAY_TOKEN_MIN_CHARS,
)

if TYPE_CHECKING:
    from shadowcode.mcp.server.streamable_http import GatewayLimits
    from shadowcode.profile import Profile

__all__ = ["BindAddress", "check_token", "parse_bind", "serve_http"]

logger = logging.getLogger(__name__)

_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class BindAddress:
    """A loopback IP literal and a port (GW-03).

    Attributes:
        host: the IP literal without brackets (``127.0.0.1``, ``::1``).
        port: 0 to let the system choose, else 1..65535.
    """

    host: str

    port: int

    def url(self, port: int | None = None) -> str:
        """The endpoint URL for ``port`` (default: this address's port)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/mcp"


def parse_bind(text: str) -> BindAddress:
    """Parse ``--http HOST:PORT``; only loopback IP literals are accepted (GW-03).

    ``HOST`` is an IPv4 address in 127.0.0.0/8 or ``[::1]`` (brackets required for IPv6).
    Host names, ``localhost`` included, are refused: a name may resolve anywhere.

    Args:
        text: the option's value.

    Returns:
        The address.

    Raises:
        UsageError: not ``HOST:PORT``, a port out of range, a host name, or a non-loopback IP.
    """
    host, sep, port = text.rpartition(":")
    if not sep or not _PORT.fullmatch(port) or int(port) > 65535:
        raise UsageError("--http takes IP:PORT, for example 127.0.0.1:8765 or [::1]:8765")
    bracketed = host.startswith("[") and host.endswith("]")
    literal = host[1:-1] if bracketed else host
    try:
        ip = ipaddress.ip_address(literal)
    except ValueError:
        raise UsageError("--http needs a loopback IP address (127.0.0.1 or [::1]); host names are refused") from None
    if ip.version == 6 and not bracketed:
        raise UsageError("--http: write an IPv6 address in brackets, as [::1]:PORT")
    if not ip.is_loopback or (ip.version == 6 and ip != ipaddress.IPv6Address("::1")):
        raise UsageError("--http only binds loopback addresses (127.0.0.0/8 or [::1]); this gateway is not remote")
    return BindAddress(str(ip), int(port))


def check_token(token: str | None, name: str) -> bytes:
    """Check the gateway's bearer token; the error never contains its value (GW-01, GW-03).

    Args:
        token: the value found for ``name``, or None.
        name: the variable or secret name, for the message.

    Returns:
        The token as ASCII bytes.

    Raises:
        ConfigError: no value, a length outside GATEWAY_TOKEN_MIN_CHARS..GATEWAY_TOKEN_MAX_CHARS,
            or a character outside the RFC 6750 token alphabet.
    """
    if not token:
        raise ConfigError(
            f"no token: set the environment variable {name} or store it with `shadowcode secret set {name}`"
        )
    if not GATEWAY_TOKEN_MIN_CHARS <= len(token) <= GATEWAY_TOKEN_MAX_CHARS:
        raise ConfigError(
            f"the token in {name} has {len(token)} characters; it needs "
            f"{GATEWAY_TOKEN_MIN_CHARS} to {GATEWAY_TOKEN_MAX_CHARS} (generate one, e.g. openssl rand -hex 32)"
        )
    if not _TOKEN68.fullmatch(token):
        raise ConfigError(
            f"the token in {name} holds characters a bearer token cannot carry; "
            "use letters, digits and - . _ ~ + / (e.g. openssl rand -hex 32)"
        )
    return token.encode("ascii")


def serve_http(
    *,
    workspace: Path,
    profile: str | None,
    bind: str,
    token_env: str,
    allow_write: bool,
    allow_approvals: bool,
    approve_in_host: bool = False,
    approval_page: bool = False,
    limits: GatewayLimits | None = None,
) -> None:
    """Run the gateway until SIGINT/SIGTERM (GW-01, GW-02).

    Args:
        workspace: the project as given; canonicalized here (ENG-02).
        profile: ``--profile`` name or None.
        bind: ``--http`` value, ``IP:PORT``.
        token_env: ``--token-env`` name: an environment variable, else a stored secret.
        allow_write: ``--allow-write`` (SRV-09).
        allow_approvals: ``--allow-approvals`` (SRV-11).
        approve_in_host: ``--approve-in-host`` (SRV-29): on the gateway, asked only through the
            Tasks extension's input requests of 2026-07-28 task connections.
        approval_page: ``--approval-page`` (SRV-30).
        limits: the HTTP limits; the contract's by default.

    Raises:
        UsageError: a bad bind address or token name.
        ConfigError: a missing or malformed token, a bad workspace or profile.
        ConfigError: also when the address cannot be bound (in use, not available).
    """
    from shadowcode.profile import Profile
    from shadowcode.secrets import resolve, valid_name

    address = parse_bind(bind)
    if not valid_name(token_env):
        raise UsageError("--token-env takes a variable name: letters, digits and '_', not starting with a digit")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="shadowcode: %(levelname)s %(message)s")
    selected = Profile.select(profile)
    token = check_token(resolve(selected, token_env), token_env)
    sys.stdout.flush()
    os.dup2(2, 1)  # stdout belongs to no one here: anything written there lands on stderr (GW-02)
    access = Access(allow_write, allow_approvals, approve_in_host)
    anyio.run(_serve, selected, workspace, access, approval_page, address, token, limits)


async def _serve(
    profile: Profile,
    workspace: Path,
    access: Access,
    approval_page: bool,
    address: BindAddress,
    token: bytes,
    limits: GatewayLimits | None,
) -> None:
    from shadowcode.engine import open_engine
    from shadowcode.engine.api import Empty
    from shadowcode.mcp.server.app import build_session
    from shadowcode.mcp.server.context import ServerContext
    from shadowcode.mcp.server.streamable_http import GatewayServer, build_mcp_app

    async with open_engine(profile) as api:
        project = await api.project_get(Empty(), Caller(project=workspace))
        ctx = ServerContext(
            api=api, root=Path(project.path), access=access, owner_kind="gateway", approval_page=approval_page
        )
        server, direct = build_session(ctx, listen_seconds=GATEWAY_LISTEN_SECONDS)
        body_max = GATEWAY_REQUEST_MAX_BYTES if limits is None else limits.body_max_bytes
        manager = build_mcp_app(server, body_max_bytes=body_max)
        # progress streams (SRV-28)
        stream_manager = build_mcp_app(server, body_max_bytes=body_max, json_response=False)
        reason = "gateway stopped"
        try:
            listener = await anyio.create_tcp_listener(local_host=address.host, local_port=address.port)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {address.url()}: {exc.strerror or exc}") from exc
        port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        gateway = GatewayServer(
            manager.handle_request,
            token=token,
            bound_host=address.host,
            port=port,
            limits=limits,
            direct=direct,
            stream_app=stream_manager.handle_request,
        )
        try:
            async with manager.run(), stream_manager.run(), anyio.create_task_group() as tg:

                async def stop_on_signal(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                    nonlocal reason
                    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                        task_status.started()
                        async for signum in signals:
                            reason = f"signal {signal.Signals(signum).name}"
                            tg.cancel_scope.cancel()
                            return

                await tg.start(stop_on_signal)
                tg.start_soon(gateway.serve, listener)
                sys.stderr.write(f"shadowcode gateway ready: {address.url(port)}\n")
                sys.stderr.flush()
        finally:
            with anyio.CancelScope(shield=True):
                await listener.aclose()
                if ctx.owner is not None:
                    sys.stderr.write(f"shadowcode gateway: closing its owner ({reason}); cancelling its jobs\n")
                    try:
                        await api.close_owner(ctx.owner, reason)
                    except Exception:
                        logger.exception("closing the gateway's owner failed")
                sys.stderr.write("shadowcode gateway: stopped\n")
