"""The toolbox: a command's working directory is project content, and the file tools leave the event loop free.

Covers ENG-03, ENG-04, ENG-06, SRV-08.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from shadowcode.agent import files
from shadowcode.agent.providers import ToolCall
from shadowcode.agent.toolbox import TaskEnv, dispatch
from shadowcode.errors import ToolError
from shadowcode.limits import SEARCH_FILES_MAX
from shadowcode.project.files import canonical_root

pytestmark = pytest.mark.anyio

TASK = "task_toolbox"


class _Fakes:
    """The task's event log and an approval gate that records each request and denies it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.requested: list[tuple[str, dict[str, Any]]] = []

    def event(self, task_id: str, kind: str, data: dict[str, Any]) -> int:
        self.events.append((kind, data))
        return len(self.events)

    def set_status(self, task_id: str, status: str, *, answer: str | None = None, error: str | None = None) -> None:
        pass

    def request(self, task_id: str, owner: str | None, kind: str, action: dict[str, Any]) -> dict[str, Any]:
        self.requested.append((kind, action))
        return {"id": f"appr_{len(self.requested)}"}

    async def wait(self, approval_id: str) -> str:
        return "denied"

    def expire(self, task_id: str) -> None:
        pass


class _WriteLog:
    """Records each write before it lands; ``hold`` keeps a write waiting until it is set."""

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.writes: list[tuple[str, bytes | None]] = []
        self.entered = threading.Event()
        self.hold = hold

    def record_write(self, project: Path, task_id: str, rel_path: str, new_content: bytes | None) -> int:
        self.entered.set()
        if self.hold is not None:
            assert self.hold.wait(20)
        self.writes.append((rel_path, new_content))
        return len(self.writes)

    def forget_write(self, change_id: int) -> None:
        pass


@pytest.fixture
def project(project_dir: Path) -> Path:
    return canonical_root(project_dir)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose profile root (SHADOWCODE_HOME) lies inside it, as when a task runs in the home folder."""
    root = tmp_path / "workspace"
    (root / ".shadowcode" / "profiles").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.setenv("SHADOWCODE_HOME", str(root / ".shadowcode"))
    return canonical_root(root)


def _env(root: Path, fakes: _Fakes, *, level: str = "workspace", log: _WriteLog | None = None) -> TaskEnv:
    return TaskEnv(
        task_id=TASK,
        owner=None,
        project=root,
        mode="build",
        level=level,
        records=fakes,
        approvals=fakes,
        checkpoints=log if log is not None else cast(Any, None),
        processes=cast(Any, None),  # a denied command never reaches the process manager
        env={},
    )


async def _call(env: TaskEnv, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = ToolCall(id="call_1", name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
    with anyio.fail_after(30):
        return cast(dict[str, Any], json.loads(await dispatch(env, call)))


@pytest.mark.req("ENG-04", "SRV-08")
@pytest.mark.parametrize(
    ("cwd", "refusal"),
    [
        (".shadowcode", "inside the profile folder"),
        (".shadowcode/profiles", "inside the profile folder"),
        (".git", "inside .git"),
        (".git/hooks", "inside .git"),
        ("..", "outside the project"),
    ],
)
async def test_a_command_cwd_inside_the_profile_root_or_git_is_refused_before_any_approval(
    workspace: Path, cwd: str, refusal: str
) -> None:
    fakes = _Fakes()
    env = _env(workspace, fakes, level="elevated")
    for name in ("run_command", "background_start"):
        result = await _call(env, name, {"argv": ["true"], "cwd": cwd})
        assert refusal in result["error"], result
    assert fakes.requested == []


@pytest.mark.req("ENG-04", "SRV-08")
async def test_a_command_cwd_in_a_project_folder_is_asked_for_exactly(workspace: Path) -> None:
    fakes = _Fakes()
    result = await _call(_env(workspace, fakes), "run_command", {"argv": ["true"], "cwd": "src"})
    assert "did not approve" in result["error"]
    assert fakes.requested == [("command", {"argv": ["true"], "cwd": str(workspace / "src")})]


@pytest.mark.req("ENG-04")
async def test_an_argument_of_the_wrong_kind_is_a_tool_error_the_model_reads(project: Path) -> None:
    (project / "a.txt").write_text("x", encoding="utf-8")
    fakes = _Fakes()
    result = await _call(_env(project, fakes), "read_file", {"path": "a.txt", "offset": "abc"})
    assert result["error"].startswith("invalid arguments for read_file: invalid literal for int()"), result
    assert fakes.events[-1] == ("tool.result", {"name": "read_file", "ok": False, "summary": json.dumps(result)})


async def _until(check: Any, what: str) -> None:
    with anyio.fail_after(20):
        while not check():
            await anyio.sleep(0.01)


@pytest.mark.req("ENG-04", "ENG-06")
async def test_the_file_tools_answer_exactly_as_the_file_functions_do(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    fakes, log = _Fakes(), _WriteLog()
    env = _env(project, fakes, log=log)
    assert await _call(env, "read_file", {"path": "src/app.py"}) == files.read_file(project, "src/app.py")
    assert await _call(env, "list_files", {"path": "src"}) == files.list_files(project, "src")
    search = {"pattern": "return", "path": "src", "regex": False}
    assert await _call(env, "search_files", search) == files.search_files(project, "return", "src")
    write = {"path": "src/new.txt", "content": "hello\n"}
    assert await _call(env, "write_file", write) == {"path": "src/new.txt", "bytes": 6, "created": True}
    edit = {"path": "src/app.py", "old": "return 1", "new": "return 2"}
    assert await _call(env, "edit_file", edit) == {"path": "src/app.py", "replacements": 1}
    assert (project / "src" / "app.py").read_text(encoding="utf-8") == "def main():\n    return 2\n"
    assert [w for w, _ in log.writes] == ["src/new.txt", "src/app.py"]
    assert [d["path"] for k, d in fakes.events if k == "file.write"] == ["src/new.txt", "src/app.py"]
    refused = await _call(env, "read_file", {"path": "../outside.txt"})
    with pytest.raises(ToolError) as direct:
        files.read_file(project, "../outside.txt")
    assert refused == {"error": direct.value.message}


@pytest.mark.req("ENG-03", "ENG-04")
async def test_the_event_loop_keeps_running_while_a_search_over_many_files_runs(project: Path) -> None:
    line = "x" * 79 + "\n"
    for i in range(SEARCH_FILES_MAX):
        (project / f"f{i:05d}.txt").write_text(line * 40, encoding="utf-8")
    (project / f"f{SEARCH_FILES_MAX - 1:05d}.txt").write_text(line * 40 + "needle\n", encoding="utf-8")
    env = _env(project, _Fakes())
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        await _until(lambda: ticks > 0, "the ticker to start")
        before = ticks
        found = await _call(env, "search_files", {"pattern": "needle"})
        during = ticks - before
        tg.cancel_scope.cancel()
    assert found == files.search_files(project, "needle")
    assert found["matches"] == [{"path": f"f{SEARCH_FILES_MAX - 1:05d}.txt", "line": 41, "text": "needle"}]
    assert during > 0, "the search held the event loop: nothing else ran while it searched"


@pytest.mark.req("ENG-04", "ENG-06")
async def test_a_write_in_progress_lands_before_a_cancelled_task_goes_on(project: Path) -> None:
    hold = threading.Event()
    fakes, log = _Fakes(), _WriteLog(hold)
    env = _env(project, fakes, log=log)
    outcome: list[dict[str, Any]] = []

    async def write() -> None:
        outcome.append(await _call(env, "write_file", {"path": "out.txt", "content": "done\n"}))

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(write)
                await _until(log.entered.is_set, "the write to start")
                tg.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(0.3):
                    await _until(lambda: outcome, "the write to return")
                assert outcome == [], "the cancelled write returned before it landed"
                hold.set()
    finally:
        hold.set()
    assert outcome == [{"path": "out.txt", "bytes": 5, "created": True}]
    assert (project / "out.txt").read_text(encoding="utf-8") == "done\n"
    assert [k for k, _ in fakes.events] == ["tool.call", "file.write", "tool.result"]
