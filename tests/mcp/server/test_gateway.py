"""The HTTP gateway as a real process: start-up, both protocol eras, the shared owner, and stopping.

Each test starts ``python -m shadowcode --workspace P mcp serve --http 127.0.0.1:0 --token-env
GW_TOKEN`` under a private SHADOWCODE_HOME, reads the ready line from stderr and talks to it
with the SDK's Python client (bearer header) or raw sockets. Covers GW-01, GW-02, GW-03,
GW-05, GW-06, GW-08, SRV-21.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from shadowcode.limits import OWNER_JOBS_MAX
from shadowcode.profile import Profile
from tests.support.engine import FINISHED, cli, group_gone, scripted_model, sleeper_argv, wait_for_sync

pytestmark = pytest.mark.anyio

TOKEN = "gateway-test-token-0123456789abcdefABCDEF"
READY = re.compile(r"shadowcode gateway ready: (http://(127\.0\.0\.1|\[::1\]):(\d+)/mcp)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Gateway:
    """A gateway process; stdout is kept apart to prove it stays empty."""

    def __init__(self, home: Path, project: Path, *flags: str, bind: str = "127.0.0.1:0", env: dict[str, str]) -> None:
        self.stderr_path = home.parent / f"gateway-{time.monotonic_ns()}.stderr"
        self.stdout_path = self.stderr_path.with_suffix(".stdout")
        self._err = self.stderr_path.open("wb")
        self._out = self.stdout_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", "--http", bind,
             "--token-env", "GW_TOKEN", *flags],
            env={**os.environ, "SHADOWCODE_HOME": str(home), **env},
            stdin=subprocess.PIPE,
            stdout=self._out,
            stderr=self._err,
        )  # fmt: skip
        self.url = ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stdout(self) -> bytes:
        return self.stdout_path.read_bytes()

    def wait_ready(self) -> str:
        def ready() -> re.Match[str] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"the gateway exited {self.proc.returncode}: {self.stderr()}")
            return READY.search(self.stderr())

        found = wait_for_sync(ready, timeout=30, what="the gateway's ready line")
        self.url = found.group(1)
        return self.url

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=40)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self._err.close()
        self._out.close()


@contextmanager
def gateway(
    home: Path, project: Path, *flags: str, bind: str = "127.0.0.1:0", env: dict[str, str] | None = None
) -> Iterator[Gateway]:
    gw = Gateway(home, project, *flags, bind=bind, env={"GW_TOKEN": TOKEN} if env is None else env)
    try:
        gw.wait_ready()
        yield gw
    finally:
        gw.close()


@asynccontextmanager
async def client(url: str, mode: str = "auto") -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with http:
        with anyio.fail_after(30):
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
                yield c


async def call(c: Client, name: str, **arguments: Any) -> tuple[bool, Any]:
    result = await c.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    return (not result.is_error), (result.structured_content if not result.is_error else text)


async def job_status(url: str, job_id: str) -> str:
    async with client(url) as c:
        ok, doc = await call(c, "shadow_jobs", action="get", job_id=job_id)
        assert ok, doc
        return str(doc["job"]["status"])


async def wait_job(url: str, job_id: str, statuses: tuple[str, ...] = FINISHED, timeout: float = 30) -> str:
    with anyio.fail_after(timeout):
        while True:
            status = await job_status(url, job_id)
            if status in statuses:
                return status
            await anyio.sleep(0.1)


def _trusted(home: Path, project: Path) -> None:
    done = cli(home, "trust", "--level", "workspace", str(project), workspace=project)
    assert done.returncode == 0, done.stderr


# --- start-up and stopping --------------------------------------------------------------------


@pytest.mark.req("GW-02")
def test_ready_line_names_the_chosen_port_stdout_stays_empty_and_stdin_eof_is_ignored(
    home: Path, project_dir: Path
) -> None:
    with gateway(home, project_dir) as gw:
        port = int(gw.url.rsplit(":", 1)[1].split("/")[0])
        assert port > 0
        gw.proc.stdin.close()  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            assert sock.recv(100).startswith(b"HTTP/1.1 405")
        assert gw.proc.poll() is None
        assert gw.stop() == 0
        assert gw.stdout() == b""
        assert "stopped" in gw.stderr()


@pytest.mark.req("GW-02")
def test_sigint_stops_the_gateway(home: Path, project_dir: Path) -> None:
    with gateway(home, project_dir) as gw:
        assert gw.stop(signal.SIGINT) == 0


@pytest.mark.req("GW-01")
def test_the_token_can_come_from_the_profile_secret_store(home: Path, project_dir: Path) -> None:
    stored = subprocess.run(
        [sys.executable, "-m", "shadowcode", "secret", "set", "GW_TOKEN"],
        input=TOKEN,
        env={**os.environ, "SHADOWCODE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=30,
        encoding="utf-8",
    )
    assert stored.returncode == 0, stored.stderr
    env = {k: v for k, v in os.environ.items() if k != "GW_TOKEN"}
    with gateway(home, project_dir, env={}) as gw:
        assert env.get("GW_TOKEN") is None
        anyio.run(_lists_seventeen, gw.url, "auto")


async def _lists_seventeen(url: str, mode: str) -> str:
    async with client(url, mode) as c:
        tools = await c.list_tools()
        assert len(tools.tools) == 17
        return str(c.protocol_version) if hasattr(c, "protocol_version") else ""


@pytest.mark.req("GW-05")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_modern_and_legacy_clients_discover_the_seventeen_tools_without_a_session_id(
    home: Path, project_dir: Path, mode: str
) -> None:
    with gateway(home, project_dir) as gw:
        await _lists_seventeen(gw.url, mode)
        async with httpx2.AsyncClient(timeout=10) as http:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                    "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
            answer = await http.post(
                gw.url,
                json=init,
                headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"},
            )
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("application/json")
            assert "mcp-session-id" not in answer.headers
            assert answer.json()["result"]["protocolVersion"] == "2025-11-25"
        assert gw.stop() == 0


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.req("GW-03")
@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
async def test_the_ipv6_loopback_serves_like_127_0_0_1(home: Path, project_dir: Path) -> None:
    with gateway(home, project_dir, bind="[::1]:0") as gw:
        assert gw.url.startswith("http://[::1]:")
        await _lists_seventeen(gw.url, "auto")


# --- the shared owner ----------------------------------------------------------------------------


def _slow_model(home: Path, project: Path, tasks: list[dict[str, Any]]) -> Path:
    profile = Profile(name="default", root=home / "profiles" / "default")
    log = home.parent / "requests.jsonl"
    scripted_model(profile, home.parent / "script.json", tasks, request_log=log)
    _trusted(home, project)
    return log


@pytest.mark.req("GW-08", "GW-06")
async def test_a_closed_http_request_does_not_cancel_its_job_and_a_new_connection_sees_it(
    home: Path, project_dir: Path
) -> None:
    _slow_model(home, project_dir, [{"match": "", "turns": [{"content": "thinking", "delay_seconds": 1.0}]}])
    with gateway(home, project_dir) as gw:
        port = int(gw.url.rsplit(":", 1)[1].split("/")[0])
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": "shadow_run", "arguments": {"prompt": "take your time"}}})  # fmt: skip
        raw = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Mcp-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(raw)
        jobs: list[dict[str, Any]] = []
        with anyio.fail_after(30):
            while not jobs:
                async with client(gw.url) as c:
                    ok, doc = await call(c, "shadow_jobs", action="list")
                    assert ok, doc
                    jobs = doc["jobs"]
                await anyio.sleep(0.05)
        assert len(jobs) == 1
        assert await wait_job(gw.url, jobs[0]["id"] if "id" in jobs[0] else jobs[0]["job_id"]) == "done"
        async with client(gw.url, "legacy") as again:
            ok, doc = await call(again, "shadow_jobs", action="list")
            assert ok and len(doc["jobs"]) == 1
        assert gw.stop() == 0


@pytest.mark.req("GW-06")
async def test_the_gateway_takes_64_jobs_then_says_it_must_be_restarted(home: Path, project_dir: Path) -> None:
    _slow_model(home, project_dir, [{"match": "", "turns": [{"content": "done"}]}])
    with gateway(home, project_dir) as gw:
        async with client(gw.url) as c:
            for n in range(OWNER_JOBS_MAX):
                ok, doc = await call(c, "shadow_run", prompt=f"job {n}")
                assert ok, (n, doc)
            ok, text = await call(c, "shadow_run", prompt="one too many")
            assert not ok
            assert "restart the gateway" in text
        assert gw.stop() == 0


@pytest.mark.req("GW-02", "SRV-21")
async def test_sigterm_cancels_owned_jobs_and_stops_their_command_children(home: Path, project_dir: Path) -> None:
    pidfile = home.parent / "child.pid"
    turns = [
        {"tool_calls": [{"name": "run_command", "arguments": {"argv": sleeper_argv(pidfile)}}]},
        {"content": "done"},
    ]
    _slow_model(home, project_dir, [{"match": "", "turns": turns}])
    with gateway(home, project_dir, "--allow-write", "--allow-approvals") as gw:
        async with client(gw.url) as c:
            ok, doc = await call(c, "shadow_run", prompt="sleep a while", permission_level="elevated")
            assert ok, doc
            job_id = doc["job_id"]
            with anyio.fail_after(30):
                while True:
                    ok, state = await call(c, "shadow_jobs", action="get", job_id=job_id)
                    assert ok, state
                    if state["pending_approvals"]:
                        break
                    await anyio.sleep(0.1)
            approval = state["pending_approvals"][0]
            ok, doc = await call(c, "shadow_approve", approval_id=approval["id"], decision="approve")
            assert ok, doc
        pid = int(
            wait_for_sync(
                lambda: pidfile.exists() and pidfile.read_text(encoding="utf-8"), timeout=30, what="the child pid"
            )
        )
        assert gw.stop() == 0
        assert group_gone(pid)
        assert "cancelling its jobs" in gw.stderr()
