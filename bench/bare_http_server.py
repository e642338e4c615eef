"""The bare SDK baseline over HTTP: the ``echo`` server of ``bare_server.py`` behind uvicorn.

The ``mcp`` 2.3 SDK's lowlevel ``Server`` with one trivial tool, served by the SDK's own
``streamable_http_app(stateless_http=True, json_response=True)`` under uvicorn: the same
protocol mode as ShadowCode's gateway (no sessions, JSON answers), with none of its guards
(no token, no connection or rate limits). The benchmark drives it with the same client and
pacing as the gateway to show what the gateway adds on top of the SDK's HTTP support.

Run: ``python -m bench.bare_http_server [--port N]`` from the repository root. It binds
127.0.0.1 (port 0 picks a free one), writes ``bare http ready: http://127.0.0.1:PORT/mcp``
on stderr once it accepts requests, and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import Any, Final

import uvicorn

from bench.bare_server import build

__all__ = ["READY_PREFIX", "main"]

READY_PREFIX: Final = "bare http ready: "
"""Start of the stderr line that carries the server's URL once it accepts requests."""

_HOST: Final = "127.0.0.1"


class _Server(uvicorn.Server):
    """A uvicorn server that announces its URL once the application has started."""

    def __init__(self, config: uvicorn.Config, port: int) -> None:
        super().__init__(config)
        self._port = port

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        sys.stderr.write(f"{READY_PREFIX}http://{_HOST}:{self._port}/mcp\n")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> None:
    """Serve the ``echo`` tool over stateless Streamable HTTP on 127.0.0.1 until stopped.

    Args:
        argv: ``[--port N]`` (default 0: the system picks a free port).
    """
    parser = argparse.ArgumentParser(prog="python -m bench.bare_http_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    app: Any = build().streamable_http_app(stateless_http=True, json_response=True, host=_HOST)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((_HOST, args.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(_Server(config, port).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
