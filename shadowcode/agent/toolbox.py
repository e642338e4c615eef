"""Native tools offered to a task's model, and their dispatch (ENG-04).

Which tools a task gets follows its mode and effective permission level: every task can
read, list and search; Build tasks at ``workspace`` can also write, edit, run an approved
command and run the tests; ``elevated`` adds background processes. Plan and Review tasks
never get a writing tool. A tool failure becomes a tool result the model reads
(``{"error": "..."}``); the task goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowcode.errors import ShadowcodeError, ToolError
from shadowcode.limits import COMMAND_OUTPUT_TAIL_BYTES, COMMAND_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from shadowcode.agent.providers import ToolCall
    from shadowcode.engine.approvals import Approvals
    from shadowcode.engine.checkpoints import Checkpoints
    from shadowcode.engine.processes import ProcessManager
    from shadowcode.engine.tasks import TaskRecords
    from shadowcode.mcp.client.pool import TaskServers

__all__ = [
    "TaskEnv",
    "await_approval",
    "detect_single_test_command",
    "dispatch",
    "run_approved_command",
    "tool_schemas",
    "tools_for",
]

_STR = {"type": "string"}
_ARGV = {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Literal argv; no shell."}

_SCHEMAS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "read_file": ("Read a text file of the project.", {"path": _STR, "offset": {"type": "integer", "minimum": 0}},
                  ["path"]),
    "list_files": ("List a directory of the project.", {"path": _STR}, []),
    "search_files": ("Search the project's files for a text (or a regex with regex=true).",
                     {"pattern": _STR, "path": _STR, "regex": {"type": "boolean"}}, ["pattern"]),
    "write_file": ("Create or overwrite a file (checkpointed first).", {"path": _STR, "content": _STR},
                   ["path", "content"]),
    "edit_file": ("Replace one exact occurrence of old with new in a file (checkpointed first).",
                  {"path": _STR, "old": _STR, "new": _STR}, ["path", "old", "new"]),
    "run_command": ("Run one command (literal argv, no shell) after the user approves that exact argv and cwd.",
                    {"argv": _ARGV, "cwd": {"type": "string", "description": "Project-relative directory."}},
                    ["argv"]),
    "run_tests": ("Run the project's test command after approval (detected when command is omitted).",
                  {"command": _ARGV}, []),
    "background_start": ("Start a background process (outlives the task) after approval.",
                         {"argv": _ARGV, "cwd": _STR}, ["argv"]),
    "background_stop": ("Stop a background process by id.", {"id": _STR}, ["id"]),
}  # fmt: skip

_READ = ("read_file", "list_files", "search_files")
_WRITE = ("write_file", "edit_file", "run_command", "run_tests")
_ELEVATED = ("background_start", "background_stop")


def tools_for(mode: str, level: str) -> tuple[str, ...]:
    """Names of the native tools for a task of ``mode`` at effective ``level``."""
    if mode in ("plan", "review") or level == "read_only":
        return _READ
    if level == "workspace":
        return _READ + _WRITE
    return _READ + _WRITE + _ELEVATED


def tool_schemas(names: tuple[str, ...], mcp: TaskServers | None = None) -> list[dict[str, Any]]:
    """OpenAI function-tool schemas for ``names``; names outside the native set come from ``mcp`` (CLI-07)."""
    out = []
    for name in names:
        if name not in _SCHEMAS and mcp is not None:
            out.append(mcp.schema(name))
            continue
        description, props, required = _SCHEMAS[name]
        out.append({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": props, "required": required,
                               "additionalProperties": False},
            },
        })  # fmt: skip
    return out


@dataclass
class TaskEnv:
    """What one running task's tools work with."""

    task_id: str
    owner: str | None
    project: Path
    mode: str
    level: str
    records: TaskRecords
    approvals: Approvals
    checkpoints: Checkpoints
    processes: ProcessManager
    env: dict[str, str]
    mcp: TaskServers | None = None
    """The task's external MCP servers: only Build tasks above read_only in trusted projects (CLI-07, CLI-09)."""

    @property
    def allowed(self) -> tuple[str, ...]:
        """Tool names this task may call."""
        native = tools_for(self.mode, self.level)
        if self.mcp is None or self.mode != "build" or self.level == "read_only":
            return native
        return native + self.mcp.tool_names()


async def dispatch(env: TaskEnv, call: ToolCall) -> str:
    """Run one tool call; returns the JSON text given back to the model. Never raises a tool failure."""
    if call.name not in env.allowed:
        result: dict[str, Any] = {"error": f"unknown or unavailable tool {call.name!r} for this task"}
    elif call.arguments is None:
        result = {"error": f"arguments for {call.name} are not a JSON object"}
    else:
        env.records.event(env.task_id, "tool.call", {"name": call.name, "arguments": call.arguments})
        try:
            result = await _run(env, call.name, call.arguments)
        except ShadowcodeError as exc:
            result = {"error": exc.message}
        except (TypeError, KeyError) as exc:
            result = {"error": f"invalid arguments for {call.name}: {exc}"}
        env.records.event(
            env.task_id, "tool.result", {"name": call.name, "ok": "error" not in result, "summary": _summary(result)}
        )
    return json.dumps(result, ensure_ascii=False)


def _summary(result: dict[str, Any]) -> str:
    text = json.dumps(result, ensure_ascii=False)
    return text if len(text) <= 500 else text[:497] + "..."


async def _run(env: TaskEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
    from shadowcode.agent import files

    root = env.project
    if env.mcp is not None and env.mcp.handles(name):
        return await env.mcp.run(env, name, args)
    if name == "read_file":
        return files.read_file(root, str(args["path"]), offset=int(args.get("offset", 0)))
    if name == "list_files":
        return files.list_files(root, str(args.get("path", ".")))
    if name == "search_files":
        return files.search_files(
            root, str(args["pattern"]), str(args.get("path", ".")), regex=bool(args.get("regex", False))
        )
    if name == "write_file":
        out = files.write_file(
            root, str(args["path"]), str(args["content"]), checkpoints=env.checkpoints, task_id=env.task_id
        )
        env.records.event(env.task_id, "file.write", {"path": out["path"]})
        return out
    if name == "edit_file":
        out = files.edit_file(
            root,
            str(args["path"]),
            str(args["old"]),
            str(args["new"]),
            checkpoints=env.checkpoints,
            task_id=env.task_id,
        )
        env.records.event(env.task_id, "file.write", {"path": out["path"]})
        return out
    if name == "run_command":
        return await run_approved_command(env, _argv(args["argv"]), _cwd(env, args.get("cwd")), kind="command")
    if name == "run_tests":
        argv = _argv(args["command"]) if args.get("command") else detect_single_test_command(root)
        return await run_approved_command(env, argv, root, kind="test")
    if name == "background_start":
        return await _background_start(env, _argv(args["argv"]), _cwd(env, args.get("cwd")))
    if name == "background_stop":
        return await env.processes.stop_background(str(args["id"]), project=env.project)
    raise ToolError(f"unknown tool {name!r}")


def _argv(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
        raise ToolError("argv must be a non-empty array of non-empty strings")
    return list(value)


def _cwd(env: TaskEnv, rel: Any) -> Path:
    from shadowcode.project.paths import resolve_inside

    if rel in (None, "", "."):
        return env.project
    path = resolve_inside(env.project, str(rel))
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
        kind: ``command``, ``test``, ``background`` or ``mcp_call``.
        action: the exact action, stored with the approval.
        shown: what the ``approval.waiting`` event tells a person (besides id and kind).

    Returns:
        ``(approval_id, decision)`` with decision ``approved``, ``denied`` or ``expired``.
    """
    approval = env.approvals.request(env.task_id, env.owner, kind, action)
    env.records.event(env.task_id, "approval.waiting", {"approval_id": approval.id, "kind": kind} | shown)
    env.records.set_status(env.task_id, "waiting")
    try:
        decision = await env.approvals.wait(approval.id)
    finally:
        env.approvals.expire(env.task_id)
    env.records.set_status(env.task_id, "running")
    env.records.event(env.task_id, "approval.resolved", {"approval_id": approval.id, "status": decision})
    return approval.id, decision


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
