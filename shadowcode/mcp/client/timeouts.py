"""The three timeouts of one server definition, defaults applied (CW-07).

- ``connect``: starting the process or reaching the URL, initialization and the first tool
  listing together. ``connect_timeout``, else ``timeout_sec``, else MCP_TIMEOUT_DEFAULT_SECONDS;
  without ``connect_timeout``, a command launched through ``npx``, ``pnpx``, ``bunx`` or ``uvx``
  gets at least MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS (its first run downloads the package).
- ``call``: each ``tools/call`` and ``prompts/get``. ``call_timeout``, else ``timeout_sec``, else
  MCP_TIMEOUT_DEFAULT_SECONDS.
- ``read``: each other reply (one ``tools/list`` page, ``resources/read``, ...). ``read_timeout``,
  else ``timeout_sec``, else MCP_TIMEOUT_DEFAULT_SECONDS; never more than what is left of the
  connect budget during discovery.

A definition with ``timeout_sec`` only keeps its old meaning: that many seconds for
initialization, discovery and each call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from shadowcode.limits import MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS, MCP_TIMEOUT_DEFAULT_SECONDS
from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec

__all__ = ["LAUNCHERS", "Timeouts", "launched_through", "timeouts_of"]

LAUNCHERS: frozenset[str] = frozenset({"npx", "pnpx", "bunx", "uvx"})
"""Package launchers whose first run downloads the server (CW-07)."""


@dataclass(frozen=True)
class Timeouts:
    """Seconds for each kind of wait of one connection (CW-07).

    Attributes:
        connect: start or reach, initialize and list the tools, together.
        call: each ``tools/call`` and ``prompts/get``.
        read: each other reply.
    """

    connect: float
    call: float
    read: float

    @classmethod
    def single(cls, seconds: float) -> Timeouts:
        """The same seconds for everything (the meaning of ``timeout_sec`` alone)."""
        return cls(connect=seconds, call=seconds, read=seconds)


def launched_through(command: tuple[str, ...] | list[str]) -> str | None:
    """The launcher (``npx``, ``pnpx``, ``bunx``, ``uvx``) a command starts with, or None.

    The program's file name counts, whatever its folder, with a Windows ``.cmd``/``.exe`` suffix
    dropped.
    """
    if not command:
        return None
    name = PurePath(command[0]).name.lower()
    for suffix in (".cmd", ".exe"):
        name = name.removesuffix(suffix)
    return name if name in LAUNCHERS else None


def timeouts_of(spec: StdioSpec | HttpSpec) -> Timeouts:
    """The timeouts of a definition, defaults applied (CW-07)."""
    base = spec.timeout_sec or MCP_TIMEOUT_DEFAULT_SECONDS
    connect = spec.connect_timeout
    if connect is None:
        connect = base
        if isinstance(spec, StdioSpec) and launched_through(spec.command) is not None:
            connect = max(connect, MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS)
    return Timeouts(connect=connect, call=spec.call_timeout or base, read=spec.read_timeout or base)
