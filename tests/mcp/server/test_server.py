"""The native server's discovery, tools, resources and prompts, in process through the SDK client.

Covers SRV-03 (both eras), SRV-04, SRV-05, SRV-06, SRV-08, SRV-09, SRV-12, SRV-14, SRV-15, SRV-16,
SRV-17, SRV-18, SRV-19, SRV-20.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.verbs.inspection import MODEL_PROBE_PROMPT
from shadowcode.mcp.server.app import build_server
from shadowcode.mcp.server.context import ServerContext
from tests.support.engine import scripted_model
from tests.support.tool_results import assert_declared_output

pytestmark = pytest.mark.anyio

SEVENTEEN = {
    "shadow_status",
    "shadow_models",
    "shadow_sessions",
    "shadow_review",
    "shadow_tools",
    "shadow_understand",
    "shadow_doctor",
    "shadow_why",
    "shadow_memory",
    "shadow_sqlite",
    "shadow_goal",
    "shadow_run",
    "shadow_jobs",
    "shadow_approve",
    "shadow_test",
    "shadow_checkpoint",
    "shadow_rollback",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


Connect = Callable[..., Any]


@pytest.fixture
def connect(api: LocalEngine, project_dir: Path) -> Connect:
    @asynccontextmanager
    async def _connect(
        *, allow_write: bool = False, mode: str = "auto", trust: str | None = None
    ) -> AsyncIterator[Client]:
        root = api.state.project_at(project_dir).path
        if trust:
            api.state.projects.trust(root, trust)
        server = build_server(ServerContext(api=api, root=root, access=Access(allow_write=allow_write)))
        with anyio.fail_after(10):
            async with Client(server, mode=mode) as client:
                yield client

    return _connect


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, Any]:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return False, result.content[0].text  # type: ignore[union-attr]
    assert_declared_output(name, result.structured_content, result.content[0].text)  # type: ignore[union-attr]
    return True, result.structured_content


@pytest.mark.req("SRV-04", "SRV-03")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_exactly_seventeen_tools_with_schemas_and_annotations(connect: Connect, mode: str) -> None:
    async with connect(mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == SEVENTEEN and len(tools) == 17
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None
    by_name = {t.name: t for t in tools}
    assert by_name["shadow_sqlite"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert by_name["shadow_rollback"].annotations.destructive_hint is True  # type: ignore[union-attr]


@pytest.mark.req("SRV-05")
async def test_resources_are_the_four_and_plan_is_null_without_a_plan(connect: Connect) -> None:
    async with connect() as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert uris == {"shadow://project", "shadow://sessions", "shadow://memory", "shadow://plan"}
        plan = await client.read_resource("shadow://plan")
        project = await client.read_resource("shadow://project")
    assert plan.contents[0].text == "null"  # type: ignore[union-attr]
    assert json.loads(project.contents[0].text)["trusted"] is False  # type: ignore[union-attr]


@pytest.mark.req("SRV-06")
async def test_prompts_delegate_and_understand(connect: Connect, project_dir: Path) -> None:
    async with connect() as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        delegate = await client.get_prompt("delegate", {"task": "add a README"})
        understand = await client.get_prompt("understand", {})
    assert names == {"delegate", "understand"}
    assert "add a README" in delegate.messages[0].content.text  # type: ignore[union-attr]
    assert str(project_dir.resolve()) in understand.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.req("SRV-09")
async def test_server_is_read_only_by_default(connect: Connect) -> None:
    async with connect(trust="workspace") as client:
        ok, message = await call(client, "shadow_memory", action="append", text="note")
        assert not ok and "--allow-write" in message
        ok, _ = await call(client, "shadow_memory", action="read")
        assert ok


@pytest.mark.req("SRV-09")
async def test_allow_write_still_needs_a_trusted_project(connect: Connect) -> None:
    async with connect(allow_write=True) as client:
        ok, message = await call(client, "shadow_goal", action="create", title="x")
    assert not ok and "trusted project" in message


@pytest.mark.req("SRV-09")
async def test_allow_write_within_a_read_only_level_is_refused(connect: Connect) -> None:
    async with connect(allow_write=True, trust="read_only") as client:
        ok, message = await call(client, "shadow_memory", action="append", text="x")
    assert not ok and "read_only" in message


@pytest.mark.req("SRV-12")
async def test_memory_append_read_and_stale_replace(connect: Connect) -> None:
    async with connect(allow_write=True, trust="workspace") as client:
        ok, first = await call(client, "shadow_memory", action="append", text="remember this")
        assert ok and first["content"] == "remember this"
        await call(client, "shadow_memory", action="append", text="and this")
        ok, message = await call(client, "shadow_memory", action="replace", text="x", expected_hash=first["hash"])
        assert not ok and "stale" in message
        ok, note = await call(client, "shadow_memory", action="read")
    assert note["content"] == "remember this\n\nand this"


@pytest.mark.req("SRV-12")
async def test_task_note_for_another_projects_task_is_refused(
    connect: Connect, api: LocalEngine, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    root = api.state.project_at(other).path
    api.state.store.execute(
        "INSERT INTO tasks (id, project, mode, status, prompt, created_at, updated_at) VALUES "
        "('task_x', ?, 'build', 'done', 'p', 1, 1)",
        (str(root),),
    )
    async with connect(allow_write=True, trust="workspace") as client:
        ok, message = await call(client, "shadow_memory", action="append", scope="task", task_id="task_x", text="x")
    assert not ok and "no task" in message


@pytest.mark.req("SRV-14")
async def test_goal_create_advance_list(connect: Connect) -> None:
    async with connect(allow_write=True, trust="workspace") as client:
        ok, created = await call(client, "shadow_goal", action="create", title="ship")
        goal_id = created["goal"]["id"]
        ok, advanced = await call(client, "shadow_goal", action="advance", goal_id=goal_id, note="step", done=True)
        ok, listed = await call(client, "shadow_goal", action="list")
    assert advanced["goal"]["status"] == "done"
    assert [g["id"] for g in listed["goals"]] == [goal_id]


@pytest.mark.req("SRV-19", "SRV-20")
async def test_inspection_tools_answer_on_an_empty_history(connect: Connect) -> None:
    async with connect() as client:
        for name in (
            "shadow_status",
            "shadow_models",
            "shadow_sessions",
            "shadow_tools",
            "shadow_why",
            "shadow_checkpoint",
        ):
            ok, doc = await call(client, name)
            assert ok, (name, doc)
        ok, status = await call(client, "shadow_status")
        ok_models, models = await call(client, "shadow_models")
        ok_why, why = await call(client, "shadow_why", path="a.py")
    assert status["server"] == {"allow_write": False, "allow_approvals": False}
    assert models == {"models": [], "default": None}
    assert why == {"entries": []}


@pytest.mark.req("SRV-15", "SRV-16", "SRV-17", "SRV-18")
async def test_the_five_job_tools_answer_for_real(connect: Connect, api: LocalEngine, tmp_path: Path) -> None:
    scripted_model(api.state.profile, tmp_path / "script.json", [{"match": "", "turns": [{"content": "done"}]}])
    async with connect(allow_write=True, trust="workspace") as client:
        ok, run = await call(client, "shadow_run", prompt="look around")
        assert ok, run
        assert run["job_id"].startswith("task_") and run["status"] == "queued" and run["model"] == "scripted"
        ok, jobs = await call(client, "shadow_jobs")
        assert ok and [j["id"] for j in jobs["jobs"]] == [run["job_id"]]
        ok, test = await call(client, "shadow_test", command=["python3", "-c", "pass"])
        assert ok and test["status"] == "queued" and test["command"] == ["python3", "-c", "pass"]
        ok, message = await call(client, "shadow_approve", approval_id="appr_000000000000", decision="deny")
        assert not ok and "no approval 'appr_000000000000'" in message
        ok, message = await call(client, "shadow_rollback", task_id="task_0000000000000000", confirm=True)
        assert not ok and "no job" in message
        ok, cancelled = await call(client, "shadow_jobs", action="cancel", job_id=test["job_id"])
        assert ok and cancelled["job_id"] == test["job_id"]
    for text in (json.dumps(run), json.dumps(jobs), json.dumps(test), message):
        assert "not available" not in text


def requests_made(log: Path) -> list[dict[str, Any]]:
    """The lines of a model's request log (none when it was never written)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def probe_check(doctor: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in doctor["checks"] if c["name"] == "model_probe"), None)


@pytest.mark.req("SRV-19")
async def test_doctor_probe_sends_exactly_one_request_and_reports_the_reply(
    connect: Connect, api: LocalEngine, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    entries = [{"match": MODEL_PROBE_PROMPT, "turns": [{"content": "The model answers."}]}]
    scripted_model(api.state.profile, tmp_path / "script.json", entries, request_log=log)
    async with connect() as client:
        ok, doctor = await call(client, "shadow_doctor", probe_model=True)
    assert ok, doctor
    [request] = requests_made(log)
    assert request["last_message"] == {"role": "user", "content": MODEL_PROBE_PROMPT}
    check = probe_check(doctor)
    assert check is not None and check["status"] == "ok", check
    assert "scripted answered" in check["detail"] and "The model answers." in check["detail"]


@pytest.mark.req("SRV-19")
async def test_doctor_probe_of_a_failing_model_sends_one_request_and_reports_the_reason(
    connect: Connect, api: LocalEngine, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    entries = [{"match": "", "turns": [{"error": "the provider is down for maintenance"}]}]
    scripted_model(api.state.profile, tmp_path / "script.json", entries, request_log=log)
    async with connect() as client:
        ok, doctor = await call(client, "shadow_doctor", probe_model=True)
    assert ok, doctor
    assert len(requests_made(log)) == 1
    check = probe_check(doctor)
    assert check is not None and check["status"] == "fail", check
    assert "the provider is down for maintenance" in check["detail"]
    assert doctor["ok"] is False


@pytest.mark.req("SRV-19")
async def test_doctor_without_probe_model_asks_the_model_nothing(
    connect: Connect, api: LocalEngine, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    entries = [{"match": "", "turns": [{"content": "never asked"}]}]
    scripted_model(api.state.profile, tmp_path / "script.json", entries, request_log=log)
    async with connect() as client:
        ok, doctor = await call(client, "shadow_doctor")
        ok_false, doctor_false = await call(client, "shadow_doctor", probe_model=False)
    assert ok and ok_false
    assert requests_made(log) == []
    assert probe_check(doctor) is None and probe_check(doctor_false) is None
    assert any(c["name"] == "models" and c["status"] == "ok" for c in doctor["checks"])


@pytest.mark.req("SRV-04")
async def test_unknown_arguments_are_refused_with_a_clear_error(connect: Connect) -> None:
    async with connect() as client:
        ok, message = await call(client, "shadow_status", surprise=1)
    assert not ok and "surprise" in message


@pytest.mark.req("SRV-04", "SRV-14")
async def test_an_argument_the_action_needs_is_refused_before_the_engine(connect: Connect) -> None:
    async with connect(allow_write=True, trust="workspace") as client:
        ok, message = await call(client, "shadow_goal", action="advance", note="step")
        _, listed = await call(client, "shadow_goal", action="list")
    assert not ok and message.startswith("invalid arguments for shadow_goal:") and "needs goal_id" in message
    assert listed["goals"] == []


@pytest.mark.req("GW-05")
async def test_the_sdk_looks_up_one_tools_schema_and_wraps_requests_in_no_span(
    api: LocalEngine, project_dir: Path
) -> None:
    # Without the lookup the SDK runs the whole tools/list handler to check a 2026-07-28 HTTP
    # tools/call's Mcp-Param headers; without emptying the middleware every request gets an
    # OpenTelemetry span that nothing exports.
    ctx = ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access())
    server = build_server(ctx)
    assert server.middleware == []
    async with Client(server, mode="legacy") as client:
        listed = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    assert server.get_tool_input_schema is not None
    for name, schema in listed.items():
        assert server.get_tool_input_schema(name) == schema
    assert server.get_tool_input_schema("shadow_nothing") is None
