"""Native tools offered to a task's model, and their dispatch (ENG-04).

Which tools a task gets follows its mode and effective permission level: every task can
read, list and search; Build tasks at ``workspace`` can also write, edit, run an approved
command and run the tests; ``elevated`` adds background processes. Plan and Review tasks
never get a writing tool. A tool failure becomes a tool result the model reads
(``{"error": "..."}``); the task goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from shadowcode.agent.observations import Observations
from shadowcode.agent.ports import ApprovalGate, EventLog, Processes, WriteLog, field_of
from shadowcode.agent.tool_specs import function_schema, native_tools_for, spec
from shadowcode.blocking import run_blocking
from shadowcode.errors import ShadowcodeError, ToolError
from shadowcode.json_values import json_array
from shadowcode.limits import COMMAND_OUTPUT_TAIL_BYTES, COMMAND_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from shadowcode.agent.providers import ToolCall

__all__ = [
    "McpTools",
    "TaskEnv",
    "await_approval",
    "detect_single_test_command",
    "dispatch",
    "run_approved_command",
    "tool_schemas",
]

T = TypeVar("T")


def tool_schemas(names: tuple[str, ...], mcp: McpTools | None = None) -> list[dict[str, Any]]:
    """OpenAI function-tool schemas for ``names``: registry tools from the registry, inline MCP tools from ``mcp``.

    Raises:
        KeyError: a name outside the registry and no ``mcp`` to describe it.
    """
    out: list[dict[str, Any]] = []
    for name in names:
        known = spec(name)
        if known is not None:
            out.append(function_schema(known))
        elif mcp is not None:
            out.append(mcp.schema(name))
        else:
            raise KeyError(name)
    return out


class McpTools(Protocol):
    """The external MCP tools of one Build task (CLI-07, CLI-09).

    The engine implements them (:class:`shadowcode.engine.mcp.task_servers.TaskServers`), with the
    grants, approvals and catalog they need; the agent never imports it.
    """

    async def prepare(self, env: TaskEnv) -> None:
        """Load the servers' catalogs once, before the first model turn."""
        ...

    def tool_names(self) -> tuple[str, ...]:
        """Names offered to the model now (a failed server's tools are left out, CLI-15)."""
        ...

    def handles(self, name: str) -> bool:
        """True for a name this object answers (offered now or earlier in the task)."""
        ...

    def schema(self, name: str) -> dict[str, Any]:
        """The OpenAI function schema of one offered name."""
        ...

    async def run(self, env: TaskEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer one call; returns the JSON object given back to the model."""
        ...


@dataclass
class TaskEnv:
    """What one running task's tools work with.

    The collaborators are the engine's objects, seen through the protocols of
    :mod:`shadowcode.agent.ports`: ``records`` (events, status), ``approvals``,
    ``checkpoints`` (the write log) and ``processes``.
    """

    task_id: str
    owner: str | None
    project: Path
    mode: str
    level: str
    records: EventLog
    approvals: ApprovalGate
    checkpoints: WriteLog
    processes: Processes
    env: dict[str, str]
    mcp: McpTools | None = None
    """The task's external MCP servers: only Build tasks above read_only in trusted projects (CLI-07, CLI-09)."""
    observations: Observations = field(default_factory=Observations)
    """What the task last read or wrote of each file; an MCP action makes it all stale (CLI-10)."""

    def _mcp_active(self) -> bool:
        return self.mcp is not None and self.mode == "build" and self.level != "read_only"

    @property
    def offered(self) -> tuple[str, ...]:
        """Tool names offered to the model now: the native tools, then the MCP tools (ENG-04, CLI-07)."""
        native = native_tools_for(self.mode, self.level)
        if self.mcp is None or not self._mcp_active():
            return native
        return native + self.mcp.tool_names()

    def may_call(self, name: str) -> bool:
        """True when a call of ``name`` is answered by a tool (an MCP tool of a failed server included, CLI-15)."""
        if name in native_tools_for(self.mode, self.level):
            return True
        return self.mcp is not None and self._mcp_active() and self.mcp.handles(name)


async def dispatch(env: TaskEnv, call: ToolCall) -> str:
    """Run one tool call; returns the JSON text given back to the model. Never raises a tool failure."""
    if not env.may_call(call.name):
        result: dict[str, Any] = {"error": f"unknown or unavailable tool {call.name!r} for this task"}
    elif call.arguments is None:
        result = {"error": f"arguments for {call.name} are not a JSON object"}
    else:
        env.records.event(env.task_id, "tool.call", {"name": call.name, "arguments": call.arguments})
        try:
            result = await _run(env, call.name, call.arguments)
        except ShadowcodeError as exc:
            result = {"error": exc.message}
        except (TypeError, KeyError, ValueError) as exc:
            result = {"error": f"invalid arguments for {call.name}: {exc}"}
        env.records.event(
            env.task_id, "tool.result", {"name": call.name, "ok": "error" not in result, "summary": _summary(result)}
        )
    return json.dumps(result, ensure_ascii=False)


def _summary(result: dict[str, Any]) -> str:
    text = json.dumps(result, ensure_ascii=False)
    return text if len(text) <= 500 else text[:497] + "..."


async def _off_loop(work: Callable[[], T], *, finish: bool = False) -> T:
    """Run a blocking file tool on a daemon thread, so a large search or a slow disk never stalls the event loop.

    Every session of a headless engine shares its event loop (ENG-03, ENG-04).

    A read is abandoned when the task is cancelled (its thread finishes on its own, its result
    dropped). A write (``finish``) is waited for even then: its change is already recorded, so
    the task never reports cancelled while its write still lands.

    Raises:
        ToolError: too many blocking threads run in this process; or what ``work`` raised.
    """
    if not finish:
        return await run_blocking(work)
    with anyio.CancelScope(shield=True):
        return await run_blocking(work)
    raise AssertionError("unreachable: a shielded scope nobody cancels swallows nothing")


async def _run(env: TaskEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
    from shadowcode.agent import files

    root = env.project
    if env.mcp is not None and env.mcp.handles(name):
        env.observations.invalidate_all()  # CLI-10: an MCP action may change any file
        try:
            return await env.mcp.run(env, name, args)
        finally:
            env.observations.invalidate_all()
    if name == "read_file":
        offset = int(args.get("offset", 0))
        return await _off_loop(
            partial(files.read_file, root, str(args["path"]), offset=offset, observations=env.observations)
        )
    if name == "list_files":
        return await _off_loop(partial(files.list_files, root, str(args.get("path", "."))))
    if name == "search_files":
        pattern, under, regex = str(args["pattern"]), str(args.get("path", ".")), bool(args.get("regex", False))
        return await _off_loop(partial(files.search_files, root, pattern, under, regex=regex))
    if name == "write_file":
        write = partial(
            files.write_file,
            root,
            str(args["path"]),
            str(args["content"]),
            checkpoints=env.checkpoints,
            task_id=env.task_id,
            observations=env.observations,
        )
        out = await _off_loop(write, finish=True)
        env.records.event(env.task_id, "file.write", {"path": out["path"]})
        return out
    if name == "edit_file":
        edit = partial(
            files.edit_file,
            root,
            str(args["path"]),
            str(args["old"]),
            str(args["new"]),
            checkpoints=env.checkpoints,
            task_id=env.task_id,
            observations=env.observations,
        )
        out = await _off_loop(edit, finish=True)
        env.records.event(env.task_id, "file.write", {"path": out["path"]})
        return out
    if name == "run_command":
        return await run_approved_command(env, _argv(args["argv"]), _cwd(env, args.get("cwd")), kind="command")
    if name == "run_tests":
        argv = (
            _argv(args["command"])
            if args.get("command")
            else await _off_loop(partial(detect_single_test_command, root))
        )
        return await run_approved_command(env, argv, root, kind="test")
    if name == "background_start":
        return await _background_start(env, _argv(args["argv"]), _cwd(env, args.get("cwd")))
    if name == "background_stop":
        return await env.processes.stop_background(str(args["id"]), project=env.project)
    raise ToolError(f"unknown tool {name!r}")


def _argv(value: object) -> list[str]:
    items = json_array(value) or []
    argv = [a for a in items if isinstance(a, str) and a]
    if not items or len(argv) != len(items):
        raise ToolError("argv must be a non-empty array of non-empty strings")
    return argv


def _cwd(env: TaskEnv, rel: Any) -> Path:
    """The working directory of a command: a folder of project content, never the profile root or ``.git`` (SRV-08).

    Raises:
        ToolError: outside the project, inside the profile root or ``.git``, or not a folder.
    """
    from shadowcode.project.files import confine

    if rel in (None, "", "."):
        return env.project
    path = confine(env.project, str(rel))
    if not path.is_dir():
        raise ToolError(f"cwd {rel!r} is not a directory of the project")
    return path


def detect_single_test_command(root: Path) -> list[str]:
    """The one detected test command of the project (SRV-17).

    Raises:
        ToolError: none, or several candidates (listed).
    """
    from shadowcode.project.test_detection import detect_test_commands

    found = detect_test_commands(root)
    if len(found) == 1:
        return list(found[0]["command"])
    if not found:
        raise ToolError("no test command detected in this project; pass command explicitly")
    listed = "; ".join(" ".join(c["command"]) for c in found)
    raise ToolError(f"several test commands detected ({listed}); pass command explicitly")


async def await_approval(env: TaskEnv, kind: str, action: dict[str, Any], shown: dict[str, Any]) -> tuple[str, str]:
    """Park the task on an approval of exactly ``action`` until it is resolved (ENG-07).

    Args:
        env: the task.
        kind: ``command``, ``test``, ``background``, ``mcp_call``, ``mcp_read_resource`` or ``mcp_get_prompt``.
        action: the exact action, stored with the approval.
        shown: what the ``approval.waiting`` event tells a person (besides id and kind).

    Returns:
        ``(approval_id, decision)`` with decision ``approved``, ``denied`` or ``expired``.
    """
    approval_id = str(field_of(env.approvals.request(env.task_id, env.owner, kind, action), "id"))
    env.records.event(env.task_id, "approval.waiting", {"approval_id": approval_id, "kind": kind} | shown)
    env.records.set_status(env.task_id, "waiting")
    try:
        decision = await env.approvals.wait(approval_id)
    finally:
        env.approvals.expire(env.task_id)
    env.records.set_status(env.task_id, "running")
    env.records.event(env.task_id, "approval.resolved", {"approval_id": approval_id, "status": decision})
    return approval_id, decision


async def run_approved_command(env: TaskEnv, argv: list[str], cwd: Path, *, kind: str) -> dict[str, Any]:
    """Park the task on an approval of exactly ``argv`` in ``cwd``, then run it if approved (ENG-07)."""
    action = {"argv": argv, "cwd": str(cwd)}
    approval_id, decision = await await_approval(env, kind, action, action)
    if decision != "approved":
        return {"error": f"the user did not approve this command ({decision})", "approval_id": approval_id}
    env.records.event(env.task_id, "command.started", {"argv": argv, "cwd": str(cwd)})
    result = await env.processes.run(
        argv, cwd, env=env.env, timeout_seconds=COMMAND_TIMEOUT_SECONDS, output_max_bytes=COMMAND_OUTPUT_TAIL_BYTES
    )
    doc = {
        "argv": argv,
        "cwd": str(cwd),
        "exit_code": result.exit_code,
        "signal": result.signal,
        "timed_out": result.timed_out,
        "output": result.output,
        "truncated": result.truncated,
    }
    env.records.event(env.task_id, "command.result", doc | {"pid": result.pid})
    return doc


async def _background_start(env: TaskEnv, argv: list[str], cwd: Path) -> dict[str, Any]:
    action = {"argv": argv, "cwd": str(cwd)}
    _, decision = await await_approval(env, "background", action, action)
    if decision != "approved":
        return {"error": f"the user did not approve this background process ({decision})"}
    started = env.processes.start_background(argv, cwd, env.env, env.project)
    env.records.event(env.task_id, "background.started", started)
    return started
