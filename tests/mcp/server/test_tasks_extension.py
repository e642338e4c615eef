"""The Tasks extension over delegated jobs, frame by frame against an in-process server (SRV-26).

A raw JSON-RPC client (``tests/mcp/server/wire.py``) sends exactly the ``_meta`` each case
needs: the extension declared or not, a 2026-07-28 envelope or a legacy handshake.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import TaskStatus
from shadowcode.limits import TASK_POLL_INTERVAL_SECONDS
from shadowcode.mcp.server.app import build_server, build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.input_broker import NoInputBroker
from tests.mcp.server.wire import MODERN, TASKS, Wire, modern_meta, serve_wire
from tests.support.engine import scripted_model, trust_workspace, wait_approval, wait_status

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-26")]

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TASK_KEYS = {"taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def connection(engine: LocalEngine, root: Path, **kwargs: Any) -> Any:
    ctx = ServerContext(api=engine, root=root, access=Access(True, False))
    return build_session(ctx, **kwargs)[0] if kwargs else build_server(ctx)


def test_call(argv: list[str], *, tasks: bool = True) -> dict[str, Any]:
    return {"name": "shadow_test", "arguments": {"command": argv}, "_meta": modern_meta(tasks=tasks)}


test_call.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


async def task_get(wire: Wire, task_id: str, *, tasks: bool = True) -> dict[str, Any]:
    return await wire.call("tasks/get", {"taskId": task_id, "_meta": modern_meta(tasks=tasks)})


async def project(engine: LocalEngine, folder: Path) -> Path:
    return Path(trust_workspace(engine, folder).path)


PASS = [sys.executable, "-c", "pass"]
FAIL = [sys.executable, "-c", "raise SystemExit(3)"]


async def test_discover_advertises_the_extension_on_2026_07_28_only(engine: LocalEngine, project_dir: Path) -> None:
    root = await project(engine, project_dir)
    async with engine.running():
        async with serve_wire(connection(engine, root)) as wire:
            found = await wire.call("server/discover", {"_meta": modern_meta(tasks=False)})
        async with serve_wire(connection(engine, root)) as wire:
            init = await wire.call(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
            )
    assert found["result"]["capabilities"]["extensions"] == {TASKS: {}}
    assert found["result"]["supportedVersions"] == [MODERN]
    assert "extensions" not in init["result"]["capabilities"]


async def test_a_declaring_shadow_test_call_answers_a_flat_create_task_result(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        created = (await wire.call("tools/call", test_call(PASS)))["result"]
        listed = await wire.call("tools/call", {"name": "shadow_jobs", "arguments": {}, "_meta": modern_meta()})
    assert created["resultType"] == "task"
    assert set(created) - {"_meta", "resultType"} == TASK_KEYS
    assert set(created["_meta"]) == {"io.modelcontextprotocol/serverInfo"}  # no request state, no related task
    assert created["status"] == "working" and created["statusMessage"]
    assert ISO.fullmatch(created["createdAt"]) and ISO.fullmatch(created["lastUpdatedAt"])
    assert created["ttlMs"] is None and created["pollIntervalMs"] == TASK_POLL_INTERVAL_SECONDS * 1000
    assert [job["id"] for job in listed["result"]["structuredContent"]["jobs"]] == [created["taskId"]]


async def test_a_client_that_did_not_declare_the_extension_keeps_the_job_id_answer(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        answer = (await wire.call("tools/call", test_call(PASS, tasks=False)))["result"]
        legacy = await wire_legacy_call(engine, root)
    assert answer["resultType"] == "complete" and answer["structuredContent"]["job_id"].startswith("task_")
    assert legacy["structuredContent"]["job_id"].startswith("task_") and "resultType" not in legacy


async def wire_legacy_call(engine: LocalEngine, root: Path) -> dict[str, Any]:
    """A shadow_test call on a 2025-11-25 connection whose client declared the extension anyway."""
    async with serve_wire(connection(engine, root)) as wire:
        await wire.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"extensions": {TASKS: {}}},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        await wire.notify("notifications/initialized")
        answer = await wire.call("tools/call", {"name": "shadow_test", "arguments": {"command": PASS}})
        refused = await wire.call("tasks/get", {"taskId": answer["result"]["structuredContent"]["job_id"]})
    assert refused["error"]["code"] == types.METHOD_NOT_FOUND  # the extension is 2026-07-28 only
    return answer["result"]  # type: ignore[no-any-return]


async def test_a_task_reads_working_with_its_approval_then_completed_with_the_jobs_report(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        approval = await wait_approval(engine.state.approvals, task_id)
        await wait_status(engine.state.records, task_id, (TaskStatus.WAITING,))
        waiting = (await task_get(wire, task_id))["result"]
        engine.state.approvals.resolve(approval.id, "approve", by="cli")
        await wait_status(engine.state.records, task_id)
        done = (await task_get(wire, task_id))["result"]
    assert waiting["status"] == "working" and waiting["resultType"] == "complete"
    assert approval.id in waiting["statusMessage"] and f"shadowcode approve {approval.id}" in waiting["statusMessage"]
    assert "inputRequests" not in waiting
    assert done["status"] == "completed" and done["taskId"] == task_id
    result = done["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["answer"] == "tests passed"
    assert result["structuredContent"]["status"] == "done" and result["structuredContent"]["job_id"] == task_id


async def test_a_failing_test_run_is_a_completed_task_whose_answer_says_so(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(FAIL)))["result"]["taskId"]
        approval = await wait_approval(engine.state.approvals, task_id)
        engine.state.approvals.resolve(approval.id, "approve", by="cli")
        await wait_status(engine.state.records, task_id)
        done = (await task_get(wire, task_id))["result"]
    assert done["status"] == "completed" and "error" not in done
    assert done["result"]["isError"] is False  # the job ran: a failing test run is its answer
    assert done["result"]["structuredContent"]["answer"] == "tests failed (exit 3)"


async def test_a_denied_approval_fails_the_job_and_the_task_result_is_an_error(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        approval = await wait_approval(engine.state.approvals, task_id)
        engine.state.approvals.resolve(approval.id, "deny", by="cli")
        await wait_status(engine.state.records, task_id)
        done = (await task_get(wire, task_id))["result"]
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert done["result"]["structuredContent"]["status"] == "failed"
    assert "denied" in done["result"]["structuredContent"]["error"]


async def test_an_interrupted_job_is_a_failed_task_with_an_internal_error(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        await wait_approval(engine.state.approvals, task_id)
        engine.state.records.set_status(task_id, TaskStatus.INTERRUPTED, error="the engine running its job stopped")
        found = (await task_get(wire, task_id))["result"]
        await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
    assert found["status"] == "failed" and "result" not in found
    assert found["error"] == {"code": types.INTERNAL_ERROR, "message": "the engine running its job stopped"}


async def test_tasks_methods_without_the_extension_declared_answer_32021(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        refusals = [
            await wire.call(method, {"taskId": task_id, **extra, "_meta": modern_meta(tasks=False)})
            for method, extra in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}}))
        ]
        still = (await task_get(wire, task_id))["result"]
        await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
    for refused in refusals:
        assert refused["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert still["status"] == "working"  # the refused cancel changed nothing


async def test_unknown_and_foreign_task_ids_are_invalid_params(engine: LocalEngine, project_dir: Path) -> None:
    root = await project(engine, project_dir)
    async with engine.running():
        async with serve_wire(connection(engine, root)) as mine:
            task_id = (await mine.call("tools/call", test_call(PASS)))["result"]["taskId"]
            async with serve_wire(connection(engine, root)) as other:
                unknown = await task_get(other, "task_0000000000000000")
                await other.call("tools/call", test_call(PASS))  # it has an owner of its own now
                answers = [
                    await task_get(other, task_id),
                    await other.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()}),
                    await other.call("tasks/update", {"taskId": task_id, "inputResponses": {}, "_meta": modern_meta()}),
                ]
            still = (await task_get(mine, task_id))["result"]
    assert unknown["error"]["code"] == types.INVALID_PARAMS
    assert [a["error"]["code"] for a in answers] == [types.INVALID_PARAMS] * 3
    assert still["status"] == "working"  # nobody else cancelled it


async def test_tasks_cancel_cancels_the_owned_job_and_is_idempotent(engine: LocalEngine, project_dir: Path) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        await wait_approval(engine.state.approvals, task_id)
        first = await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
        second = await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
        found = (await task_get(wire, task_id))["result"]
    for ack in (first, second):
        assert ack["result"]["resultType"] == "complete"
        assert set(ack["result"]) == {"resultType", "_meta"}
    assert found["status"] == "cancelled" and "cancelled by its owner" in found["statusMessage"]
    assert engine.state.records.get(task_id).status is TaskStatus.CANCELLED


async def test_tasks_update_with_the_default_broker_is_refused_and_changes_nothing(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        approval = await wait_approval(engine.state.approvals, task_id)
        answer = {"action": "accept", "content": {"approve": True}}
        refused = await wire.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {approval.id: answer}, "_meta": modern_meta()}
        )
        empty = await wire.call("tasks/update", {"taskId": task_id, "inputResponses": {}, "_meta": modern_meta()})
        await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
    assert refused["error"]["code"] == types.INVALID_PARAMS
    assert empty["result"]["resultType"] == "complete"
    assert engine.state.approvals.get(approval.id).status in ("pending", "expired")  # never approved


class AskingBroker:
    """A broker that asks one elicitation per waiting job and records what it hears."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, types.ClientCapabilities | None]] = []
        self.answers: list[tuple[str, dict[str, Any]]] = []
        self.changes: list[tuple[str, str]] = []

    async def input_requests(self, job_id: str, capabilities: types.ClientCapabilities | None) -> dict[str, Any]:
        self.asked.append((job_id, capabilities))
        request = {"mode": "form", "message": "run it?", "requestedSchema": {"type": "object", "properties": {}}}
        return {"approve-1": {"method": "elicitation/create", "params": request}}

    async def input_responses(self, job_id: str, responses: dict[str, Any]) -> None:
        if "approve-1" not in responses:
            raise MCPError(types.INVALID_PARAMS, "unknown key")
        self.answers.append((job_id, responses))

    async def job_changed(self, job_id: str, status: str) -> None:
        self.changes.append((job_id, status))


async def test_a_broker_with_input_requests_makes_the_waiting_task_input_required(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    broker = AskingBroker()
    async with engine.running(), serve_wire(connection(engine, root, broker=broker)) as wire:
        task_id = (await wire.call("tools/call", test_call(PASS)))["result"]["taskId"]
        await wait_approval(engine.state.approvals, task_id)
        await wait_status(engine.state.records, task_id, (TaskStatus.WAITING,))
        found = (await task_get(wire, task_id))["result"]
        meta = modern_meta(**{})
        meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = {"form": {}}
        updated = await wire.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"approve-1": {"action": "accept"}}, "_meta": meta}
        )
        refused = await wire.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"other": {}}, "_meta": modern_meta()}
        )
        with anyio.fail_after(10):
            while not any(status == "waiting" for _, status in broker.changes):
                await anyio.sleep(0.02)
        await wire.call("tasks/cancel", {"taskId": task_id, "_meta": modern_meta()})
    assert found["status"] == "input_required"
    assert found["inputRequests"]["approve-1"]["method"] == "elicitation/create"
    assert broker.asked and broker.asked[0][0] == task_id
    assert updated["result"]["resultType"] == "complete"
    assert broker.answers == [(task_id, {"approve-1": {"action": "accept"}})]
    assert refused["error"]["code"] == types.INVALID_PARAMS
    assert (task_id, "waiting") in broker.changes  # the watcher told the broker


async def test_the_default_broker_asks_nothing_and_refuses_every_key() -> None:
    broker = NoInputBroker()
    assert await broker.input_requests("task_1", None) == {}
    await broker.input_responses("task_1", {})
    with pytest.raises(MCPError) as refused:
        await broker.input_responses("task_1", {"k": {}})
    assert refused.value.error.code == types.INVALID_PARAMS and "'k'" in refused.value.error.message
    await broker.job_changed("task_1", "waiting")


async def test_a_declaring_shadow_run_call_is_a_task_that_completes_with_the_models_answer(
    engine: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    scripted_model(engine.state.profile, tmp_path / "script.json", [{"match": "", "turns": [{"content": "all done"}]}])
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        call = {"name": "shadow_run", "arguments": {"prompt": "look"}, "_meta": modern_meta()}
        created = (await wire.call("tools/call", call))["result"]
        await wait_status(engine.state.records, created["taskId"])
        done = (await task_get(wire, created["taskId"]))["result"]
    assert created["resultType"] == "task"
    assert done["status"] == "completed" and done["result"]["structuredContent"]["answer"] == "all done"
    assert done["result"]["content"][0]["type"] == "text" and "all done" in done["result"]["content"][0]["text"]


async def test_a_refused_delegation_is_an_error_result_and_creates_no_task(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = await project(engine, project_dir)
    async with engine.running(), serve_wire(connection(engine, root)) as wire:
        answer = (await wire.call("tools/call", test_call([])))["result"]
    assert answer["isError"] is True and answer["resultType"] == "complete" and "taskId" not in answer
