"""Live lists: ``subscriptions/listen``, the job watcher behind it and ``resources/templates/list`` (SRV-27, SRV-26).

Frame by frame against an in-process server (``tests/mcp/server/wire.py``), plus the watcher
and the stream set on their own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged

from shadowcode.engine import api as m
from shadowcode.engine.api import Access, Caller
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import TaskStatus
from shadowcode.limits import LISTEN_STREAMS_MAX, LISTEN_TASK_IDS_MAX
from shadowcode.mcp.server.app import build_server, build_session
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.job_watch import JobChange, JobWatcher
from shadowcode.mcp.server.live_lists import LiveLists
from tests.mcp.server.wire import TASKS, Wire, modern_meta, serve_wire
from tests.support.engine import trust_workspace, wait_approval, wait_status

pytestmark = [pytest.mark.anyio, pytest.mark.req("SRV-27")]

SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
PASS = [sys.executable, "-c", "pass"]
META = modern_meta()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve(engine: LocalEngine, root: Path, **kwargs: Any) -> Any:
    ctx = ServerContext(api=engine, root=root, access=Access(True, False))
    return build_session(ctx, **kwargs)[0] if kwargs else build_server(ctx)


async def delegate(wire: Wire) -> str:
    call = {"name": "shadow_test", "arguments": {"command": PASS}, "_meta": modern_meta()}
    return str((await wire.call("tools/call", call))["result"]["taskId"])


async def until(wire: Wire, method: str, predicate: Any = lambda _f: True, timeout: float = 10.0) -> dict[str, Any]:
    """Frames until a notification of ``method`` matching ``predicate``; returns it."""
    with anyio.fail_after(timeout):
        while True:
            frame = await wire.frame(timeout)
            if frame.get("method") == method and predicate(frame):
                return frame


async def test_resources_templates_list_answers_an_empty_list_with_cache_hints(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        found = (await wire.call("resources/templates/list", {"_meta": modern_meta()}))["result"]
    assert found["resourceTemplates"] == []
    assert found["ttlMs"] == 0 and found["cacheScope"] == "private"


async def test_the_acknowledgement_comes_first_and_every_frame_carries_the_subscription_id(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        listen_id = await wire.send(
            "subscriptions/listen",
            {"notifications": {"resourcesListChanged": True, "toolsListChanged": True}, "_meta": modern_meta()},
        )
        ack = await wire.frame()
        task_id = await delegate(wire)
        appeared = await until(wire, "notifications/resources/list_changed")
        approval = await wait_approval(engine.state.approvals, task_id)
        engine.state.approvals.resolve(approval.id, "approve", by="cli")
        ended = await until(wire, "notifications/resources/list_changed")
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"resourcesListChanged": True}  # the tool list never changes
    assert ack["params"]["_meta"] == {SUBSCRIPTION: listen_id}
    assert engine.state.records.get(task_id).status is TaskStatus.DONE  # the second change was its end
    for frame in (appeared, ended):
        assert frame["params"]["_meta"] == {SUBSCRIPTION: listen_id}
    streamed = [f for f in wire.frames if "id" not in f]
    assert {f["method"] for f in streamed} == {
        "notifications/subscriptions/acknowledged",
        "notifications/resources/list_changed",
    }  # nothing it did not ask for: no task status, no resources/updated


async def test_task_notifications_carry_the_full_task_as_tasks_get_answers_it(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        task_id = await delegate(wire)
        await wait_approval(engine.state.approvals, task_id)
        await wait_status(engine.state.records, task_id, (TaskStatus.WAITING,))
        listen_id = await wire.send(
            "subscriptions/listen",
            {"notifications": {"taskIds": [task_id, "task_0000000000000000"]}, "_meta": modern_meta()},
        )
        ack = await wire.frame()
        now = await wire.frame()
        polled = (await wire.call("tasks/get", {"taskId": task_id, "_meta": modern_meta()}))["result"]
        engine.state.approvals.resolve(engine.state.approvals.pending(task_id=task_id)[0].id, "approve", by="cli")
        done = await until(wire, "notifications/tasks", lambda f: f["params"]["status"] == "completed")
        final = (await wire.call("tasks/get", {"taskId": task_id, "_meta": modern_meta()}))["result"]
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}  # only its own task is agreed
    assert now["method"] == "notifications/tasks"
    strip = {"_meta", "resultType"}
    assert {k: v for k, v in now["params"].items() if k not in strip} == {
        k: v for k, v in polled.items() if k not in strip
    }
    assert now["params"]["_meta"] == {SUBSCRIPTION: listen_id}
    assert {k: v for k, v in done["params"].items() if k not in strip} == {
        k: v for k, v in final.items() if k not in strip
    }
    assert done["params"]["result"]["structuredContent"]["answer"] == "tests passed"


async def test_task_ids_need_the_extension_declared_and_a_bounded_list(engine: LocalEngine, project_dir: Path) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        undeclared = await wire.call(
            "subscriptions/listen", {"notifications": {"taskIds": ["task_1"]}, "_meta": modern_meta(tasks=False)}
        )
        too_many = [f"task_{n}" for n in range(LISTEN_TASK_IDS_MAX + 1)]
        over = await wire.call("subscriptions/listen", {"notifications": {"taskIds": too_many}, "_meta": META})
        wrong = await wire.call("subscriptions/listen", {"notifications": {"taskIds": "task_1"}, "_meta": META})
        at_limit = too_many[:LISTEN_TASK_IDS_MAX]
        listen_id = await wire.send("subscriptions/listen", {"notifications": {"taskIds": at_limit}, "_meta": META})
        ack = await wire.frame()
    assert undeclared["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert undeclared["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert over["error"]["code"] == types.INVALID_PARAMS and str(LISTEN_TASK_IDS_MAX) in over["error"]["message"]
    assert wrong["error"]["code"] == types.INVALID_PARAMS
    assert ack["params"]["_meta"] == {SUBSCRIPTION: listen_id} and ack["params"]["notifications"] == {"taskIds": []}


async def test_listen_is_not_served_on_a_legacy_connection(engine: LocalEngine, project_dir: Path) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        await wire.handshake()
        refused = await wire.call("subscriptions/listen", {"notifications": {"resourcesListChanged": True}})
    assert refused["error"]["code"] == types.METHOD_NOT_FOUND


async def test_a_stream_past_its_lifetime_ends_with_its_final_result(engine: LocalEngine, project_dir: Path) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root, listen_seconds=0.3)) as wire:
        listen_id = await wire.send("subscriptions/listen", {"notifications": {}, "_meta": modern_meta()})
        final = await wire.answer(listen_id)
    assert final["result"]["_meta"][SUBSCRIPTION] == listen_id
    assert final["result"]["resultType"] == "complete"
    assert wire.frames[0]["method"] == "notifications/subscriptions/acknowledged"


async def test_one_stream_past_the_limit_is_refused_before_any_acknowledgement(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    async with engine.running(), serve_wire(serve(engine, root)) as wire:
        for _ in range(LISTEN_STREAMS_MAX):
            await wire.send("subscriptions/listen", {"notifications": {}, "_meta": modern_meta()})
            assert (await wire.frame())["method"] == "notifications/subscriptions/acknowledged"
        refused = await wire.call("subscriptions/listen", {"notifications": {}, "_meta": modern_meta()})
    assert refused["error"]["code"] == types.INVALID_REQUEST
    assert len(wire.notifications("notifications/subscriptions/acknowledged")) == LISTEN_STREAMS_MAX


class _Session:
    """A listen request's session that never takes a frame after the acknowledgement (a client that stopped reading)."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.client_capabilities = None
        self.stuck = anyio.Event()

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        self.sent.append(notification)
        if len(self.sent) > 1:
            self.stuck.set()
            await anyio.sleep_forever()


class _Request:
    def __init__(self) -> None:
        self.request_id = 7
        self.params = {"_meta": modern_meta()}
        self.session = _Session()


async def test_a_stream_whose_client_stops_reading_is_ended_at_its_backlog() -> None:
    async def never(_task_id: str, _caps: Any) -> dict[str, Any]:
        raise AssertionError("no task asked")

    async def none() -> set[str]:
        return set()

    live = LiveLists(never, none, backlog_max=2)
    request = _Request()
    params = types.SubscriptionsListenRequestParams(notifications=types.SubscriptionFilter(resources_list_changed=True))
    async with anyio.create_task_group() as tg:
        tg.start_soon(live.listen, request, params)
        with anyio.fail_after(5):
            while live.open_streams == 0:
                await anyio.sleep(0.01)
            live.publish(ResourcesListChanged())  # taken, then its write never returns
            await request.session.stuck.wait()
            live.publish(ResourcesListChanged())
            live.publish(ResourcesListChanged())
            assert live.open_streams == 1
            live.publish(ResourcesListChanged())  # the third waiting event: past the backlog
        assert live.open_streams == 0
        tg.cancel_scope.cancel()


async def test_the_watcher_reads_nothing_until_a_job_exists_and_reports_each_change_once(
    engine: LocalEngine, project_dir: Path
) -> None:
    root = Path(trust_workspace(engine, project_dir).path)
    seen: list[JobChange] = []

    async def changed(changes: list[JobChange]) -> None:
        seen.extend(changes)

    ctx = ServerContext(api=engine, root=root, access=Access(True, False))
    watcher = JobWatcher(ctx, changed, interval_seconds=0.05)
    async with engine.running(), anyio.create_task_group() as tg:
        tg.start_soon(watcher.run)
        await anyio.sleep(0.3)
        assert watcher.reads == 0  # no owner: no engine calls
        job = await engine.test_submit(m.TestRequest(PASS), await ctx.owning_caller())
        watcher.kick()
        approval = await wait_approval(engine.state.approvals, job.job_id)
        engine.state.approvals.resolve(approval.id, "approve", by="cli")
        await wait_status(engine.state.records, job.job_id)
        with anyio.fail_after(10):
            while not any(change.ended for change in seen):
                await anyio.sleep(0.02)
        reads = watcher.reads
        await anyio.sleep(0.3)
        assert watcher.reads == reads  # every job finished: reading stopped
        tg.cancel_scope.cancel()
    assert seen[0].appeared and seen[0].job_id == job.job_id
    statuses = [change.status for change in seen]
    assert statuses[-1] is TaskStatus.DONE and len(statuses) == len(set(statuses))  # each change once
    assert sum(change.ended for change in seen) == 1


async def test_a_watcher_whose_engine_fails_keeps_going(engine: LocalEngine, project_dir: Path) -> None:
    root = Path(trust_workspace(engine, project_dir).path)

    class Failing:
        def __init__(self) -> None:
            self.calls = 0

        async def jobs(self, _request: Any, _caller: Caller) -> Any:
            from shadowcode.errors import ProtocolError

            self.calls += 1
            raise ProtocolError("the engine went away")

    failing = Failing()
    ctx = ServerContext(api=failing, root=root, access=Access())  # type: ignore[arg-type]
    ctx.owner = type("Owner", (), {"id": "own_x"})()

    async def changed(_changes: list[JobChange]) -> None:
        raise AssertionError("nothing changed")

    watcher = JobWatcher(ctx, changed, interval_seconds=0.01)
    assert await watcher.read_once() == []
    assert await watcher.read_once() == []
    assert failing.calls == 2


async def test_listen_refuses_a_request_without_an_id() -> None:
    async def never(_task_id: str, _caps: Any) -> dict[str, Any]:
        return {}

    async def none() -> set[str]:
        return set()

    request = _Request()
    request.request_id = None  # type: ignore[assignment]
    with pytest.raises(MCPError) as refused:
        await LiveLists(never, none).listen(
            request, types.SubscriptionsListenRequestParams(notifications=types.SubscriptionFilter())
        )
    assert refused.value.error.code == types.INVALID_REQUEST
