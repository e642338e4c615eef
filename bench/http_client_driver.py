"""ShadowCode's Streamable HTTP client timing sequential ``tools/call`` round trips.

Usage::

    python -m bench.http_client_driver --url URL --tool NAME --args JSON --calls N --warmup W
        [--window-requests K --window-ms MS] [--expect-text TEXT]

One connection (:class:`shadowcode.mcp.client.connection.Connection` with an
:class:`~shadowcode.mcp.client.endpoint.Endpoint`: the same discovery, fallback, limits and
framing a Build task uses) is opened, ``W`` untimed calls are made, then ``N`` timed ones,
one at a time; the connection is closed (its session deleted) before the report. Calls are
paced to ``K`` per ``MS`` sliding window, the wait before a call's clock starts, since the
client accepts at most 128 SSE events per connection in any one second (CLI-17). Prints one
JSON line: ``{"ok": true, "protocol_version", "latencies_ms": [...]}`` or
``{"ok": false, "error"}``; exit status 0 either way when the report was printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from typing import Any

import anyio

__all__ = ["main", "measure"]


class _Pacer:
    """At most ``count`` sends in any ``window_ms`` window (0: no pacing)."""

    def __init__(self, count: int, window_ms: int) -> None:
        self.count = count
        self.window = window_ms / 1000
        self.sent: deque[float] = deque()

    async def take(self) -> None:
        if self.count <= 0:
            return
        while True:
            now = time.monotonic()
            while self.sent and now - self.sent[0] >= self.window:
                self.sent.popleft()
            if len(self.sent) < self.count:
                break
            await anyio.sleep(self.window - (now - self.sent[0]) + 0.001)
        self.sent.append(time.monotonic())


async def measure(
    url: str, tool: str, arguments: dict[str, Any], calls: int, warmup: int, pacer: _Pacer, expect: str | None
) -> dict[str, Any]:
    """Open one connection, time ``calls`` sequential calls after ``warmup`` untimed ones.

    Returns:
        ``{"ok": True, "protocol_version": str, "latencies_ms": [float]}``.

    Raises:
        RuntimeError: a call failed, was an error, or lacked ``expect``.
        shadowcode.errors.ShadowcodeError: the connection failed.
    """
    from shadowcode.mcp.client.connection import Connection
    from shadowcode.mcp.client.endpoint import Endpoint

    conn = Connection(server_id="bench", endpoint=Endpoint(url), timeout_seconds=30.0)
    latencies: list[float] = []
    async with anyio.create_task_group() as tg:
        await conn.start(tg)
        try:
            for i in range(warmup + calls):
                await pacer.take()
                started = time.perf_counter()
                result = await conn.call(tool, arguments)
                elapsed = (time.perf_counter() - started) * 1000
                if result["is_error"] or (expect is not None and expect not in json.dumps(result)):
                    raise RuntimeError(f"call {i} answered {json.dumps(result)[:300]}")
                if i >= warmup:
                    latencies.append(elapsed)
        finally:
            conn.close()
            await conn.wait_closed()
    return {"ok": True, "protocol_version": conn.protocol_version, "cleanup": conn.cleanup, "latencies_ms": latencies}


def main(argv: list[str] | None = None) -> int:
    """Parse the options, measure, print the one-line JSON report."""
    p = argparse.ArgumentParser(prog="python -m bench.http_client_driver", description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--args", default="{}")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--window-requests", type=int, default=0)
    p.add_argument("--window-ms", type=int, default=1050)
    p.add_argument("--expect-text")
    a = p.parse_args(argv)
    pacer = _Pacer(a.window_requests, a.window_ms)
    try:
        report = anyio.run(measure, a.url, a.tool, json.loads(a.args), a.calls, a.warmup, pacer, a.expect_text)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the report's error
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
