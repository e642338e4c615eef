"""Tool filters, per-server timeouts and required servers in Build tasks, with real server processes.

Covers CW-02, CW-07.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from shadowcode.agent.loop import run_agent
from shadowcode.agent.providers import ModelReply, ToolCall
from shadowcode.agent.toolbox import TaskEnv
from shadowcode.engine.api import Access, Caller, TaskRequest
from shadowcode.engine.childenv import child_env
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.task_servers import TaskServers
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.errors import UpstreamServerError
from shadowcode.mcp.client.definitions import ServerDefinition, StdioSpec
from shadowcode.profile import Profile
from tests.support.engine import enable_server, trust_workspace
from tests.support.mcp_client import (
    PY,
    SLOW_SDK_SERVER,
    events_of,
    finished,
    hostile_argv,
    project_definition,
    running,
    scripted,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class _Approval:
    id: str
    status: str = "pending"


class _Fakes:
    """An event log, an approving gate and a catalog cache holding ``cached`` for every definition."""

    def __init__(self, cached: list[dict[str, Any]] | None = None) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.approvals: list[dict[str, Any]] = []
        self.cached = cached

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        self.events.append((kind, data))
        return len(self.events)

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        pass

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> _Approval:
        self.approvals.append(action)
        return _Approval(id=f"appr_{len(self.approvals)}")

    async def wait(self, approval_id: str) -> str:
        return "approved"

    def expire(self, task_id: str) -> None:
        pass

    def cached_tools(self, project: Path, definition: ServerDefinition) -> list[dict[str, Any]] | None:
        return self.cached

    def save_tools(self, project: Path, definition: ServerDefinition, tools: list[dict[str, Any]]) -> None:
        pass

    def results(self) -> list[dict[str, Any]]:
        return [data for kind, data in self.events if kind == "tool.result"]


@dataclass(frozen=True)
class _Snapshot:
    project: Path
    servers: tuple[ServerDefinition, ...]


class _Model:
    """A provider replaying tool calls and recording the tool names it was offered on each turn."""

    name = "fake"

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.offered: list[list[str]] = []

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, task_id: str
    ) -> ModelReply:
        self.offered.append([t["function"]["name"] for t in tools])
        if len(self.offered) > len(self.calls):
            return ModelReply(content="done", tool_calls=(), finish_reason="stop")
        name, args = self.calls[len(self.offered) - 1]
        call = ToolCall(id=f"call_{len(self.offered)}", name=name, arguments=args, raw_arguments=json.dumps(args))
        return ModelReply(content=None, tool_calls=(call,), finish_reason="tool_calls")

    async def aclose(self) -> None:
        pass


def _definition(name: str, **fields: Any) -> ServerDefinition:
    spec = StdioSpec.model_validate({"name": name, **fields})
    return ServerDefinition(id=f"config:{name}", scope="config", path=None, sha256="0" * 64, spec=spec)


async def _run(
    project: Path, definitions: tuple[ServerDefinition, ...], model: _Model, fakes: _Fakes
) -> tuple[str | None, BaseException | None]:
    servers = TaskServers(
        snapshot=_Snapshot(project, definitions), catalog=fakes, profile=Profile.select(), task_id="t", records=fakes
    )
    env = TaskEnv(
        task_id="t",
        owner=None,
        project=project,
        mode="build",
        level="workspace",
        records=fakes,
        approvals=fakes,
        checkpoints=cast(Any, None),
        processes=cast(Any, None),
        env=child_env(),
    )
    with anyio.fail_after(60):
        async with servers:
            env.mcp = servers
            try:
                return await run_agent(env, model, "go", anyio.CapacityLimiter(1)), None
            except UpstreamServerError as exc:
                return None, exc


@pytest.mark.req("CW-02")
async def test_filtered_tools_never_reach_the_model_or_mcp_tools_and_a_call_of_one_sends_nothing(
    home: Path, project_dir: Path
) -> None:
    definition = _definition(
        "h", command=hostile_argv(), enabled_tools=["echo", "record", "slow", "gone"], disabled_tools=["record"]
    )
    fakes = _Fakes()
    model = _Model(
        [
            ("mcp_tools", {"server": "h"}),  # waits for the server the task started at boot
            ("mcp_tools", {}),
            ("mcp_tools", {"server": "h", "tool": "record"}),
            ("mcp_call", {"server": "h", "tool": "record", "arguments": {"text": "sent?"}}),
            ("mcp_call", {"server": "h", "tool": "env", "arguments": {}}),
            ("mcp__h__echo", {"text": "allowed"}),
        ]
    )
    answer, error = await _run(project_dir, (definition,), model, fakes)
    assert (answer, error) == ("done", None)
    offered = {n for n in model.offered[1] if n.startswith("mcp__")}
    assert offered == {"mcp__h__echo", "mcp__h__slow"}
    names, servers, schema, record, env, echo = fakes.results()
    assert json.loads(servers["summary"])["servers"][0]["tools"] == 2
    assert json.loads(names["summary"])["tools"] == ["echo", "slow"]
    assert not schema["ok"] and "has no tool 'record'" in schema["summary"]
    assert not record["ok"] and "hidden by its definition's enabled_tools or disabled_tools" in record["summary"]
    assert "nothing was sent" in record["summary"]
    assert not env["ok"] and "hidden" in env["summary"]
    assert echo["ok"] and json.loads(echo["summary"])["content"][0]["text"] == "allowed"
    assert [a["tool"] for a in fakes.approvals] == ["echo"]
    assert not (project_dir / "calls.log").exists()


@pytest.mark.req("CW-02")
async def test_a_cached_catalog_is_filtered_too(home: Path, project_dir: Path) -> None:
    cached = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "env", "record")]
    definition = _definition("h", command=hostile_argv(), disabled_tools=["env", "record"])
    model = _Model([("mcp_tools", {"server": "h"})])
    fakes = _Fakes(cached)
    assert await _run(project_dir, (definition,), model, fakes) == ("done", None)
    assert json.loads(fakes.results()[0]["summary"])["tools"] == ["echo"]
    assert not any(kind == "mcp.connected" for kind, _ in fakes.events), "a cached catalog starts nothing"


@pytest.mark.req("CW-07")
async def test_a_tool_sleeping_past_call_timeout_is_cancelled_and_the_next_call_uses_the_same_connection(
    home: Path, project_dir: Path
) -> None:
    definition = _definition("slow", command=[PY, str(SLOW_SDK_SERVER)], call_timeout=1, timeout_sec=60)
    fakes = _Fakes()
    model = _Model([("mcp__slow__sleep", {"seconds": 30}), ("mcp__slow__echo", {"text": "kept"})])
    assert await _run(project_dir, (definition,), model, fakes) == ("done", None)
    slept, echo = fakes.results()
    assert not slept["ok"] and "did not finish within 1.0 s" in slept["summary"] and "call_timeout" in slept["summary"]
    assert echo["ok"] and json.loads(echo["summary"])["content"][0]["text"] == "kept"
    assert [k for k, _ in fakes.events].count("mcp.connected") == 1
    log = (project_dir / "calls.log").read_text(encoding="utf-8").splitlines()
    assert log == ["sleep started", "sleep cancelled"]


@pytest.mark.req("CW-07")
async def test_a_required_server_that_cannot_connect_fails_before_any_model_request_and_others_stay_lazy(
    home: Path, project_dir: Path
) -> None:
    cached = [{"name": "echo", "inputSchema": {"type": "object"}}]
    lazy = _definition("lazy", command=hostile_argv())
    needed = _definition("needed", command=hostile_argv("no_init"), required=True, connect_timeout=0.5)
    model = _Model([("mcp_tools", {})])
    fakes = _Fakes(cached)
    answer, error = await _run(project_dir, (lazy, needed), model, fakes)
    assert answer is None and isinstance(error, UpstreamServerError)
    assert str(error).startswith("the required MCP server config:needed could not connect: ")
    assert "did not finish initialization within 0.5 s" in str(error)
    assert model.offered == [], "no model request was made"
    assert not any(kind == "mcp.connected" for kind, _ in fakes.events), "the other server was not started"


@pytest.mark.req("CW-07")
async def test_a_required_server_is_connected_at_start_even_with_a_cached_catalog(
    home: Path, project_dir: Path
) -> None:
    cached = [{"name": "echo", "inputSchema": {"type": "object"}}]
    needed = _definition("needed", command=hostile_argv(), required=True)
    fakes = _Fakes(cached)
    model = _Model([("mcp_tools", {"server": "needed"})])
    assert await _run(project_dir, (needed,), model, fakes) == ("done", None)
    assert [k for k, _ in fakes.events].count("mcp.connected") == 1
    assert "record" in json.loads(fakes.results()[0]["summary"])["tools"], "the live catalog, not the cached one"


@pytest.mark.req("CW-07")
async def test_a_build_task_with_a_required_server_that_cannot_start_fails_with_its_reason(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    missing = str(tmp_path / "no-such-server")
    def_id = project_definition(project_dir, "needed", {"name": "needed", "command": [missing], "required": True})
    enable_server(engine, project, def_id)
    scripted(engine, tmp_path, [{"match": "", "turns": [{"content": "finished"}]}])
    async with running(engine) as core:
        job = await core.task_submit(
            TaskRequest("x", TaskMode.BUILD, PermissionLevel.WORKSPACE),
            Caller(project=project.path, access=Access(allow_write=True, allow_approvals=True)),
        )
        task = await finished(core, job.job_id)
    assert task.status == "failed", task
    assert f"the required MCP server {def_id} could not connect" in (task.error or ""), task.error
    kinds = [e.kind for e in events_of(core, job.job_id)]
    assert "model.request" not in kinds, kinds
