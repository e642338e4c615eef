"""The five job tools through the SDK client, and a stdio connection's jobs ending with its stdin.

shadow_run, shadow_jobs, shadow_approve, shadow_test and shadow_rollback (with shadow_why and
shadow_checkpoint) run in process over a running temporary engine; the close tests drive a real
``mcp serve`` attached to a real ``shadowcode engine``.

Covers SRV-09, SRV-10, SRV-11, SRV-15, SRV-16, SRV-17, SRV-18, SRV-19, SRV-21, SRV-22, ENG-03,
ENG-06, ENG-07, ENG-08.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.limits import JOB_EVENTS_PAGE_MAX
from shadowcode.mcp.server.app import build_server
from shadowcode.mcp.server.context import ServerContext
from shadowcode.profile import Profile
from shadowcode.store import Store
from shadowcode.store.tasks import TaskRecord
from tests.support.engine import (
    FINISHED,
    cli,
    group_gone,
    headless_engine,
    scripted_model,
    sleeper_argv,
    wait_for,
    wait_for_sync,
    wait_pidfile,
)
from tests.support.process import ServerProcess
from tests.support.tool_results import assert_declared_output

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

DONE_TURN = {"content": "finished"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Harness:
    """A running temporary engine and a way to open MCP client connections to it."""

    engine: LocalEngine
    root: Path

    @property
    def core(self) -> EngineState:
        """The running engine's parts (records, approvals)."""
        return self.engine.state

    @asynccontextmanager
    async def connect(
        self, *, allow_write: bool = False, allow_approvals: bool = False, root: Path | None = None
    ) -> AsyncIterator[Client]:
        ctx = ServerContext(api=self.engine, root=root or self.root, access=Access(allow_write, allow_approvals))
        async with Client(build_server(ctx)) as client:
            yield client


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


@pytest.fixture
def model(engine: LocalEngine, tmp_path: Path, request_log: Path) -> Callable[[list[dict[str, Any]]], None]:
    def _configure(tasks: list[dict[str, Any]]) -> None:
        scripted_model(engine.state.profile, tmp_path / "script.json", tasks, request_log=request_log)

    return _configure


@asynccontextmanager
async def harness(engine: LocalEngine, project_dir: Path, level: str | None = "workspace") -> AsyncIterator[Harness]:
    root = trusted(engine, project_dir, level)
    with anyio.fail_after(60):
        async with engine.running():
            yield Harness(engine, root)


def trusted(engine: LocalEngine, folder: Path, level: str | None = "workspace") -> Path:
    """The canonical path of ``folder``, recorded and (unless ``level`` is None) trusted at ``level``."""
    root = engine.state.project_at(folder).path
    if level is not None:
        engine.state.projects.trust(root, level)
    return root


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(True, structured result) or (False, error text)."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        return False, text
    assert_declared_output(name, result.structured_content, text)
    return True, result.structured_content


async def ok(client: Client, name: str, **arguments: Any) -> Any:
    success, value = await call(client, name, **arguments)
    assert success, value
    return value


async def job_state(client: Client, job_id: str, statuses: tuple[str, ...], timeout: float = 30.0) -> dict[str, Any]:
    """Poll shadow_jobs get until the job's status is one of ``statuses``; returns the reply."""
    found: dict[str, Any] = {}
    with anyio.fail_after(timeout):
        while True:
            found = await ok(client, "shadow_jobs", action="get", job_id=job_id)
            if found["job"]["status"] in statuses:
                return found
            await anyio.sleep(0.02)


async def pending_approval(client: Client, job_id: str) -> dict[str, Any]:
    reply = await job_state(client, job_id, ("waiting",))
    assert len(reply["pending_approvals"]) == 1
    return reply["pending_approvals"][0]  # type: ignore[no-any-return]


def run_command_script(match: str, argv: list[str], cwd: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"argv": argv} | ({"cwd": cwd} if cwd else {})
    return {"match": match, "turns": [{"tool_calls": [{"name": "run_command", "arguments": arguments}]}, DONE_TURN]}


# -- shadow_run (SRV-15, SRV-10, SRV-09) ---------------------------------------------------------


@pytest.mark.req("SRV-15", "SRV-10")
async def test_shadow_run_answers_at_once_with_a_queued_read_only_job(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [{"content": "slow", "delay_seconds": 0.3}]}])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="look around")
        assert job["status"] == "queued" and job["permission_level"] == "read_only"
        listed = await ok(client, "shadow_jobs")
        assert [j["id"] for j in listed["jobs"]] == [job["job_id"]]
        assert listed["jobs"][0]["status"] in ("queued", "running")  # not a claim of completion
        done = await job_state(client, job["job_id"], ("done",))
    assert done["job"]["answer"] == "slow"


@pytest.mark.req("SRV-10")
async def test_shadow_run_elevated_on_a_workspace_project_runs_at_workspace_with_a_note(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="go", permission_level="elevated")
        status = await ok(client, "shadow_status")
    assert job["permission_level"] == "workspace" and job["requested_level"] == "elevated"
    assert any("lowered from elevated to workspace" in note for note in job["notes"])
    assert status["project"]["level"] == "workspace"


@pytest.mark.req("SRV-09")
async def test_shadow_run_above_read_only_on_a_read_only_server_is_refused(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect() as client:
        refused, message = await call(client, "shadow_run", prompt="go", permission_level="workspace")
        assert not refused and "--allow-write" in message
        job = await ok(client, "shadow_run", prompt="go")
        assert job["permission_level"] == "read_only"


@pytest.mark.req("SRV-10")
async def test_shadow_run_plan_task_that_calls_write_file_gets_a_tool_error_and_writes_nothing(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    (project_dir / "plan.md").write_text("keep\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "plan.md", "content": "changed"}}
    model([{"match": "", "turns": [{"tool_calls": [write]}, {"content": "1. do it"}]}])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="plan it", mode="plan", permission_level="workspace")
        done = await job_state(client, job["job_id"], ("done", "failed"))
        plan = await client.read_resource("shadow://plan")
    assert job["permission_level"] == "read_only"
    assert done["job"]["status"] == "done"
    assert (project_dir / "plan.md").read_text(encoding="utf-8") == "keep\n"
    assert "file.write" not in [e["kind"] for e in done["events"]]
    assert json.loads(plan.contents[0].text)["plan"] == "1. do it"  # type: ignore[union-attr]


# -- shadow_jobs (SRV-16) ------------------------------------------------------------------------


@pytest.mark.req("SRV-16")
async def test_shadow_jobs_pages_events_with_next_cursor_at_the_page_limit(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    (project_dir / "a.txt").write_text("a\n", encoding="utf-8")
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}
    model([{"match": "", "turns": [read] * 13 + [DONE_TURN]}])  # 13 * 4 events + the rest: past one page
    async with harness(engine, project_dir) as h, h.connect() as client:
        job = await ok(client, "shadow_run", prompt="read a lot")
        first = await job_state(client, job["job_id"], ("done",))
        second = await ok(client, "shadow_jobs", action="get", job_id=job["job_id"], cursor=str(first["next_cursor"]))
        every = h.core.records.events(job["job_id"], limit=1000)
    assert len(first["events"]) == JOB_EVENTS_PAGE_MAX
    assert first["next_cursor"] == first["events"][-1]["id"]
    assert 0 < len(second["events"]) < JOB_EVENTS_PAGE_MAX and second["next_cursor"] is None
    assert [e["id"] for e in first["events"] + second["events"]] == [e.id for e in every]
    assert second["events"][-1]["kind"] == "task.done"


@pytest.mark.req("SRV-16")
async def test_shadow_jobs_shows_only_this_connections_jobs(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect() as mine, h.connect() as theirs:
        job = await ok(mine, "shadow_run", prompt="go")
        assert (await ok(theirs, "shadow_jobs"))["jobs"] == []
        refused, message = await call(theirs, "shadow_jobs", action="get", job_id=job["job_id"])
        assert not refused and "no job" in message
        await ok(theirs, "shadow_run", prompt="go too")
        for action in ("get", "cancel"):
            refused, message = await call(theirs, "shadow_jobs", action=action, job_id=job["job_id"])
            assert not refused and "no job" in message
        refused, message = await call(mine, "shadow_jobs", action="get")
        assert not refused and "job_id" in message


@pytest.mark.req("SRV-16", "SRV-21")
async def test_shadow_jobs_cancel_stops_a_running_command_and_its_process_group(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, model: Callable[..., None]
) -> None:
    pidfile = tmp_path / "cmd.pid"
    model([run_command_script("", sleeper_argv(pidfile))])
    async with (
        harness(engine, project_dir) as h,
        h.connect(allow_write=True, allow_approvals=True) as client,
    ):
        job = await ok(client, "shadow_run", prompt="sleep", permission_level="workspace")
        approval = await pending_approval(client, job["job_id"])
        await ok(client, "shadow_approve", approval_id=approval["id"], decision="approve")
        pid = await wait_pidfile(pidfile)
        assert not group_gone(pid)
        with anyio.fail_after(5):
            cancelled = await ok(client, "shadow_jobs", action="cancel", job_id=job["job_id"])
        assert cancelled == {"job_id": job["job_id"], "status": "cancelled", "cancelled": True}
        assert group_gone(pid)
        again = await ok(client, "shadow_jobs", action="cancel", job_id=job["job_id"])
        shown = await ok(client, "shadow_jobs", action="get", job_id=job["job_id"])
    assert again["cancelled"] is False
    assert shown["job"]["error"] == "cancelled by its owner"  # why, not just "cancelled"
    assert shown["events"][-1]["kind"] == "task.cancelled"
    assert shown["events"][-1]["data"] == {"reason": "cancelled by its owner"}


# -- shadow_approve (SRV-11, ENG-07) -------------------------------------------------------------


@pytest.mark.req("SRV-11")
async def test_shadow_approve_without_the_flags_is_refused_and_says_how(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([run_command_script("", ["true"])])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="go", permission_level="workspace")
        approval = await pending_approval(client, job["job_id"])
        refused, message = await call(client, "shadow_approve", approval_id=approval["id"], decision="approve")
        assert not refused
        assert "--allow-write --allow-approvals" in message and f"shadowcode approve {approval['id']}" in message
        assert h.core.approvals.get(approval["id"]).status == "pending"


@pytest.mark.req("SRV-11")
async def test_shadow_approve_of_another_owners_approval_is_not_found_and_leaves_it_pending(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([run_command_script("park", ["true"]), {"match": "", "turns": [DONE_TURN]}])
    async with (
        harness(engine, project_dir) as h,
        h.connect(allow_write=True, allow_approvals=True) as owner,
        h.connect(allow_write=True, allow_approvals=True) as stranger,
    ):
        job = await ok(owner, "shadow_run", prompt="park", permission_level="workspace")
        approval = await pending_approval(owner, job["job_id"])
        for decision in ("approve", "deny"):  # before the stranger owns anything
            refused, message = await call(stranger, "shadow_approve", approval_id=approval["id"], decision=decision)
            assert not refused and "no approval" in message
        await ok(stranger, "shadow_run", prompt="something else")  # now the stranger is an owner too
        for decision in ("approve", "deny"):
            refused, message = await call(stranger, "shadow_approve", approval_id=approval["id"], decision=decision)
            assert not refused and "no approval" in message
        assert h.core.approvals.get(approval["id"]).status == "pending"
        assert (await ok(owner, "shadow_jobs", action="get", job_id=job["job_id"]))["job"]["status"] == "waiting"


@pytest.mark.req("SRV-11")
async def test_shadow_approve_of_an_id_that_does_not_exist_is_not_found(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True, allow_approvals=True) as client:
        await ok(client, "shadow_run", prompt="go")
        refused, message = await call(client, "shadow_approve", approval_id="appr_000000000000", decision="approve")
    assert not refused and "no approval 'appr_000000000000'" in message


@pytest.mark.req("SRV-11", "ENG-07")
async def test_an_owner_denies_its_approval_without_the_approval_flag_and_the_task_sees_it(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None], request_log: Path
) -> None:
    (project_dir / "sub").mkdir()
    argv = ["python3", "-c", "print('hi there')"]
    model([run_command_script("", argv, cwd="sub")])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="go", permission_level="workspace")
        approval = await pending_approval(client, job["job_id"])
        assert approval["action"] == {"argv": argv, "cwd": str(h.root / "sub")}  # the exact command line and cwd
        assert approval["kind"] == "command"
        denied = await ok(client, "shadow_approve", approval_id=approval["id"], decision="deny")
        assert denied["approval"]["status"] == "denied"
        done = await job_state(client, job["job_id"], ("done", "failed"))
        refused, message = await call(client, "shadow_approve", approval_id=approval["id"], decision="deny")
    assert done["job"]["status"] == "done" and done["pending_approvals"] == []
    assert "command.started" not in [e["kind"] for e in done["events"]]
    told = [json.loads(line) for line in request_log.read_text(encoding="utf-8").splitlines()][-1]["last_message"]
    assert "did not approve" in told["content"]
    assert not refused and "already denied" in message


# -- shadow_test (SRV-17) ------------------------------------------------------------------------


def make_project(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


MAKEFILE = "test:\n\t@echo make-test-output-line\n"
PACKAGE_JSON = json.dumps({"scripts": {"test": "node --test"}})


@pytest.mark.req("SRV-17")
async def test_shadow_test_runs_the_one_detected_command_after_approval_and_asks_no_model(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None], request_log: Path
) -> None:
    make_project(project_dir, {"Makefile": MAKEFILE})
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True, allow_approvals=True) as client:
        job = await ok(client, "shadow_test")
        assert job["status"] == "queued" and job["command"] == ["make", "test"]
        approval = await pending_approval(client, job["job_id"])
        assert approval["action"] == {"argv": ["make", "test"], "cwd": str(h.root)} and approval["kind"] == "test"
        await ok(client, "shadow_approve", approval_id=approval["id"], decision="approve")
        done = await job_state(client, job["job_id"], ("done", "failed"))
    results = [e["data"] for e in done["events"] if e["kind"] == "command.result"]
    assert done["job"]["status"] == "done" and done["job"]["answer"] == "tests passed"
    assert len(results) == 1 and results[0]["exit_code"] == 0
    assert "make-test-output-line" in results[0]["output"]
    assert not request_log.exists()  # a test job asks no model
    assert "model.request" not in [e["kind"] for e in done["events"]]


@pytest.mark.req("SRV-17")
async def test_shadow_test_reports_a_failing_exit_status(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None], request_log: Path
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    command = ["python3", "-c", "print('two failed'); raise SystemExit(3)"]
    async with harness(engine, project_dir) as h, h.connect(allow_write=True, allow_approvals=True) as client:
        job = await ok(client, "shadow_test", command=command)
        approval = await pending_approval(client, job["job_id"])
        assert approval["action"]["argv"] == command
        await ok(client, "shadow_approve", approval_id=approval["id"], decision="approve")
        done = await job_state(client, job["job_id"], ("done", "failed"))
    result = next(e["data"] for e in done["events"] if e["kind"] == "command.result")
    assert result["exit_code"] == 3 and "two failed" in result["output"]
    assert "exit 3" in done["job"]["answer"]
    assert not request_log.exists()


@pytest.mark.req("SRV-17")
async def test_shadow_test_with_several_candidates_lists_them_and_with_none_says_so(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, model: Callable[..., None]
) -> None:
    make_project(project_dir, {"Makefile": MAKEFILE, "package.json": PACKAGE_JSON})
    empty = tmp_path / "empty"
    empty.mkdir()
    empty_root = trusted(engine, empty)
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h:
        async with h.connect(allow_write=True, allow_approvals=True) as client:
            refused, message = await call(client, "shadow_test")
            assert not refused and "several" in message and "make test" in message and "npm test" in message
        async with h.connect(allow_write=True, allow_approvals=True, root=empty_root) as client:
            refused, message = await call(client, "shadow_test")
            assert not refused and "no test command detected" in message
        assert h.core.records.recent(10) == []


@pytest.mark.req("SRV-17", "SRV-09")
async def test_shadow_test_needs_write_access(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    make_project(project_dir, {"Makefile": MAKEFILE})
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect() as client:
        refused, message = await call(client, "shadow_test")
        assert not refused and "--allow-write" in message
        assert h.core.records.recent(10) == []


# -- shadow_rollback, shadow_why, shadow_checkpoint (SRV-18, SRV-19, ENG-06) ---------------------


EDIT = [
    {
        "match": "",
        "turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "by the task\n"}}]},
            DONE_TURN,
        ],
    }
]


@pytest.mark.req("SRV-18", "SRV-19", "ENG-06")
async def test_shadow_rollback_refusals_and_a_good_rollback_shown_by_shadow_why(
    engine: LocalEngine, project_dir: Path, tmp_path: Path, model: Callable[..., None]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    model(EDIT)
    async with harness(engine, project_dir) as h:
        async with h.connect(allow_write=True, root=trusted(engine, other)) as elsewhere:
            foreign = await ok(elsewhere, "shadow_run", prompt="edit", permission_level="workspace")
        async with h.connect(allow_write=True) as client:
            job = await ok(client, "shadow_run", prompt="edit", permission_level="workspace")
            await job_state(client, job["job_id"], ("done",))
            assert (project_dir / "a.txt").read_text(encoding="utf-8") == "by the task\n"

            refused, message = await call(client, "shadow_rollback", task_id=job["job_id"], confirm=False)
            assert not refused and "confirm" in message
            refused, message = await call(client, "shadow_rollback", task_id=foreign["job_id"], confirm=True)
            assert not refused and "no job" in message
            checkpoints = await ok(client, "shadow_checkpoint", task_id=job["job_id"])
            assert [c["paths"] for c in checkpoints["checkpoints"]] == [["a.txt"]]

            result = await ok(client, "shadow_rollback", task_id=job["job_id"], confirm=True)
            assert result == {"task_id": job["job_id"], "restored": ["a.txt"], "removed": []}
            why = await ok(client, "shadow_why", path="a.txt")
        async with h.connect() as read_only:
            refused, message = await call(read_only, "shadow_rollback", task_id=job["job_id"], confirm=True)
            assert not refused and "--allow-write" in message
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "before\n"
    assert [(e["kind"], e["task_id"]) for e in why["entries"]] == [
        ("rollback", job["job_id"]),
        ("write", job["job_id"]),
    ]


@pytest.mark.req("SRV-18", "ENG-06")
async def test_shadow_rollback_after_a_conflicting_edit_lists_the_path_and_changes_nothing(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    (project_dir / "a.txt").write_text("before\n", encoding="utf-8")
    model(EDIT)
    async with harness(engine, project_dir) as h, h.connect(allow_write=True) as client:
        job = await ok(client, "shadow_run", prompt="edit", permission_level="workspace")
        await job_state(client, job["job_id"], ("done",))
        (project_dir / "a.txt").write_text("edited by hand\n", encoding="utf-8")
        refused, message = await call(client, "shadow_rollback", task_id=job["job_id"], confirm=True)
        why = await ok(client, "shadow_why", task_id=job["job_id"])
    assert not refused and "a.txt" in message and "nothing was rolled back" in message
    assert (project_dir / "a.txt").read_text(encoding="utf-8") == "edited by hand\n"
    assert [e["kind"] for e in why["entries"]] == ["write"]


# -- a real stdio connection attached to the headless engine (SRV-21, SRV-22, ENG-03, ENG-08) ----


def rpc(server: ServerProcess, request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    server.send(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    )
    reply = server.read_until_response(request_id, timeout=30)
    result = reply["result"]
    assert not result.get("isError"), result
    assert_declared_output(name, result["structuredContent"], result["content"][0]["text"])
    return result["structuredContent"]  # type: ignore[no-any-return]


@pytest.mark.req("SRV-21", "SRV-22", "ENG-08")
def test_closing_stdin_cancels_the_connections_jobs_and_children_while_a_detached_job_runs_on(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    detached_pid, owned_pid = tmp_path / "detached.pid", tmp_path / "owned.pid"
    profile = Profile(name="default", root=home / "profiles" / "default")
    scripted_model(
        profile,
        tmp_path / "script.json",
        [
            run_command_script("detached", sleeper_argv(detached_pid)),
            run_command_script("owned", sleeper_argv(owned_pid)),
            run_command_script("park", ["true"]),
            {"match": "", "turns": [DONE_TURN]},
        ],
    )
    assert cli(home, "trust", "--level", "workspace", str(project)).returncode == 0
    with headless_engine(home) as engine:
        detached = cli(home, "--json", "run", "--detach", "--level", "workspace", "detached", workspace=project)
        assert detached.returncode == 0, detached.stderr
        detached_id = json.loads(detached.stdout)["job_id"]
        server = ServerProcess(project, home, "--allow-write", "--allow-approvals")
        try:
            server.initialize()
            status = rpc(server, 1, "shadow_status")
            # ENG-03: the server uses the running engine (relayed into it, or as a client of it), not its own
            assert status["engine"]["mode"] in ("attached", "headless")
            owned = rpc(server, 2, "shadow_run", prompt="owned", permission_level="workspace")["job_id"]

            def first_pending(job_id: str, request_id: int) -> str | None:
                found = rpc(server, request_id, "shadow_jobs", action="get", job_id=job_id)["pending_approvals"]
                return found[0]["id"] if found else None

            approval = wait_for_sync(lambda: first_pending(owned, 3), timeout=30, what="the owned job's approval")
            rpc(server, 4, "shadow_approve", approval_id=approval, decision="approve")
            parked = [rpc(server, 5 + n, "shadow_run", prompt="park", permission_level="workspace")["job_id"]
                      for n in range(2)]  # fmt: skip
            queued = rpc(server, 8, "shadow_run", prompt="queued one")["job_id"]

            def detached_approval() -> str | None:
                listed = json.loads(cli(home, "--json", "approvals").stdout)["approvals"]
                return next((a["id"] for a in listed if a["task_id"] == detached_id), None)

            assert cli(home, "approve", wait_for_sync(detached_approval, timeout=30, what="approval")).returncode == 0
            their_pid = int(
                wait_for_sync(lambda: detached_pid.exists() and detached_pid.read_text(encoding="utf-8"), what="pid")
            )
            my_pid = int(
                wait_for_sync(lambda: owned_pid.exists() and owned_pid.read_text(encoding="utf-8"), what="pid")
            )

            server.proc.stdin.close()  # type: ignore[union-attr]  # EOF: the connection is gone
            assert server.wait_exit(timeout=30) == 0
        finally:
            server.close()

        def statuses() -> dict[str, str]:
            return {task.id: task.status for task in tasks()}

        def tasks() -> list[TaskRecord]:
            store = Store(profile.db_path)
            try:
                return store.tasks.recent(100)
            finally:
                store.close()

        ours = (owned, *parked, queued)
        final = wait_for_sync(lambda: (s := statuses()) and all(s[t] in FINISHED for t in ours) and s, timeout=30,
                              what="the connection's jobs to finish")  # fmt: skip
        assert [final[t] for t in ours] == ["cancelled"] * len(ours), final
        errors = {task.id: task.error or "" for task in tasks()}
        assert all(errors[t].startswith("its owner closed (") for t in ours), errors  # the recorded reason
        assert errors[queued].endswith(" while it was queued"), errors[queued]  # behind TASKS_RUNNING_MAX jobs
        assert group_gone(my_pid)
        assert final[detached_id] == "running" and not group_gone(their_pid)
        assert engine.proc.poll() is None
        stopped = cli(home, "engine", "stop")
        assert stopped.returncode == 0, stopped.stderr
        engine.proc.wait(timeout=20)
    assert group_gone(their_pid)  # the engine's close stopped the detached job's command too


@pytest.mark.req("SRV-16")
async def test_shadow_jobs_reads_an_unusable_cursor_as_the_first_page(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([{"match": "", "turns": [DONE_TURN]}])
    async with harness(engine, project_dir) as h, h.connect() as client:
        job = await ok(client, "shadow_run", prompt="go")
        await wait_for(lambda: h.core.records.get(job["job_id"]).status == "done", what="the job")
        reply = await ok(client, "shadow_jobs", action="get", job_id=job["job_id"], cursor="not-a-number")
    assert reply["events"][0]["kind"] == "task.queued"  # an unusable cursor starts from the beginning


@pytest.mark.req("SRV-11", "ENG-07")
async def test_shadow_approve_of_an_approval_expired_with_its_cancelled_job_says_so_and_why(
    engine: LocalEngine, project_dir: Path, model: Callable[..., None]
) -> None:
    model([run_command_script("", ["python3", "-c", "print('never')"])])
    async with harness(engine, project_dir) as h, h.connect(allow_write=True, allow_approvals=True) as client:
        job = await ok(client, "shadow_run", prompt="go", permission_level="workspace")
        approval = await pending_approval(client, job["job_id"])
        await ok(client, "shadow_jobs", action="cancel", job_id=job["job_id"])
        refused, message = await call(client, "shadow_approve", approval_id=approval["id"], decision="approve")
        assert h.core.approvals.get(approval["id"]).reason == "its job was cancelled: cancelled by its owner"
    assert not refused and "already expired (its job was cancelled: cancelled by its owner)" in message


@pytest.mark.req("SRV-21", "SRV-22", "SRV-07")
def test_sigkill_of_the_stdio_front_while_a_command_runs_stops_the_server_the_command_and_the_jobs(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    owned_pid = tmp_path / "owned.pid"
    profile = Profile(name="default", root=home / "profiles" / "default")
    scripted_model(profile, tmp_path / "script.json", [run_command_script("", sleeper_argv(owned_pid))])
    assert cli(home, "trust", "--level", "workspace", str(project)).returncode == 0
    server = ServerProcess(project, home, "--allow-write", "--allow-approvals", front=True)
    try:
        server.initialize()
        (behind,) = wait_for_sync(server.child_pids, timeout=30, what="the server behind the front")
        owned = rpc(server, 2, "shadow_run", prompt="owned", permission_level="workspace")["job_id"]

        def first_pending() -> str | None:
            found = rpc(server, 3, "shadow_jobs", action="get", job_id=owned)["pending_approvals"]
            return found[0]["id"] if found else None

        rpc(server, 4, "shadow_approve", approval_id=wait_for_sync(first_pending, timeout=60, what="approval"),
            decision="approve")  # fmt: skip
        command = int(wait_for_sync(lambda: owned_pid.exists() and owned_pid.read_text(encoding="utf-8"), what="pid"))
        server.proc.kill()  # the front, relaying to its server, which runs the approved command
        server.proc.wait(timeout=30)
        server.proc.stderr.close()  # type: ignore[union-attr]  # as a host may: the server's notes now fail
        wait_for_sync(lambda: group_gone(command), timeout=30, what="the command's process group to end")
        wait_for_sync(lambda: not Path(f"/proc/{behind}").exists() or _zombie(behind), timeout=30, what="the server")
    finally:
        server.close()

    def status() -> str | None:
        store = Store(profile.db_path)
        try:
            return next(task.status for task in store.tasks.recent(10) if task.id == owned)
        finally:
            store.close()

    assert wait_for_sync(lambda: (s := status()) in FINISHED and s, timeout=30, what="the job to end") == "cancelled"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True
