"""The loopback OAuth fixture server for sign-in tests, and a stand-in for the user's browser."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

FIXTURE = Path(__file__).resolve().parents[2] / "conformance/shadowcode_conformance/fixtures/servers/oauth_server.py"
START_SECONDS = 60.0


@dataclass
class OAuthFixture:
    """A running ``conformance/shadowcode_conformance/fixtures/servers/oauth_server.py``."""

    origin: str
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return self.origin + "/mcp"

    def control(self, **changes: Any) -> dict[str, Any]:
        """Change the fixture (``issuer_path``, ``expires_in``, ``bad``) or, without changes, read its counts."""
        data = json.dumps(changes).encode() if changes else None
        request = urllib.request.Request(self.origin + "/control", data=data, method="POST" if changes else "GET")
        with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 - a loopback fixture
            return json.loads(reply.read())


@contextmanager
def oauth_fixture() -> Iterator[OAuthFixture]:
    """Start the fixture and stop it afterwards."""
    proc = subprocess.Popen([sys.executable, str(FIXTURE)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_SECONDS
        line = b""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith(b"PORT ") or not line:
                break
        found = re.match(rb"PORT (\d+)", line)
        assert found is not None, "the OAuth fixture did not start"
        running = OAuthFixture(f"http://127.0.0.1:{found.group(1).decode()}", proc)
        while True:  # the port is printed before uvicorn listens
            try:
                running.control()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the OAuth fixture did not listen"
                time.sleep(0.1)
        yield running
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def play_browser(authorization_url: str) -> int:
    """Do what a browser does: open the authorization URL and follow its redirect to the callback.

    Returns:
        The callback's HTTP status.
    """
    async with httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=30) as client:
        answer = await client.get(authorization_url)
        location = answer.headers.get("location")
        assert answer.status_code in (302, 303, 307) and location, answer.status_code
        return (await client.get(location)).status_code
