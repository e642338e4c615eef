"""Build tasks and HTTP servers whose names resolve to private addresses (a resolver the test controls).

Covers CW-11.

The only address contacted is 127.0.0.2 (loopback), where a peer listens; 10.0.0.1 and
169.254.169.254 are answers of the controlled resolver, refused before anything is sent.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shadowcode.mcp.client.endpoint as endpoint_module
from shadowcode.engine.api import Access, Caller, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import PermissionLevel, TaskMode
from tests.support.engine import enable_server, trust_workspace
from tests.support.http_peer import peer
from tests.support.loopback_guard import loopback_only
from tests.support.mcp_client import approve_next, events_of, finished, project_definition, running

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-11"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="binds 127.0.0.2"),
]

NAMES = {"intranet.test": "10.0.0.1", "metadata.test": "169.254.169.254", "loopback.test": "127.0.0.2"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nothing but loopback is ever contacted, even when the rule under test is broken."""
    refused = loopback_only(monkeypatch)
    yield
    assert refused == [], f"a connection to {refused} was attempted"


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Answer look-ups of the names in NAMES with their address; any other name is an error."""
    asked: list[str] = []

    async def getaddrinfo(host: Any, port: Any, **kw: Any) -> list[Any]:
        asked.append(str(host))
        if str(host) not in NAMES:
            raise socket.gaierror(socket.EAI_NONAME, "not a name of this test")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (NAMES[str(host)], port))]

    monkeypatch.setattr(endpoint_module.anyio, "getaddrinfo", getaddrinfo)
    return asked


def _settings(engine: LocalEngine, tmp: Path, calls: list[tuple[str, dict[str, Any]]]) -> None:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": n, "arguments": a}]} for i, (n, a) in enumerate(calls)
    ]
    script = tmp / "model.json"
    tasks = [{"match": "", "turns": [*turns, {"content": "finished"}]}]
    script.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    profile = engine.state.profile
    profile.ensure()
    doc = {
        "models": [{"name": "scripted", "provider": "scripted", "script": str(script)}],
        "mcp": {"network_hosts": sorted(NAMES)},
    }
    profile.settings_path.write_text(json.dumps(doc), encoding="utf-8")


async def test_names_resolving_to_private_addresses_are_refused_and_the_opted_in_one_is_reached_pinned(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, resolver: list[str]
) -> None:
    async with peer(host="127.0.0.2") as p:
        project = trust_workspace(engine, project_dir)
        ids = {}
        for name, allow in (("intranet", False), ("metadata", False), ("loopback", False), ("allowed", True)):
            host = "loopback.test" if name == "allowed" else f"{name}.test"
            doc = {"name": name, "url": f"http://{host}:{p.port}/mcp", "lazy": True}
            ids[name] = project_definition(project_dir, name, doc | ({"allow_private_network": True} if allow else {}))
            enable_server(engine, project, ids[name])
        calls = [("mcp_tools", {"server": n}) for n in ("intranet", "metadata", "loopback")]
        calls.append(("mcp_call", {"server": "allowed", "tool": "echo", "arguments": {"text": "pinned"}}))
        _settings(engine, tmp_path, calls)
        async with running(engine, seconds=120) as core:
            request = TaskRequest("go", TaskMode.BUILD, PermissionLevel.WORKSPACE)
            job = await core.task_submit(request, Caller(project=project.path, access=Access(True, True)))
            await approve_next(core, job.job_id)
            assert (await finished(core, job.job_id, seconds=60)).status == "done"
        events = events_of(core, job.job_id)
    results = [e.data for e in events if e.kind == "tool.result"]
    assert [r["ok"] for r in results] == [False, False, False, True]
    for result, (host, address) in zip(results, NAMES.items(), strict=False):
        assert f"'{host}' resolves to {address}, which is not a public address" in result["summary"], result
        assert "allow_private_network: true" in result["summary"]
    assert "pinned" in results[3]["summary"]
    # Only the opted-in server was contacted, at the checked address, with its name in the Host header.
    assert p.received and {r.headers["host"] for r in p.received} == {f"loopback.test:{p.port}"}
    assert resolver.count("loopback.test") == 2, "one look-up per connection start: the refused one and the allowed one"
    connected = [e.data["server"] for e in events if e.kind == "mcp.connected"]
    assert connected == [ids["allowed"]]
