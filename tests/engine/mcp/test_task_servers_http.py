"""Build tasks calling real Streamable HTTP servers: the Python SDK server (stateful and stateless
JSON), ShadowCode's own authenticated gateway, and ``@modelcontextprotocol/server-everything``.

Covers CLI-04, CLI-11, CLI-16, CLI-18.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shadowcode.engine.api import Access, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.secrets import SecretStore
from tests.support.engine import cli_env, enable_server, trust_workspace, wait_for_sync
from tests.support.http_peer import Received, http_head, json_reply, peer, result
from tests.support.mcp_client import (
    PY,
    PYTHON_SDK_SERVER,
    REPO,
    approve_next,
    events_of,
    finished,
    project_definition,
    running,
    scripted,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

NODE_PROBES = REPO / "conformance/shadowcode_conformance/node_probes"
EVERYTHING = NODE_PROBES / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
TOKEN = "gw-bearer-6f0d2c9a8e7b4d1f-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def serving(argv: list[str], ready: str, *, env: dict[str, str], tmp: Path) -> Iterator[re.Match[str]]:
    """Run a server process in its own group until the block ends; yields the ready line's match."""
    out = tmp / f"server-{len(list(tmp.glob('server-*')))}.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True
        )
    try:

        def seen() -> re.Match[str] | None:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited {proc.returncode}: {out.read_text(encoding='utf-8')}")
            return re.search(ready, out.read_text(encoding="utf-8", errors="replace"))

        yield wait_for_sync(seen, timeout=30, what="the server's ready line")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _script(engine: LocalEngine, tmp: Path, server: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    turns: list[dict[str, Any]] = [
        {
            "content": f"step {i}",
            "tool_calls": [{"name": "mcp_call", "arguments": {"server": server, "tool": t, "arguments": a}}],
        }
        for i, (t, a) in enumerate(calls)
    ]
    scripted(engine, tmp, [{"match": "use the tools", "turns": [*turns, {"content": "finished"}]}])


async def _run(engine: LocalEngine, project: Project, approvals: int) -> tuple[str, list[dict[str, Any]]]:
    async with running(engine) as core:
        job = await core.task_submit(
            TaskRequest("use the tools", TaskMode.BUILD, PermissionLevel.WORKSPACE),
            Caller(project=project.path, access=Access(allow_write=True, allow_approvals=True)),
        )
        for _ in range(approvals):
            await approve_next(core, job.job_id)
        task = await finished(core, job.job_id)
        assert task.status == "done", task
        results = [json.loads(e.data["summary"]) for e in events_of(core, job.job_id) if e.kind == "tool.result"]
    return job.job_id, results


def _event(engine: LocalEngine, task_id: str, kind: str) -> dict[str, Any]:
    return next(e.data for e in events_of(engine, task_id) if e.kind == kind)


@pytest.mark.req("CLI-16", "CLI-11")
@pytest.mark.parametrize("mode", ["http", "http-stateless"])
async def test_a_build_task_calls_the_python_sdk_server_over_streamable_http(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, mode: str
) -> None:
    with serving([PY, str(PYTHON_SDK_SERVER), mode], r"PORT (\d+)", env=cli_env(tmp_path), tmp=tmp_path) as ready:
        project = trust_workspace(engine, project_dir)
        url = f"http://localhost:{ready.group(1)}/mcp"
        def_id = project_definition(project_dir, "web", {"name": "web", "url": url})
        enable_server(engine, project, def_id)
        _script(
            engine,
            tmp_path,
            "web",
            [
                ("add", {"a": 2, "b": 3}),
                ("region", {"region": "Zürich Süd", "note": "n"}),
                ("fail", {"message": "boom"}),
            ],
        )
        task_id, results = await _run(engine, project, 3)
    added, region, failed = results
    assert added["structured_content"] == {"total": 5} and added["is_error"] is False
    assert region["content"][0]["text"] == "Zürich Süd|n"
    assert failed["is_error"] is True and "boom" in failed["content"][0]["text"]
    connected = _event(engine, task_id, "mcp.connected")
    assert connected["protocol_version"] == "2026-07-28" and connected["pid"] is None
    assert _event(engine, task_id, "mcp.closed")["cleanup"] == "closed"


@pytest.mark.req("CLI-04", "CLI-11", "CLI-16")
async def test_a_build_task_calls_the_authenticated_gateway_with_the_stored_bearer(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway_home = tmp_path / "gateway-home"
    served = tmp_path / "served"
    served.mkdir()
    argv = [PY, "-m", "shadowcode", "--workspace", str(served), "mcp", "serve", "--http", "127.0.0.1:0"]
    env = cli_env(gateway_home) | {"GW_TOKEN": TOKEN}
    pattern = r"ready: (http://127\.0\.0\.1:\d+/mcp)"
    with serving([*argv, "--token-env", "GW_TOKEN"], pattern, env=env, tmp=tmp_path) as ready:
        monkeypatch.delenv("GW_SECRET", raising=False)
        SecretStore(engine.state.profile).set("GW_SECRET", TOKEN)
        project = trust_workspace(engine, project_dir)
        doc = {"name": "gw", "url": ready.group(1), "api_key_env": "GW_SECRET"}
        def_id = project_definition(project_dir, "gw", doc)
        enable_server(engine, project, def_id)
        _script(engine, tmp_path, "gw", [("shadow_jobs", {"action": "list"})])
        task_id, results = await _run(engine, project, 1)
    assert results[0]["is_error"] is False, results
    assert _event(engine, task_id, "mcp.connected")["tools"] >= 1
    for path in engine.state.profile.root.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            assert TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.req("CLI-11")
async def test_a_wrong_bearer_gets_a_clear_authentication_error_and_no_login(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    argv = [PY, "-m", "shadowcode", "--workspace", str(served), "mcp", "serve", "--http", "127.0.0.1:0"]
    env = cli_env(tmp_path / "gateway-home") | {"GW_TOKEN": TOKEN}
    pattern = r"ready: (http://127\.0\.0\.1:\d+/mcp)"
    with serving([*argv, "--token-env", "GW_TOKEN"], pattern, env=env, tmp=tmp_path) as ready:
        monkeypatch.setenv("GW_SECRET", "not-the-token-1234")
        project = trust_workspace(engine, project_dir)
        def_id = project_definition(
            project_dir, "gw", {"name": "gw", "url": ready.group(1), "api_key_env": "GW_SECRET"}
        )
        enable_server(engine, project, def_id)
        _script(engine, tmp_path, "gw", [("shadow_jobs", {"action": "list"})])
        task_id, _ = await _run(engine, project, 0)
    notes = [e.data["note"] for e in events_of(engine, task_id) if e.kind == "task.note"]
    assert any("authentication required: run `shadowcode mcp login" in n and "HTTP 401" in n for n in notes), notes
    assert not any("not-the-token" in n for n in notes)


@pytest.mark.req("CLI-16", "CLI-18")
@pytest.mark.skipif(shutil.which("node") is None or not EVERYTHING.is_file(), reason="needs node and the Node peers")
async def test_a_build_task_calls_server_everything_over_streamable_http(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    port = _free_port()
    env = {**os.environ, "PORT": str(port)}
    with serving(["node", str(EVERYTHING), "streamableHttp"], "listening on port", env=env, tmp=tmp_path):
        project = trust_workspace(engine, project_dir)
        def_id = project_definition(project_dir, "every", {"name": "every", "url": f"http://127.0.0.1:{port}/mcp"})
        enable_server(engine, project, def_id)
        _script(engine, tmp_path, "every", [("echo", {"message": "Grüße"}), ("get-sum", {"a": 2, "b": 40})])
        task_id, results = await _run(engine, project, 2)
    echoed, summed = results
    assert "Grüße" in echoed["content"][0]["text"] and echoed["is_error"] is False
    assert "42" in json.dumps(summed)
    assert _event(engine, task_id, "mcp.connected")["protocol_version"]
    assert _event(engine, task_id, "mcp.closed")["cleanup"] in ("session deleted", "closed")


@pytest.mark.req("CLI-04", "CLI-17")
async def test_a_reflected_credential_never_reaches_history_the_store_or_the_model(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with peer() as p:

        def reflect(req: Received) -> bytes:
            auth = req.headers["authorization"]
            if req.message["params"]["arguments"]["text"] == "error":
                error = {"code": -32000, "message": f"rejected {auth}", "data": {"seen": auth}}
                return json_reply(200, {"jsonrpc": "2.0", "id": req.message["id"], "error": error})
            if req.message["params"]["arguments"]["text"] == "status":
                return http_head(500, {"content-type": "text/plain"}) + f"denied {auth}".encode()
            doc = {"content": [{"type": "text", "text": f"you sent {auth}"}], "structuredContent": {"auth": auth}}
            return json_reply(200, result(req, doc))

        async def handler(req: Received, stream: Any) -> None:
            await stream.send(reflect(req))

        p.routes["tools/call"] = handler
        monkeypatch.setenv("PEER_TOKEN", TOKEN)
        project = trust_workspace(engine, project_dir)
        def_id = project_definition(project_dir, "peer", {"name": "peer", "url": p.url, "api_key_env": "PEER_TOKEN"})
        enable_server(engine, project, def_id)
        _script(engine, tmp_path, "peer", [("echo", {"text": t}) for t in ("result", "error", "status")])
        task_id, results = await _run(engine, project, 3)
    assert "[redacted]" in results[0]["content"][0]["text"] and results[0]["structured_content"] == {
        "auth": "Bearer [redacted]"
    }
    assert "[redacted]" in results[1]["error"]
    notes = json.dumps([e.data for e in events_of(engine, task_id)])
    assert "HTTP 500" in notes
    for path in engine.state.profile.root.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in p.received)


@pytest.mark.req("CLI-11", "CLI-04")
async def test_a_network_host_without_permission_and_a_missing_credential_are_noted_and_nothing_is_contacted(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[Any] = []
    real = socket.getaddrinfo

    def watched(host: Any, *args: Any, **kw: Any) -> Any:
        if "example" in str(host):
            looked_up.append(host)
        return real(host, *args, **kw)

    monkeypatch.delenv("ABSENT_TOKEN", raising=False)
    async with peer() as p:
        monkeypatch.setattr(socket, "getaddrinfo", watched)
        project = trust_workspace(engine, project_dir)
        remote = project_definition(project_dir, "remote", {"name": "remote", "url": "https://mcp.example.com/mcp"})
        local = project_definition(project_dir, "local", {"name": "local", "url": p.url, "api_key_env": "ABSENT_TOKEN"})
        enable_server(engine, project, remote)
        enable_server(engine, project, local)
        _script(engine, tmp_path, "remote", [])
        task_id, _ = await _run(engine, project, 0)
    notes = [e.data["note"] for e in events_of(engine, task_id) if e.kind == "task.note"]
    assert any(remote in n and "network permission" in n and "mcp.network_hosts" in n for n in notes), notes
    assert any(local in n and "ABSENT_TOKEN, which is neither set" in n for n in notes), notes
    assert p.received == [] and looked_up == []
