"""The toolbox: a command's working directory is project content, and the file tools leave the event loop free.

Covers ENG-04, SRV-08.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from shadowcode.agent.providers import ToolCall
from shadowcode.agent.toolbox import TaskEnv, dispatch
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


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose profile root (SHADOWCODE_HOME) lies inside it, as when a task runs in the home folder."""
    root = tmp_path / "workspace"
    (root / ".shadowcode" / "profiles").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.setenv("SHADOWCODE_HOME", str(root / ".shadowcode"))
    return canonical_root(root)


def _env(root: Path, fakes: _Fakes, *, level: str = "workspace") -> TaskEnv:
    return TaskEnv(
        task_id=TASK,
        owner=None,
        project=root,
        mode="build",
        level=level,
        records=fakes,
        approvals=fakes,
        checkpoints=cast(Any, None),
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
async def test_a_command_cwd_inside_the_profile_root_or_git_is_refused_before_any_approval_srv08(
    workspace: Path, cwd: str, refusal: str
) -> None:
    fakes = _Fakes()
    env = _env(workspace, fakes, level="elevated")
    for name in ("run_command", "background_start"):
        result = await _call(env, name, {"argv": ["true"], "cwd": cwd})
        assert refusal in result["error"], result
    assert fakes.requested == []


@pytest.mark.req("ENG-04", "SRV-08")
async def test_a_command_cwd_in_a_project_folder_is_asked_for_exactly_srv08(workspace: Path) -> None:
    fakes = _Fakes()
    result = await _call(_env(workspace, fakes), "run_command", {"argv": ["true"], "cwd": "src"})
    assert "did not approve" in result["error"]
    assert fakes.requested == [("command", {"argv": ["true"], "cwd": str(workspace / "src")})]
