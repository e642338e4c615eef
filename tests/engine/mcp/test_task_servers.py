"""Build tasks calling external MCP servers through the engine, with real server processes.

Covers CLI-04, CLI-06, CLI-07, CLI-08, CLI-09, CLI-10, CLI-13, CLI-14, CLI-15, CLI-19.
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
from shadowcode.engine.api import Access, Caller, JobRef, TaskRecord, TaskRequest
from shadowcode.engine.childenv import child_env
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.task_servers import TaskServers
from shadowcode.engine.projects import Project
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.limits import MCP_INLINE_TOOLS_MAX, MCP_TOOL_ARGUMENTS_MAX_BYTES, MCP_TOOL_NAMES_PAGE_MAX
from shadowcode.mcp.client.definitions import ServerDefinition, StdioSpec
from shadowcode.profile import Profile
from shadowcode.secrets import SecretStore
from tests.support.engine import enable_server, trust_workspace
from tests.support.mcp_client import (
    PY,
    PYTHON_SDK_SERVER,
    approve_next,
    events_of,
    finished,
    group_gone,
    hostile_argv,
    pid_gone,
    project_definition,
    running,
    scripted,
    wait_for,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)
SECRET = "s3cr3t-value-7f1c2b9e"
LITERAL = "literal-value-0d4e8a"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"content": f"step {i}", "tool_calls": [{"name": n, "arguments": a}]} for i, (n, a) in enumerate(calls)
    ]
    return [*turns, {"content": "finished"}]


def _caller(project: Project) -> Caller:
    """The command line's view of ``project``: detached jobs, write and approval access."""
    return Caller(project=project.path, access=WRITE)


async def _submit(
    core: LocalEngine,
    project: Project,
    prompt: str,
    *,
    mode: TaskMode = TaskMode.BUILD,
    level: PermissionLevel = PermissionLevel.WORKSPACE,
) -> str:
    job = await core.task_submit(TaskRequest(prompt, mode, level), _caller(project))
    return job.job_id


def _results(core: LocalEngine, task_id: str) -> list[dict[str, Any]]:
    return [e.data for e in events_of(core, task_id) if e.kind == "tool.result"]


def _last_tool_message(engine: LocalEngine, task_id: str) -> str:
    """The last tool message the model was sent for the task (from the request log)."""
    log = [
        json.loads(line)
        for line in (engine.state.profile.root / "model-requests.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    last = [r["last_message"] for r in log if r["task_id"] == task_id][-1]
    assert last["role"] == "tool"
    return str(last["content"])


def _kinds(core: LocalEngine, task_id: str) -> list[str]:
    return [e.kind for e in events_of(core, task_id)]


@pytest.mark.req("CLI-07", "CLI-09", "CLI-19", "CLI-04", "CLI-16")
async def test_a_build_task_calls_python_sdk_tools_after_exact_approvals_and_cleans_up_first(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TEST_TOKEN", raising=False)
    SecretStore(engine.state.profile).set("MCP_TEST_TOKEN", SECRET)
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(
        project_dir,
        "pysdk",
        {
            "name": "pysdk",
            "command": [PY, str(PYTHON_SDK_SERVER)],
            "env_refs": {"FIXTURE_TOKEN": "MCP_TEST_TOKEN"},
            "env": {"FIXTURE_LITERAL": LITERAL},
        },
    )
    enable_server(engine, project, def_id)
    scripted(
        engine,
        tmp_path,
        [
            {
                "match": "use the tools",
                "turns": _calls(
                    ("mcp_tools", {"server": "pysdk"}),  # waits for the server the task started at boot
                    ("mcp_tools", {}),
                    ("mcp_tools", {"server": "pysdk", "tool": "add"}),
                    ("mcp__pysdk__env_value", {"name": "FIXTURE_TOKEN"}),
                    ("mcp_call", {"server": "pysdk", "tool": "add", "arguments": {"a": 2, "b": 3}}),
                    ("mcp_call", {"server": "pysdk", "tool": "fail", "arguments": {"message": "boom"}}),
                    ("mcp__pysdk__env_value", {"name": "FIXTURE_LITERAL"}),
                ),
            }
        ],
    )
    async with running(engine) as core:
        task_id = await _submit(core, project, "use the tools")
        seen = []
        for _ in range(4):
            seen.append((await approve_next(core, task_id)).action)
        task = await finished(core, task_id)
    assert task.status == "done", task
    assert seen == [
        {"server": def_id, "tool": "env_value", "arguments": {"name": "FIXTURE_TOKEN"}},
        {"server": def_id, "tool": "add", "arguments": {"a": 2, "b": 3}},
        {"server": def_id, "tool": "fail", "arguments": {"message": "boom"}},
        {"server": def_id, "tool": "env_value", "arguments": {"name": "FIXTURE_LITERAL"}},
    ]
    results = _results(core, task_id)
    assert [r["ok"] for r in results] == [True] * 7
    listing = json.loads(results[1]["summary"])
    assert listing["servers"][0]["id"] == def_id and listing["servers"][0]["tools"] == 7
    assert listing["servers"][0]["state"] == "connected"
    assert json.loads(results[0]["summary"])["tools"] == [
        "echo",
        "add",
        "env_value",
        "fail",
        "crash",
        "record",
        "region",
    ]
    schema = json.loads(results[2]["summary"])["tool"]["input_schema"]
    assert schema["required"] == ["a", "b"]
    assert "[redacted]" in results[3]["summary"] and SECRET not in results[3]["summary"]
    added = json.loads(results[4]["summary"])
    assert added["structured_content"] == {"total": 5} and added["is_error"] is False
    failed = json.loads(results[5]["summary"])
    assert failed["is_error"] is True and "boom" in failed["content"][0]["text"]
    assert LITERAL not in results[6]["summary"] and "[redacted]" in results[6]["summary"]
    kinds = _kinds(core, task_id)
    assert kinds.count("mcp.connected") == 1 and kinds.count("mcp.closed") == 1
    assert kinds.index("mcp.closed") < kinds.index("task.done")
    closed = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.closed")
    connected = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.connected")
    assert (
        closed["server"] == def_id
        and closed["hash"] == connected["hash"]
        and closed["cleanup"] in ("terminated", "killed")
    )
    assert group_gone(connected["pid"])
    assert connected["protocol_version"] == "2026-07-28"  # the stdio probe found the SDK server modern (CLI-16)
    for path in engine.state.profile.root.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            data = path.read_bytes()
            assert SECRET.encode() not in data and LITERAL.encode() not in data, path


@pytest.mark.req("CLI-08")
async def test_the_next_task_reuses_the_catalog_of_the_same_hash_and_connects_only_for_a_call(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    scripted(
        engine,
        tmp_path,
        [
            {"match": "first", "turns": _calls(("mcp_tools", {"server": "h"}))},
            {"match": "second", "turns": _calls(("mcp_tools", {"server": "h"}))},
            {"match": "third", "turns": _calls(("mcp__h__echo", {"text": "a"}), ("mcp__h__echo", {"text": "b"}))},
        ],
    )
    async with running(engine) as core:
        first = await _submit(core, project, "first")
        await finished(core, first)
        second = await _submit(core, project, "second")
        await finished(core, second)
        third = await _submit(core, project, "third")
        await approve_next(core, third)
        await approve_next(core, third)
        assert (await finished(core, third)).status == "done"
    assert _kinds(core, first).count("mcp.connected") == 1
    assert _kinds(core, second).count("mcp.connected") == 0
    assert json.loads(_results(core, second)[0]["summary"])["tools"][:2] == ["echo", "env"]
    assert _kinds(core, third).count("mcp.connected") == 1
    assert _kinds(core, third).count("mcp.call") == 2


@pytest.mark.req("CLI-09")
async def test_plan_review_read_only_and_untrusted_tasks_open_no_mcp_connection(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    scripted(
        engine,
        tmp_path,
        [{"match": "", "turns": _calls(("mcp_call", {"server": "h", "tool": "echo", "arguments": {"text": "x"}}))}],
    )
    async with running(engine) as core:
        jobs = [
            await _submit(core, project, "p", mode=TaskMode.PLAN),
            await _submit(core, project, "r", mode=TaskMode.REVIEW),
            await _submit(core, project, "b", level=PermissionLevel.READ_ONLY),
        ]
        untrusted = core.state.projects.untrust(project.path)
        jobs.append(await _submit(core, untrusted, "u"))
        for job in jobs:
            await finished(core, job)
    for job in jobs:
        assert not any(k.startswith("mcp.") for k in _kinds(core, job))
        assert "unknown or unavailable tool 'mcp_call'" in _last_tool_message(engine, job)


@pytest.mark.req("CLI-10")
async def test_a_definition_edited_between_approval_and_call_is_refused_and_nothing_is_sent(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    doc = {"name": "h", "command": hostile_argv()}
    def_id = project_definition(project_dir, "h", doc)
    enable_server(engine, project, def_id)
    scripted(engine, tmp_path, [{"match": "", "turns": _calls(("mcp__h__record", {"text": "sent"}))}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await wait_for(lambda: core.state.approvals.pending(task_id=task_id))
        project_definition(project_dir, "h", doc | {"command": hostile_argv("ignore_term")})
        await approve_next(core, task_id)
        assert (await finished(core, task_id)).status == "done"
    result = _results(core, task_id)[0]
    assert result["ok"] is False and "changed since this task started" in result["summary"]
    assert "mcp.call" not in _kinds(core, task_id)
    assert not (project_dir / "calls.log").exists()


@pytest.mark.req("CLI-06")
async def test_a_changed_definition_is_left_out_of_new_tasks_until_reviewed(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    project_definition(project_dir, "h", {"name": "h", "command": hostile_argv(), "description": "edited"})
    scripted(engine, tmp_path, [{"match": "", "turns": [{"content": "nothing to do"}]}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await finished(core, task_id)
    notes = [e.data["note"] for e in events_of(core, task_id) if e.kind == "task.note"]
    assert any(def_id in n and "changed" in n for n in notes)
    assert "mcp.connected" not in _kinds(core, task_id)


@pytest.mark.req("CLI-13")
async def test_arguments_at_512_kib_ask_for_approval_and_one_byte_more_is_refused_unsent(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    fill = MCP_TOOL_ARGUMENTS_MAX_BYTES - len('{"text":""}')
    results = []
    async with running(engine) as core:
        for size in (fill + 1, fill):  # one script each (the engine reopens a changed one): a script holds 1 MiB
            scripted(engine, tmp_path, [{"match": "", "turns": _calls(("mcp__h__echo", {"text": "x" * size}))}])
            task_id = await _submit(core, project, "x")
            if size == fill:
                approval = await approve_next(core, task_id)
                assert len(approval.action["arguments"]["text"]) == fill
            assert (await finished(core, task_id)).status == "done"
            results.append((_results(core, task_id)[0], _kinds(core, task_id).count("mcp.call")))
    (over, over_calls), (at, at_calls) = results
    assert over["ok"] is False and f"limit is {MCP_TOOL_ARGUMENTS_MAX_BYTES} bytes" in over["summary"]
    assert over_calls == 0
    assert at["ok"] is True and at_calls == 1


@pytest.mark.req("CLI-14")
async def test_unknown_tools_servers_and_invalid_arguments_are_refused_before_any_approval(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    scripted(
        engine,
        tmp_path,
        [
            {
                "match": "",
                "turns": _calls(
                    ("mcp_call", {"server": "h", "tool": "nope", "arguments": {}}),
                    ("mcp_call", {"server": "other", "tool": "echo", "arguments": {}}),
                    ("mcp_call", {"server": "h", "tool": "echo", "arguments": {"text": 5}}),
                    ("mcp_call", {"server": "h", "tool": "echo", "arguments": ["not", "an", "object"]}),
                    ("mcp__h__nope", {}),
                ),
            }
        ],
    )
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        assert (await finished(core, task_id)).status == "done"
        assert core.state.approvals.pending(task_id=task_id) == []
    results = _results(core, task_id)
    assert [r["ok"] for r in results] == [False] * 4
    assert "no tool 'nope'" in results[0]["summary"]
    assert "no enabled MCP server 'other'" in results[1]["summary"]
    assert "invalid arguments" in results[2]["summary"]
    assert "must be a JSON object" in results[3]["summary"]
    assert "unknown or unavailable tool 'mcp__h__nope'" in _last_tool_message(engine, task_id)
    assert not any(e.kind == "approval.waiting" for e in events_of(core, task_id))


@pytest.mark.req("CLI-15", "CLI-19")
async def test_a_server_that_crashes_mid_call_gives_an_error_is_not_retried_and_not_reconnected(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    scripted(
        engine, tmp_path, [{"match": "", "turns": _calls(("mcp__h__crash", {}), ("mcp__h__echo", {"text": "again"}))}]
    )
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await approve_next(core, task_id)
        assert (await finished(core, task_id)).status == "done"
    assert len([e for e in events_of(core, task_id) if e.kind == "approval.waiting"]) == 1
    crashed, again = _results(core, task_id)
    assert crashed["ok"] is False and "not retried" in crashed["summary"]
    assert again["ok"] is False and "start a new task" in again["summary"]
    kinds = _kinds(core, task_id)
    assert kinds.count("mcp.call") == 1 and kinds.count("mcp.connected") == 1 and kinds.count("mcp.closed") == 1
    closed = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.closed")
    assert closed["cleanup"] == "exited" and "closed its output" in closed["error"]


@pytest.mark.req("CLI-09")
async def test_a_denied_call_is_not_sent_and_the_task_goes_on(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    scripted(engine, tmp_path, [{"match": "", "turns": _calls(("mcp__h__record", {"text": "no"}))}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await approve_next(core, task_id, decision="deny")
        assert (await finished(core, task_id)).status == "done"
    assert "did not approve" in _results(core, task_id)[0]["summary"]
    assert not (project_dir / "calls.log").exists()


@pytest.mark.req("CLI-07")
@pytest.mark.parametrize(("count", "inline"), [(MCP_INLINE_TOOLS_MAX, True), (MCP_INLINE_TOOLS_MAX + 1, False)])
async def test_first_class_tools_are_offered_up_to_the_inline_limit_and_only_compact_tools_past_it(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, count: int, inline: bool
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv("many_tools", str(count))})
    enable_server(engine, project, def_id)
    scripted(
        engine,
        tmp_path,
        [{"match": "", "turns": _calls(("mcp__h__t0", {}), ("mcp_tools", {"server": "h", "page": 2}))}],
    )
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        if inline:
            await approve_next(core, task_id)
        assert (await finished(core, task_id)).status == "done"
    results = _results(core, task_id)
    assert len(results) == 2
    if inline:
        assert results[0]["ok"] is True
    else:  # named while the server was still starting: refused once its catalog is known (CW-10)
        assert results[0]["ok"] is False and "is not offered as a function" in results[0]["summary"]
    listed = json.loads(results[-1]["summary"])
    start = 2 * MCP_TOOL_NAMES_PAGE_MAX
    assert listed["tools"] == [f"t{i}" for i in range(start, min(count, start + MCP_TOOL_NAMES_PAGE_MAX))]
    assert listed["next_page"] is None


@pytest.mark.req("CLI-19")
async def test_cancelling_a_task_waiting_on_an_mcp_approval_stops_the_server_before_it_reports(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv("grandchild")})
    enable_server(engine, project, def_id)
    scripted(engine, tmp_path, [{"match": "", "turns": _calls(("mcp__h__echo", {"text": "x"}))}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await wait_for(lambda: core.state.approvals.pending(task_id=task_id))
        note = project_dir / "grandchild.pid"
        grandchild = int(await wait_for(lambda: note.is_file() and note.read_text(encoding="utf-8")))
        await core.job_cancel(JobRef(task_id), _caller(project))
        assert core.state.records.get(task_id).status == "cancelled"
        kinds = _kinds(core, task_id)
        assert kinds.index("mcp.closed") < kinds.index("task.cancelled")
    connected = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.connected")
    # The group was killed before the task was reported; the kernel may still be tearing its
    # members down on a loaded machine, so their end is waited for (bounded), not assumed.
    await wait_for(lambda: group_gone(connected["pid"]) and pid_gone(grandchild), seconds=10, what="the server's group")


@pytest.mark.req("CLI-13", "CLI-19")
async def test_a_server_that_never_answers_initialize_is_noted_and_the_task_still_finishes(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv("no_init"), "timeout_sec": 0.5})
    enable_server(engine, project, def_id)
    scripted(engine, tmp_path, [{"match": "", "turns": _calls(("mcp_tools", {"server": "h"}))}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        with anyio.fail_after(20):
            assert (await finished(core, task_id)).status == "done"
    notes = [e.data["note"] for e in events_of(core, task_id) if e.kind == "task.note"]
    assert any("did not finish initialization within 0.5 s" in n for n in notes)
    listed = _results(core, task_id)[0]["summary"]
    assert "is unavailable (the server did not finish initialization within 0.5 s)" in listed


@pytest.mark.req("CLI-15")
async def test_a_failed_connection_no_longer_serves_its_catalog_and_calls_say_it_is_unavailable(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()})
    enable_server(engine, project, def_id)
    turns = _calls(
        ("mcp_tools", {"server": "h"}),  # waits for the server the task started at boot
        ("mcp__h__crash", {}),
        ("mcp_tools", {}),
        ("mcp_tools", {"server": "h"}),
        ("mcp_tools", {"server": "h", "tool": "echo"}),
        ("mcp__h__echo", {"text": "again"}),
        ("mcp_call", {"server": "h", "tool": "echo", "arguments": {"text": "again"}}),
    )
    scripted(engine, tmp_path, [{"match": "", "turns": turns}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        await approve_next(core, task_id)
        assert (await finished(core, task_id)).status == "done"
    before, crashed, listing, names, schema, inline, compact = _results(core, task_id)
    assert len(json.loads(before["summary"])["tools"]) == 5
    assert crashed["ok"] is False
    (server,) = json.loads(listing["summary"])["servers"]
    assert server["tools"] is None and server["state"] == "failed"
    for result in (names, schema, inline, compact):
        assert result["ok"] is False and "is unavailable" in result["summary"], result
        assert set(json.loads(result["summary"])) == {"error"}  # no tool names, no schema
    assert "nothing was sent" in inline["summary"] and "start a new task" in inline["summary"]
    assert _kinds(core, task_id).count("mcp.call") == 1
    assert len([e for e in events_of(core, task_id) if e.kind == "approval.waiting"]) == 1


@dataclass(frozen=True)
class _Approval:
    """An approval record shaped as the store's frozen dataclasses are (attribute access)."""

    id: str
    status: str = "pending"


class _Fakes:
    """The engine collaborators a task needs, as plain objects: an event log, an approving gate, a catalog cache."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.statuses: list[str] = []
        self.approvals = 0

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        self.events.append((kind, data))
        return len(self.events)

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        self.statuses.append(status)

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> _Approval:
        self.approvals += 1
        return _Approval(id=f"appr_{self.approvals}")

    async def wait(self, approval_id: str) -> str:
        return "approved"

    def expire(self, task_id: str) -> None:
        pass

    def cached_tools(self, project: Path, definition: ServerDefinition) -> list[dict[str, Any]] | None:
        return None

    def save_tools(self, project: Path, definition: ServerDefinition, tools: list[dict[str, Any]]) -> None:
        pass


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


@pytest.mark.req("CLI-15", "CLI-07")
async def test_the_loop_stops_offering_a_failed_servers_first_class_tools(home: Path, project_dir: Path) -> None:
    definition = ServerDefinition(
        id="config:h", scope="config", path=None, sha256="0" * 64, spec=StdioSpec(name="h", command=hostile_argv())
    )
    fakes = _Fakes()
    model = _Model([("mcp_tools", {"server": "h"}), ("mcp__h__crash", {}), ("mcp__h__echo", {"text": "x"})])
    servers = TaskServers(
        snapshot=_Snapshot(project_dir, (definition,)),
        catalog=fakes,
        profile=Profile.select(),
        task_id="task_1",
        records=fakes,
    )
    env = TaskEnv(
        task_id="task_1",
        owner=None,
        project=project_dir,
        mode="build",
        level="workspace",
        records=fakes,
        approvals=fakes,
        checkpoints=cast(Any, None),
        processes=cast(Any, None),
        env=child_env(),
    )
    with anyio.fail_after(30):
        async with servers:
            env.mcp = servers
            assert await run_agent(env, model, "go", anyio.CapacityLimiter(1)) == "done"
    _, first, *later = model.offered  # the first request went out while the server was starting
    assert {"mcp_tools", "mcp_call", "mcp__h__crash", "mcp__h__echo"} <= set(first)
    for names in later:
        assert "mcp_tools" in names and not any(n.startswith("mcp__h__") for n in names)
    results = [data for kind, data in fakes.events if kind == "tool.result"]
    assert [r["ok"] for r in results] == [True, False, False]
    assert "is unavailable" in results[2]["summary"] and "nothing was sent" in results[2]["summary"]
    assert fakes.approvals == 1 and fakes.statuses == ["waiting", "running"]


async def _approve_until_finished(core: LocalEngine, task_id: str) -> TaskRecord:
    """Approve every approval the task asks for until it finishes; returns its record."""

    def approve_all() -> TaskRecord | None:
        for approval in core.state.approvals.pending(task_id=task_id):
            core.state.approvals.resolve(approval.id, "approve", by="test")
        task = core.state.records.get(task_id)
        return None if task.status.active else task

    return await wait_for(approve_all, seconds=30, what=f"task {task_id} to finish")


@pytest.mark.req("CLI-14", "CLI-04")
async def test_a_json_rpc_error_reply_reaches_the_model_redacted_and_the_next_call_uses_the_same_connection(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TEST_TOKEN", raising=False)
    SecretStore(engine.state.profile).set("MCP_TEST_TOKEN", SECRET)
    project = trust_workspace(engine, project_dir)
    def_id = project_definition(
        project_dir,
        "h",
        {"name": "h", "command": hostile_argv("rpc_error"), "env_refs": {"FIXTURE_TOKEN": "MCP_TEST_TOKEN"}},
    )
    enable_server(engine, project, def_id)
    turns = _calls(
        ("mcp__h__echo", {"text": "-32000"}),
        ("mcp_call", {"server": "h", "tool": "echo", "arguments": {"text": "-32001"}}),
        ("mcp__h__echo", {"text": "still here"}),
    )
    scripted(engine, tmp_path, [{"match": "", "turns": turns}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "x")
        assert (await _approve_until_finished(core, task_id)).status == "done"
        closed_message = _last_tool_message(engine, task_id)
    refused_32000, refused_32001, fine = _results(core, task_id)
    assert fine["ok"] is True and json.loads(fine["summary"])["content"][0]["text"] == "still here", fine
    assert "still here" in closed_message
    for result, code in ((refused_32000, -32000), (refused_32001, -32001)):
        doc = json.loads(result["summary"])
        assert f"JSON-RPC error {code}: refused with {code}: token [redacted]" in doc["error"], doc
        assert "within" not in doc["error"] and "closed" not in doc["error"]
        assert result["ok"] is False and doc["error_code"] == code, doc
    kinds = _kinds(core, task_id)
    assert kinds.count("mcp.connected") == 1 and kinds.count("mcp.call") == 3 and kinds.count("mcp.closed") == 1
    outcomes = [e.data for e in events_of(core, task_id) if e.kind == "mcp.result"]
    assert [o.get("error_code") for o in outcomes] == [-32000, -32001, None]
    closed = next(e.data for e in events_of(core, task_id) if e.kind == "mcp.closed")
    assert closed["error"] is None and closed["cleanup"] in ("terminated", "killed")
    for path in engine.state.profile.root.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.req("CLI-10")
async def test_an_mcp_action_makes_the_task_read_a_file_again_before_editing_it(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    (project_dir / "README.md").write_text("# Old title\n", encoding="utf-8")
    project = trust_workspace(engine, project_dir)
    enable_server(engine, project, project_definition(project_dir, "h", {"name": "h", "command": hostile_argv()}))
    edit = ("edit_file", {"path": "README.md", "old": "Old", "new": "New"})
    read = ("read_file", {"path": "README.md"})
    scripted(engine, tmp_path, [{"match": "", "turns": _calls(read, ("mcp_tools", {}), edit, read, edit)}])
    async with running(engine) as core:
        task_id = await _submit(core, project, "retitle")
        assert (await finished(core, task_id)).status == "done"
    results = _results(core, task_id)
    assert [r["ok"] for r in results] == [True, True, False, True, True]
    assert "read it again first" in results[2]["summary"]
    assert (project_dir / "README.md").read_text(encoding="utf-8") == "# New title\n"
