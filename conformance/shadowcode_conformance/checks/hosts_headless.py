"""More real hosts on their first turn: Gemini CLI, Qwen Code, Cline, opencode, Kilo, Continue (REG-08, REG-01).

The same question as :mod:`shadowcode_conformance.checks.hosts` asks of Codex and Claude Code, put to
every other host pinned in ``node_probes`` that runs headless on Linux with loopback only.
Each check trusts the sample project, prints ``<target> mcp register --client HOST`` and gives
the host that text exactly as printed, in the file the host reads it from (Continue CLI's one
``--config`` file gets a ``models`` item added); what points the host at the scripted model
(:mod:`shadowcode_conformance.scripted_model`, speaking the host's wire: Gemini ``generateContent`` or
OpenAI Chat Completions) and what the printed line on stderr says the host asks of its user
(trust, approval mode) go in the host's other settings, flags and environment. Then it runs the host's
headless mode from the project folder with a private ``HOME``, no ``SHADOWCODE_HOME`` and
every proxy at a closed port, and passes when:

1. the host's first model request offers all seventeen tools;
2. the scripted model calls ``shadow_status`` under the name the host offered it, and a later
   request carries the result, showing the project trusted in the profile the entry's
   environment names and the run's engine mode;
3. no process outlives the host: once the host's process group is killed, no process of the
   check's private ``HOME`` is left (:func:`shadowcode_conformance.processes.kill_marked` finds and kills
   any, and the check fails naming how many).

Each host takes 10 to 60 s on two cores, so these checks run when the target is a packaged
archive (an argument ending in ``.pyz``), what users register; against any other target they
are reported not run. docs/conformance.md says what each host needs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import yaml

from shadowcode_conformance.checks.hosts import OFFLINE, first_turn, verdict
from shadowcode_conformance.checks.registration import failed, host_bin, host_env, missing_host, register
from shadowcode_conformance.context import Context
from shadowcode_conformance.host_wires import (
    chat_offered,
    chat_result,
    gemini_offered,
    gemini_result,
    is_chat,
    is_gemini,
)
from shadowcode_conformance.json_values import json_member, json_object
from shadowcode_conformance.limits import CLEANUP_WAIT_SECONDS
from shadowcode_conformance.processes import Completed, kill_marked, run_command, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.scripted_model import ModelRequest, Reply, chat_reply, gemini_reply, scripted_model

__all__ = [
    "cline_first_turn",
    "continue_first_turn",
    "gemini_first_turn",
    "kilo_first_turn",
    "opencode_first_turn",
    "qwen_first_turn",
]

_NAME = "shadowcode"
_TOOL = "shadow_status"
_CALL_ID = "call_shadow_status"
_PROMPT = "Report the status of ShadowCode for this project."
_FINAL = "ShadowCode answered."
_MODEL = "scripted-model"
_KEY = "sk-scripted"
_HOST_RUN_SECONDS = 300.0
"""One host run's bound: Kilo took 90 s on a 2-core machine at load 15, most of it its own start."""
_TIMEOUT_SECONDS = 660
_SETUP_SECONDS = 60.0
_SWEEP_POLL_SECONDS = 0.05
_NOT_FOUND = Reply(404, "application/json", b'{"error": "not found"}')


# --- the scripted model on both wires ------------------------------------------------------


class _Script:
    """First main-loop request offering ``shadow_status``: call it; every other request: a final text."""

    def __init__(self, wire: str) -> None:
        self.wire = wire
        self.called = ""

    def answer(self, request: ModelRequest, index: int) -> Reply:
        if self.wire == "gemini":
            if not is_gemini(request):
                return _NOT_FOUND
            name = gemini_offered(request.body).get(_TOOL)
            if name and not self.called:
                self.called = name
                return gemini_reply(request, [{"functionCall": {"name": name, "args": {}, "id": _CALL_ID}}])
            return gemini_reply(request, [{"text": _FINAL}])
        if not is_chat(request):
            if request.method == "GET" and request.path.split("?")[0].endswith("/models"):
                return Reply(200, "application/json", json.dumps({"object": "list", "data": [{"id": _MODEL}]}).encode())
            return _NOT_FOUND
        name = chat_offered(request.body).get(_TOOL)
        if name and not self.called:
            self.called = name
            return chat_reply(request, f"chatcmpl-{index}", calls=[{"id": _CALL_ID, "name": name, "arguments": "{}"}])
        return chat_reply(request, f"chatcmpl-{index}", text=_FINAL)

    def main_loop(self, requests: list[ModelRequest]) -> list[ModelRequest]:
        """The requests of the agent's own turn: those offering tools (not titles or summaries)."""
        match = is_gemini if self.wire == "gemini" else is_chat
        return [r for r in requests if match(r) and (json_object(r.body) or {}).get("tools")]

    def offered(self, request: ModelRequest) -> dict[str, str]:
        return (gemini_offered if self.wire == "gemini" else chat_offered)(request.body)

    def result(self, requests: list[ModelRequest]) -> str | None:
        if self.wire == "gemini":
            return gemini_result(requests, self.called) if self.called else None
        return chat_result(requests, _CALL_ID)


# --- one host run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    """Where one run of a host lives: its private HOME and the scripted model's URL."""

    home: Path
    url: str


Prepare = Callable[[Context, _Run, str], Awaitable["_Launch | str"]]
"""Write a host's files for one run from the printed text; its command line, or a problem sentence."""


@dataclass(frozen=True)
class _Launch:
    """The host command line and what its environment adds."""

    argv: list[str]
    env: Mapping[str, str]


@dataclass(frozen=True)
class _Host:
    """One host: its name, its ``--client``, its program in ``node_probes/node_modules/.bin``,
    its wire (``gemini`` or ``chat``) and what writes its files for one run."""

    label: str
    client: str
    binary: str
    wire: str
    prepare: Prepare


def _entry_problem(ctx: Context, text: str, client: str) -> str | None:
    """A problem sentence unless the printed document's entry pins the check's SHADOWCODE_HOME."""
    try:
        document = yaml.safe_load(text) if client == "continue" else json.loads(text)
        if client in ("opencode", "kilo"):
            env = json_member(document["mcp"][_NAME], "environment")
        elif client == "continue":
            env = json_member(next(e for e in document["mcpServers"] if e.get("name") == _NAME), "env")
        else:
            env = json_member(document["mcpServers"][_NAME], "env")
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError, yaml.YAMLError) as exc:
        return f"not a {client} entry: {exc!r}: {tail(text)}"
    if env.get("SHADOWCODE_HOME") != str(ctx.home):
        return f"the entry does not pin SHADOWCODE_HOME={str(ctx.home)!r} in its environment: {tail(text)}"
    return None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def _first_turn_of(ctx: Context, host: _Host) -> CheckResult:
    """Run ``host`` as the module docstring says; the verdict."""
    if not any(arg.endswith(".pyz") for arg in ctx.target):
        return CheckResult.not_asked(
            f"not run: {host.label}'s host check runs against a packaged archive target (python3 dist/shadowcode.pyz)"
        )
    binary = host_bin(ctx, host.binary)
    if binary is None:
        return missing_host(host.binary)
    if problem := failed("trust", await ctx.trust()):
        return CheckResult(False, problem)
    done, problem = await register(ctx, "--client", host.client)
    if problem:
        return CheckResult(False, problem)
    printed = done.stdout.decode("utf-8")
    if problem := _entry_problem(ctx, printed, host.client):
        return CheckResult(False, problem)
    runs = 0

    async def attempt() -> CheckResult:
        nonlocal runs
        runs += 1
        home = ctx.scratch / f"{host.client} home {runs}"
        home.mkdir()
        script = _Script(host.wire)
        async with scripted_model(script.answer) as model:
            launch = await host.prepare(ctx, _Run(home, model.url), printed)
            if isinstance(launch, str):
                return CheckResult(False, launch)
            env = host_env(ctx, **OFFLINE, **launch.env)
            env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PWD=str(ctx.project))
            env.pop("SHADOWCODE_HOME", None)  # only the printed entry may carry the profile
            argv = [str(binary), *launch.argv]
            started = time.monotonic()
            bound = max(1.0, min(_HOST_RUN_SECONDS, ctx.remaining() - 5.0))
            run = await run_command(argv, env=env, cwd=ctx.project, timeout_seconds=bound)
        left = await _outliving(f"HOME={home}")
        turns = script.main_loop(model.requests)
        if not turns:
            asked = ", ".join(sorted({f"{r.method} {r.path.split('?')[0]}" for r in model.requests})) or "nothing"
            why = failed(host.label, run) or f"exit 0; stdout: {tail(run.stdout)}"
            return CheckResult(False, f"{host.label} never asked the model with tools (it asked: {asked}; {why})")
        offered = script.offered(turns[0])
        how = f"as functions named like {offered[_TOOL]!r}" if _TOOL in offered else "under no name we know"
        result = verdict(ctx, host.label, set(offered), how, script.result(turns[1:]), run, started, turns[0].at)
        result.data["seconds"] = round(time.monotonic() - started, 1)
        if left and result.ok:
            return CheckResult(
                False, f"{len(left)} process(es) of the host's private HOME outlived {host.label}", result.data
            )
        return result

    return await first_turn(ctx, attempt)


def _marked(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``marker``."""
    needle, found = marker.encode("utf-8"), list[int]()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                stat = (entry / "stat").read_bytes()
                if stat[stat.rindex(b")") + 2 :].split()[0] != b"Z":
                    found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


async def _outliving(marker: str) -> list[int]:
    """The processes of ``marker`` still alive once the host's killed group had time to die; they are killed.

    A member of the host's group killed a moment ago may still be leaving (a process in a disk
    wait dies when the wait ends), so the sweep waits up to ``CLEANUP_WAIT_SECONDS`` for the
    marked processes to be gone; those still there left the group and would outlive the host.
    """
    with anyio.move_on_after(CLEANUP_WAIT_SECONDS):
        while await anyio.to_thread.run_sync(_marked, marker):
            await anyio.sleep(_SWEEP_POLL_SECONDS)
    return kill_marked(marker)


async def _setup(ctx: Context, argv: list[str], env: Mapping[str, str]) -> Completed:
    """A host's own set-up command (sign-in), bounded, from the project folder."""
    return await run_command(argv, env=env, cwd=ctx.project, timeout_seconds=min(_SETUP_SECONDS, ctx.remaining()))


# --- the hosts ---------------------------------------------------------------------------------


async def _gemini(ctx: Context, run: _Run, printed: str) -> _Launch | str:
    """The printed document as the project's .gemini/settings.json; API-key sign-in in the user settings."""
    _write(ctx.project / ".gemini" / "settings.json", printed)
    user = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    _write(run.home / ".gemini" / "settings.json", json.dumps(user))
    env = {"GEMINI_API_KEY": _KEY, "GOOGLE_GEMINI_BASE_URL": run.url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    argv = ["-p", _PROMPT, "--approval-mode", "yolo", "--output-format", "json", "--model", _MODEL]
    return _Launch(argv, env)


async def _qwen(ctx: Context, run: _Run, printed: str) -> _Launch | str:
    """The printed document as the user file ~/.qwen/settings.json; an OpenAI-compatible model from the command line."""
    _write(run.home / ".qwen" / "settings.json", printed)
    env = {"OPENAI_API_KEY": _KEY, "OPENAI_BASE_URL": f"{run.url}/v1", "OPENAI_MODEL": _MODEL}
    argv = [_PROMPT, "--approval-mode", "yolo", "--output-format", "json", "--auth-type", "openai", "--model", _MODEL]
    return _Launch(argv, env)


async def _cline(ctx: Context, run: _Run, printed: str) -> _Launch | str:
    """The printed document as ~/.cline/data/settings/cline_mcp_settings.json; ``cline auth`` to the model."""
    _write(run.home / ".cline" / "data" / "settings" / "cline_mcp_settings.json", printed)
    env = {"CLINE_SESSION_BACKEND_MODE": "local"}
    setup_env = host_env(ctx, **OFFLINE, **env)
    setup_env.update(HOME=str(run.home), XDG_CONFIG_HOME=str(run.home / ".config"), PWD=str(ctx.project))
    cline = str(ctx.repo_root / "node_probes" / "node_modules" / ".bin" / "cline")
    done = await _setup(
        ctx, [cline, "auth", "-p", "openai", "-k", _KEY, "-m", _MODEL, "-b", f"{run.url}/v1"], setup_env
    )
    if problem := failed("cline auth", done):
        return problem
    return _Launch(["--json", _PROMPT], env)


_QUIET = (
    "AUTOUPDATE",
    "MODELS_FETCH",
    "DEFAULT_PLUGINS",
    "LSP_DOWNLOAD",
    "SHARE",
    "SESSION_INGEST",
    "PRESENCE",
    "CODEBASE_INDEXING",
)
"""What opencode and Kilo are told not to fetch or start (``<PREFIX>_DISABLE_<WHAT>=1``): nothing of the MCP path."""


def _opencode_like(config: str, prefix: str) -> Prepare:
    async def prepare(ctx: Context, run: _Run, printed: str) -> _Launch | str:
        """The printed document as the project's config; an OpenAI-compatible provider in the user config."""
        _write(ctx.project / config, printed)
        user = {
            "provider": {
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {"baseURL": f"{run.url}/v1", "apiKey": _KEY},
                    "models": {_MODEL: {"name": _MODEL}},
                }
            },
            "model": f"scripted/{_MODEL}",
            "autoupdate": False,
            "share": "disabled",
        }
        _write(run.home / ".config" / prefix.lower() / config, json.dumps(user, indent=2))
        return _Launch(["run", _PROMPT], {f"{prefix}_DISABLE_{what}": "1" for what in _QUIET})

    return prepare


async def _continue(ctx: Context, run: _Run, printed: str) -> _Launch | str:
    """The printed YAML with an OpenAI-compatible model beside it, given with ``cn --config``."""
    document: dict[str, Any] = yaml.safe_load(printed)
    document["models"] = [
        {
            "name": "Scripted",
            "provider": "openai",
            "model": _MODEL,
            "apiBase": f"{run.url}/v1",
            "apiKey": _KEY,
            "roles": ["chat"],
        }
    ]
    config = run.home / "continue.yaml"
    _write(config, yaml.safe_dump(document, sort_keys=False))
    return _Launch(["-p", _PROMPT, "--config", str(config)], {})


_HOSTS = {
    "gemini": _Host("Gemini CLI", "gemini", "gemini", "gemini", _gemini),
    "qwen": _Host("Qwen Code", "qwen", "qwen", "chat", _qwen),
    "cline": _Host("Cline", "cline", "cline", "chat", _cline),
    "opencode": _Host("opencode", "opencode", "opencode", "chat", _opencode_like("opencode.json", "OPENCODE")),
    "kilo": _Host("Kilo", "kilo", "kilo", "chat", _opencode_like("kilo.json", "KILO")),
    "continue": _Host("Continue CLI", "continue", "cn", "chat", _continue),
}


@check("hosts_headless:gemini_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def gemini_first_turn(ctx: Context) -> CheckResult:
    """``gemini -p --approval-mode yolo`` with the printed project settings: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["gemini"])


@check("hosts_headless:qwen_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def qwen_first_turn(ctx: Context) -> CheckResult:
    """``qwen --approval-mode yolo`` with the printed user settings: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["qwen"])


@check("hosts_headless:cline_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def cline_first_turn(ctx: Context) -> CheckResult:
    """``cline --json`` with the printed cline_mcp_settings.json: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["cline"])


@check("hosts_headless:opencode_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def opencode_first_turn(ctx: Context) -> CheckResult:
    """``opencode run`` with the printed opencode.json entry: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["opencode"])


@check("hosts_headless:kilo_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def kilo_first_turn(ctx: Context) -> CheckResult:
    """``kilo run`` with the printed kilo.json entry: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["kilo"])


@check("hosts_headless:continue_first_turn", covers=["REG-08", "REG-01"], timeout_seconds=_TIMEOUT_SECONDS)
async def continue_first_turn(ctx: Context) -> CheckResult:
    """``cn -p`` with the printed YAML as its config: 17 tools, ``shadow_status`` answered."""
    return await _first_turn_of(ctx, _HOSTS["continue"])
