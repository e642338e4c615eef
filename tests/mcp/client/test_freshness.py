"""Catalog freshness of one connection against real servers: list_changed, ttlMs, floods, failed revalidation.

Covers CW-05.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.errors import UpstreamServerError
from shadowcode.limits import (
    MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS,
    MCP_CATALOG_TTL_MAX_SECONDS,
    MCP_CATALOG_TTL_MIN_SECONDS,
)
from shadowcode.mcp.client.catalog import CatalogLimits, clamp_ttl
from shadowcode.mcp.client.connection import CatalogChanged, Connection, ConnectionState
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.reads import read_resource
from tests.support.mcp_client import PY, PYTHON_SDK_SERVER, REPO, wait_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-05"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

NODE_PROBES = REPO / "conformance/shadowcode_conformance/node_probes"
EVERYTHING = NODE_PROBES / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
YEAR_MS = 365 * 24 * 3600 * 1000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(*, argv: list[str] | None = None, url: str | None = None, **kw: Any) -> AsyncIterator[Connection]:
    """A READY connection to a stdio command or an HTTP URL; closed and cleaned up on exit."""
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            if url is not None:
                conn = Connection(server_id="test:f", endpoint=Endpoint(url), timeout_seconds=20, **kw)
            else:
                assert argv is not None
                conn = Connection(server_id="test:f", argv=argv, cwd=REPO, env=child_env(), timeout_seconds=20, **kw)
            await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()


@contextmanager
def http_fixture(tmp: Path, *extra: str) -> Iterator[str]:
    """The Python SDK fixture over Streamable HTTP (stateful) until the block ends; yields its URL."""
    log = tmp / f"http-{len(list(tmp.glob('http-*')))}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [PY, str(PYTHON_SDK_SERVER), "http", *extra],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            found = re.search(r"PORT (\d+)", log.read_text(encoding="utf-8", errors="replace"))
            if found or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert found, log.read_text(encoding="utf-8", errors="replace")
        while True:  # the port is bound before uvicorn listens on it
            try:
                socket.create_connection(("127.0.0.1", int(found.group(1))), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the fixture never listened"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{found.group(1)}/mcp"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def _changing(*extra: str) -> list[str]:
    # --legacy: the fixture refuses server/discover, so stdio stays on the 2025-11-25 wire, whose
    # change notices arrive on the connection itself.
    return [PY, str(PYTHON_SDK_SERVER), "--changing", "--legacy", *extra]


def _names(conn: Connection) -> list[str]:
    return [str(t["name"]) for t in conn.tools]


def test_ttl_ms_is_held_between_a_minute_and_a_day() -> None:
    limits = CatalogLimits()
    assert clamp_ttl(0, limits) == MCP_CATALOG_TTL_MIN_SECONDS == 60.0
    assert clamp_ttl(59_999, limits) == 60.0
    assert clamp_ttl(60_000, limits) == 60.0
    assert clamp_ttl(60_001, limits) == 60.001
    assert clamp_ttl(86_400_000, limits) == MCP_CATALOG_TTL_MAX_SECONDS == 86_400.0
    assert clamp_ttl(86_400_001, limits) == 86_400.0
    assert clamp_ttl(YEAR_MS, limits) == 86_400.0


@pytest.mark.parametrize(("ttl_ms", "held"), [(0, 60.0), (YEAR_MS, 86_400.0), (90_000, 90.0)])
async def test_a_servers_ttl_ms_of_zero_and_of_a_year_are_clamped(tmp_path: Path, ttl_ms: int, held: float) -> None:
    with http_fixture(tmp_path, "--ttl-ms", str(ttl_ms)) as url:
        async with connected(url=url) as conn:
            assert conn.ttl_seconds == held
            assert conn.revalidations == 0


async def test_a_list_without_ttl_ms_stays_valid_until_a_notice(tmp_path: Path) -> None:
    # The 2025-11-25 wire (stdio here) carries no ttlMs; the 2026-07-28 wire always does (0 by default).
    async with connected(argv=_changing()) as conn:
        assert conn.ttl_seconds is None
    with http_fixture(tmp_path) as url:
        async with connected(url=url) as conn:
            assert conn.ttl_seconds == MCP_CATALOG_TTL_MIN_SECONDS


async def test_an_expired_ttl_revalidates_in_place_and_sees_a_change(tmp_path: Path) -> None:
    # The minimum is lowered only to observe expiry in a test; the server sends ttlMs 0.
    limits = CatalogLimits(ttl_min_seconds=0.5, revalidate_interval_seconds=0.1)
    with http_fixture(tmp_path, "--ttl-ms", "0") as url:
        async with connected(url=url, catalog_limits=limits) as conn:
            assert conn.ttl_seconds == 0.5
            await wait_for(lambda: conn.revalidations >= 2, seconds=30, what="two expiries")
            assert conn.state is ConnectionState.READY and conn.tools_generation == 0


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_change_is_revalidated_in_place_and_a_call_resolved_before_is_refused(
    tmp_path: Path, transport: str
) -> None:
    # stdio (2025-11-25) sees the change through notifications/tools/list_changed; the 2026-07-28
    # wire delivers change notices only on a subscriptions/listen stream (not opened), so there
    # the server's ttlMs of 0, held at a minimum lowered for the test, finds the change.
    fast = CatalogLimits(ttl_min_seconds=0.5, revalidate_interval_seconds=0.1)
    with http_fixture(tmp_path, "--changing", "--ttl-ms", "0") if transport == "http" else nullcontext() as url:
        async with connected(url=url, catalog_limits=fast) if url else connected(argv=_changing()) as conn:
            before = conn.tools_generation
            assert "later" not in _names(conn)
            await conn.call("grow", {"name": "later"}, generation=before)
            await wait_for(lambda: conn.tools_generation == before + 1, what="the revalidated catalog")
            assert "later" in _names(conn) and conn.state is ConnectionState.READY
            with pytest.raises(CatalogChanged, match="the server's tools changed: retry the call"):
                await conn.call("echo", {"text": "stale"}, generation=before)
            now = conn.tools_generation
            assert (await conn.call("later", {"text": "new"}, generation=now))["content"][0]["text"] == "new"
            await conn.call("shrink", {"name": "later"}, generation=now)
            await wait_for(lambda: "later" not in _names(conn), what="the removal")
            with pytest.raises(CatalogChanged):
                await conn.call("later", {"text": "gone"}, generation=conn.tools_generation)


async def test_a_list_changed_flood_runs_at_most_one_revalidation_at_a_time_and_stays_bounded() -> None:
    async with connected(argv=_changing()) as conn:
        started = anyio.current_time()
        await conn.call("flood", {"count": 100}, generation=0)
        await conn.settled()
        elapsed = anyio.current_time() - started
        await anyio.sleep(0)  # a notice's wake-up is folded into the pending revalidation
        assert conn.state is ConnectionState.READY
        # Revalidations start at least MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS apart, so 100
        # notices cost a handful of listings, not 100.
        assert 1 <= conn.revalidations <= 2 + elapsed / MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS
        assert conn.revalidations < 10
        assert conn.tools_generation == 0


async def test_a_failed_revalidation_retires_the_connection_and_the_stale_catalog_is_not_served() -> None:
    async with connected(argv=_changing()) as conn:
        await conn.call("break_listing", {}, generation=0)
        await wait_for(lambda: conn.state is ConnectionState.FAILED, what="the retired connection")
        assert "revalidating the catalog failed" in (conn.error or "")
        with pytest.raises(UpstreamServerError, match="start a new task"):
            await conn.call("echo", {"text": "stale"}, generation=0)
        with pytest.raises(UpstreamServerError, match="start a new task"):
            await conn.fresh_tools()


@pytest.mark.req("CW-06")
async def test_server_everything_resource_list_changes_are_revalidated_in_place() -> None:
    if not EVERYTHING.exists():
        pytest.skip("server-everything is not installed in conformance/shadowcode_conformance/node_probes")
    async with connected(argv=["node", str(EVERYTHING), "stdio"]) as conn:
        first = [r["uri"] for r in await conn.listing("resources")]
        assert "demo://resource/session/fresh.gz" not in first
        data = "data:text/plain;base64,aGVsbG8="
        await conn.call("gzip-file-as-resource", {"name": "fresh.gz", "data": data, "outputType": "resourceLink"})

        async def relisted() -> bool:
            return "demo://resource/session/fresh.gz" in [r["uri"] for r in await conn.listing("resources")]

        with anyio.fail_after(20):
            while not await relisted():
                await anyio.sleep(0.05)
        assert conn.revalidations >= 1 and conn.state is ConnectionState.READY
        read = await read_resource(conn, "demo://resource/session/fresh.gz")
        assert read["contents"][0]["uri"] == "demo://resource/session/fresh.gz" and "blob" in read["contents"][0]
