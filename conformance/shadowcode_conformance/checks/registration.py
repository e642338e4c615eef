"""Registration snippets tried in the real hosts (REG-08), plus their launch command (REG-01, REG-02).

Every snippet comes from the target's own ``mcp register``; nothing here writes one by hand.

* Claude Code: the stdio entry printed for ``--client claude`` (for a project whose path
  holds a space) is added with ``claude mcp add-json --scope user`` under a private HOME,
  then ``claude mcp list`` must report it connected. Claude spawns the registered command,
  so this proves the launch command really starts the target's server. The HTTP entry is
  tried the same way against a gateway the check starts with ``mcp serve --http``.
* Codex: the TOML printed for ``--client codex`` (project path with a space and a quote) is
  written to ``$CODEX_HOME/config.toml`` and read back with ``codex mcp get NAME --json``;
  command and arguments must come back unchanged. The HTTP section is read back the same way.

The hosts come from ``node_probes/node_modules`` (``npm ci`` in ``node_probes``). Both run
offline: the list and get commands need no account.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_array, json_member, json_object
from shadowcode_conformance.processes import Completed, drain, reap, run_command, start_process, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "claude_http_connected",
    "host_formats",
    "claude_stdio_connected",
    "codex_http_round_trip",
    "codex_stdio_round_trip",
    "launch_command_is_absolute",
    "refusals",
    "registered_command_keeps_its_profile",
]

_NAME = "shadowcode"
_TOKEN_ENV = "SHADOW_MCP_HTTP_TOKEN"
_COMMAND_TIMEOUT_SECONDS = 30.0
_HEALTH_TIMEOUT_SECONDS = 90.0
_GATEWAY_READY_SECONDS = 30.0
_ADDRESS = re.compile(r"(127\.0\.0\.1|\[::1\]|localhost):([1-9]\d{0,4})\b")
_SPACE_PROJECT = "sample project"
_QUOTE_PROJECT = 'sample "quoted" project\'s copy'


# --- helpers ----------------------------------------------------------------------------


def host_bin(ctx: Context, name: str) -> Path | None:
    """The pinned host executable in ``node_probes``, or None when it is not installed."""
    path = ctx.repo_root / "node_probes" / "node_modules" / ".bin" / name
    return path if path.exists() else None


def missing_host(name: str) -> CheckResult:
    return CheckResult(False, f"node_probes/node_modules/.bin/{name} is missing; run `npm ci` in node_probes")


def _project_copy(ctx: Context, name: str) -> Path:
    """A copy of the sample project under a directory name that needs literal encoding."""
    dest = ctx.scratch / name
    shutil.copytree(ctx.project, dest, symlinks=True)
    return dest.resolve()


def host_env(ctx: Context, **extra: str) -> dict[str, str]:
    """The check's environment with a private HOME and temporary folder, and no host configuration leaking in.

    The temporary folder is the check's own, so what a host leaves there (Claude Code keeps a
    folder per working directory under ``$TMPDIR/claude-<uid>``) goes with the check.
    """
    env = {k: v for k, v in ctx.env.items() if not k.startswith(("CLAUDE_", "CODEX_", "ANTHROPIC_", "OPENAI_"))}
    home = ctx.scratch / "host home"
    home.mkdir(exist_ok=True)
    tmp = ctx.scratch / "host-tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        CLAUDE_CODE_TMPDIR=str(tmp),
        XDG_CONFIG_HOME=str(home / ".config"),
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


async def _run(
    ctx: Context,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = _COMMAND_TIMEOUT_SECONDS,
) -> Completed:
    """Run a command from the scratch folder, bounded by ``timeout`` and the check's deadline."""
    return await run_command(
        argv,
        env=dict(ctx.env if env is None else env),
        cwd=ctx.scratch,
        timeout_seconds=min(timeout, ctx.remaining()),
    )


def failed(what: str, done: Completed) -> str | None:
    """A problem sentence when ``done`` did not exit 0, else None."""
    if done.timed_out:
        return f"{what} did not finish in time (stderr: {tail(done.stderr)})"
    if done.returncode != 0:
        return f"{what} exited {done.returncode} (stderr: {tail(done.stderr)})"
    return None


def codex_section(text: str) -> tuple[dict[str, Any], str | None]:
    """The ``[mcp_servers.shadowcode]`` table of printed TOML, or ``({}, problem)`` when there is none."""
    try:
        return dict(tomllib.loads(text)["mcp_servers"][_NAME]), None
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        return {}, f"not a [mcp_servers.{_NAME}] TOML section: {exc!r}: {tail(text)}"


async def register(
    ctx: Context, *args: str, workspace: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[Completed, str | None]:
    """``<target> --workspace W mcp register ARGS`` (with ``env`` added to the environment when given).

    Returns:
        The run and a problem, if any.
    """
    argv = ctx.target_argv("mcp", "register", *args, workspace=workspace)
    done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS, env=env)
    return done, failed("mcp register", done)


def _json_entry(done: Completed) -> dict[str, Any]:
    """The server entry of a JSON snippet; raises ValueError/KeyError on another shape."""
    document = json.loads(done.stdout.decode("utf-8"))
    entry = json_object(document["mcpServers"][_NAME])
    if entry is None:
        raise ValueError("the server entry is not a JSON object")
    return entry


def _list_line(output: bytes) -> str | None:
    """The ``claude mcp list`` line of our server, or None."""
    for line in output.decode("utf-8", "replace").splitlines():
        if line.startswith(f"{_NAME}:"):
            return line.strip()
    return None


async def _claude_connects(ctx: Context, claude: Path, entry: dict[str, Any], env: Mapping[str, str]) -> CheckResult:
    """Add ``entry`` to Claude Code's user config, then require ``claude mcp list`` to say connected."""
    data: dict[str, Any] = {"entry": entry}
    add = await _run(ctx, [str(claude), "mcp", "add-json", "--scope", "user", _NAME, json.dumps(entry)], env=env)
    problem = failed("claude mcp add-json", add)
    if problem:
        return CheckResult(False, problem, data)
    stored = json.loads((Path(env["HOME"]) / ".claude.json").read_text(encoding="utf-8")).get("mcpServers", {})
    data["stored"] = stored.get(_NAME)
    if stored.get(_NAME) != entry:
        return CheckResult(False, f"Claude Code stored {stored.get(_NAME)!r}, not the printed entry", data)
    listed = await _run(ctx, [str(claude), "mcp", "list"], env=env, timeout=_HEALTH_TIMEOUT_SECONDS)
    problem = failed("claude mcp list", listed)
    if problem:
        return CheckResult(False, problem, data)
    line = _list_line(listed.stdout)
    data["line"] = line
    if line is None:
        return CheckResult(False, f"claude mcp list did not list {_NAME}: {tail(listed.stdout)}", data)
    if "Connected" not in line or "Failed" in line:
        return CheckResult(False, f"Claude Code could not connect: {line}", data)
    return CheckResult(True, f"Claude Code reports: {line}", data)


# --- checks -----------------------------------------------------------------------------


@check("registration:launch_command_is_absolute", covers=["REG-01", "REG-02"], timeout_seconds=60)
async def launch_command_is_absolute(ctx: Context) -> CheckResult:
    """The generic snippet names an existing absolute executable and the canonical project.

    When the target runs an archive (an argument ending in ``.pyz``), that archive's absolute
    path must be the first argument, never an extraction folder (REG-02).
    """
    link = ctx.scratch / "project link"
    link.symlink_to(ctx.project)
    done, problem = await register(ctx, workspace=link)
    if problem:
        return CheckResult(False, problem)
    try:
        entry = _json_entry(done)
    except (ValueError, KeyError) as exc:
        return CheckResult(False, f"not a generic mcpServers snippet: {exc!r}: {tail(done.stdout)}")
    command, args = entry.get("command"), json_array(entry.get("args"))
    data = {"entry": entry}
    if not isinstance(command, str) or args is None:
        return CheckResult(False, "command or args missing", data)
    problems: list[str] = []
    if not os.path.isabs(command) or not os.access(command, os.X_OK):
        problems.append(f"command {command!r} is not an absolute executable")
    if args[-2:] != ["mcp", "serve"] or "--workspace" not in args:
        problems.append(f"args {args!r} do not end in --workspace P mcp serve")
    elif args[args.index("--workspace") + 1] != str(ctx.project):
        problems.append(f"workspace {args[args.index('--workspace') + 1]!r} is not the canonical {str(ctx.project)!r}")
    archives = [a for a in ctx.target if a.endswith(".pyz")]
    if archives:
        expected = os.path.abspath(os.path.join(ctx.cwd, archives[0]))
        if not args or args[0] != expected:
            problems.append(f"first argument {args[:1]!r} is not the archive {expected!r}")
    if problems:
        return CheckResult(False, "; ".join(problems), data)
    return CheckResult(True, f"{command} {' '.join(args)}", data)


@check("registration:claude_stdio_connected", covers=["REG-08", "REG-04", "REG-05"], timeout_seconds=150)
async def claude_stdio_connected(ctx: Context) -> CheckResult:
    """Claude Code accepts the ``--client claude`` entry and connects to the server it launches."""
    claude = host_bin(ctx, "claude")
    if claude is None:
        return missing_host("claude")
    project = _project_copy(ctx, _SPACE_PROJECT)
    done, problem = await register(ctx, "--client", "claude", workspace=project)
    if problem:
        return CheckResult(False, problem)
    try:
        entry = _json_entry(done)
    except (ValueError, KeyError) as exc:
        return CheckResult(False, f"not a Claude Code .mcp.json snippet: {exc!r}: {tail(done.stdout)}")
    args = entry.get("args")
    if not isinstance(args, list) or str(project) not in args:
        return CheckResult(False, f"the project path {str(project)!r} is not a literal argument: {args!r}")
    return await _claude_connects(ctx, claude, entry, host_env(ctx))


@check("registration:codex_stdio_round_trip", covers=["REG-08", "REG-03", "REG-05"], timeout_seconds=90)
async def codex_stdio_round_trip(ctx: Context) -> CheckResult:
    """Codex reads the ``--client codex`` section back with the same command and arguments."""
    codex = host_bin(ctx, "codex")
    if codex is None:
        return missing_host("codex")
    project = ctx.scratch / _QUOTE_PROJECT
    project.mkdir()
    project = project.resolve()
    done, problem = await register(ctx, "--client", "codex", workspace=project)
    if problem:
        return CheckResult(False, problem)
    text = done.stdout.decode("utf-8")
    printed, problem = codex_section(text)
    if problem:
        return CheckResult(False, problem)
    if str(project) not in printed.get("args", []):
        return CheckResult(False, f"the project path {str(project)!r} is not a literal argument: {printed!r}")
    return await _codex_reads_back(ctx, codex, text, {"command": printed.get("command"), "args": printed.get("args")})


@check("registration:codex_http_round_trip", covers=["REG-08", "REG-06"], timeout_seconds=90)
async def codex_http_round_trip(ctx: Context) -> CheckResult:
    """Codex reads back the HTTP section: the loopback URL and the token variable's name only."""
    codex = host_bin(ctx, "codex")
    if codex is None:
        return missing_host("codex")
    url = "http://127.0.0.1:8765/mcp"
    done, problem = await register(ctx, "--client", "codex", "--url", url, "--token-env", _TOKEN_ENV)
    if problem:
        return CheckResult(False, problem)
    text = done.stdout.decode("utf-8")
    return await _codex_reads_back(ctx, codex, text, {"url": url, "bearer_token_env_var": _TOKEN_ENV})


async def _codex_reads_back(ctx: Context, codex: Path, text: str, expected: dict[str, Any]) -> CheckResult:
    """Write ``text`` as Codex's config.toml, read it with ``codex mcp get --json``, compare fields."""
    codex_home = ctx.scratch / "codex home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(text, encoding="utf-8")
    env = host_env(ctx, CODEX_HOME=str(codex_home))
    got = await _run(ctx, [str(codex), "mcp", "get", _NAME, "--json"], env=env)
    problem = failed("codex mcp get", got)
    data: dict[str, Any] = {"snippet": text, "expected": expected}
    if problem:
        return CheckResult(False, problem, data)
    try:
        transport = json.loads(got.stdout.decode("utf-8"))["transport"]
    except (ValueError, KeyError) as exc:
        return CheckResult(False, f"codex mcp get --json printed no transport: {exc!r}: {tail(got.stdout)}", data)
    data["transport"] = transport
    differ = {k: (v, transport.get(k)) for k, v in expected.items() if transport.get(k) != v}
    if differ:
        return CheckResult(False, f"Codex read back different values (printed, read): {differ!r}", data)
    return CheckResult(True, f"Codex read back {transport.get('type')} unchanged: {expected!r}", data)


# --- every other host's entry, checked from the outside (REG-04, REG-05, REG-06) ------------


def _yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _stdio_of(client: str, document: Any) -> tuple[Any, Any, Any]:
    """``(command, args, env)`` a host reads from its printed document, per its documented shape."""
    if client in ("opencode", "kilo"):
        entry = document["mcp"][_NAME]
        argv = json_array(entry["command"]) if entry.get("type") == "local" else None
        return (argv[0], argv[1:], entry.get("environment")) if argv else (None, None, None)
    if client == "continue":
        (entry,) = [item for item in document["mcpServers"] if item.get("name") == _NAME]
    elif client == "vscode":
        entry = document["servers"][_NAME]
    elif client == "zed":
        entry = document["context_servers"][_NAME]
    else:
        entry = document["mcpServers"][_NAME]
    return entry.get("command"), entry.get("args"), entry.get("env")


def _http_of(client: str, document: Any) -> tuple[Any, Any]:
    """``(url, Authorization header)`` a host reads from its printed HTTP document."""
    if client in ("opencode", "kilo"):
        entry = document["mcp"][_NAME]
        return entry.get("url"), entry.get("headers", {}).get("Authorization")
    if client == "continue":
        (entry,) = [item for item in document["mcpServers"] if item.get("name") == _NAME]
        return entry.get("url"), entry.get("requestOptions", {}).get("headers", {}).get("Authorization")
    entry = document["servers" if client == "vscode" else "mcpServers"][_NAME]
    url = entry.get("httpUrl") or entry.get("serverUrl") or entry.get("url")
    return url, entry.get("headers", {}).get("Authorization")


_HOST_FORMATS: tuple[tuple[str, str, str | None], ...] = (
    # client, its configuration language, the Authorization header it reads the token with (None: HTTP refused)
    ("gemini", "json", "Bearer ${%s}"),
    ("qwen", "json", "Bearer ${%s}"),
    ("cline", "json", None),
    ("opencode", "json", "Bearer {env:%s}"),
    ("kilo", "json", "Bearer {env:%s}"),
    ("continue", "yaml", "Bearer ${{ secrets.%s }}"),
    ("vscode", "json", "Bearer ${env:%s}"),
    ("zed", "json", None),
    ("windsurf", "json", "Bearer ${env:%s}"),
)


async def _one_host_format(
    ctx: Context, project: Path, client: str, syntax: str, header: str | None, expected: Any
) -> SubResult:
    """One host: the stdio entry parses and carries the generic launch command; the HTTP one names the variable."""
    name = f"registration:host_formats:{client}"
    done, problem = await register(ctx, "--client", client, workspace=project)
    if problem:
        return SubResult(name, ("REG-04",), False, problem)
    text = done.stdout.decode("utf-8")
    try:
        document = _yaml(text) if syntax == "yaml" else json.loads(text)
        launch = _stdio_of(client, document)
    except (ValueError, KeyError, TypeError) as exc:
        return SubResult(name, ("REG-04",), False, f"not a {client} {syntax.upper()} entry: {exc!r}: {tail(text, 200)}")
    if launch != expected:
        return SubResult(name, ("REG-04",), False, f"{client} reads {launch!r}, the generic entry says {expected!r}")
    if not done.stderr.strip():
        return SubResult(name, ("REG-04",), False, "no line on stderr saying where the entry goes")
    args = ("--client", client, "--url", _LOOPBACK_URL, "--token-env", _TOKEN_ENV)
    http, problem = await register(ctx, *args)
    if header is None:
        ok = http.returncode == 2 and not http.stdout and bool(http.stderr.strip())
        detail = "HTTP refused with exit 2" if ok else f"HTTP not refused cleanly: exit {http.returncode}"
        return SubResult(name, ("REG-04", "REG-07"), ok, f"stdio entry read back; {detail}")
    if problem:
        return SubResult(name, ("REG-04", "REG-06"), False, problem)
    try:
        http_text = http.stdout.decode("utf-8")
        got = _http_of(client, _yaml(http_text) if syntax == "yaml" else json.loads(http_text))
    except (ValueError, KeyError, TypeError) as exc:
        return SubResult(name, ("REG-04", "REG-06"), False, f"not a {client} HTTP entry: {exc!r}")
    want = (_LOOPBACK_URL, header % _TOKEN_ENV)
    detail = f"stdio entry read back; HTTP {got!r}" + ("" if got == want else f", expected {want!r}")
    return SubResult(name, ("REG-04", "REG-06"), got == want, detail)


@check("registration:host_formats", covers=["REG-04", "REG-05", "REG-06", "REG-07"], timeout_seconds=180)
async def host_formats(ctx: Context) -> CheckResult:
    """Each other host's printed entry parses in its own language and launches what the generic entry launches.

    For Gemini CLI, Qwen Code, Cline, opencode, Kilo, Continue, VS Code, Zed and Windsurf: the
    ``--client`` output must parse (JSON, or YAML for Continue), name the same absolute command,
    arguments and environment as the generic entry in the host's own fields, say on stderr where
    it goes, and the ``--url`` form must reference the token variable in the host's syntax (or be
    refused with exit 2 where the host cannot read a header from the environment). A project path
    holding a space and quotes must come back literally.
    """
    project = ctx.scratch / _QUOTE_PROJECT
    project.mkdir()
    project = project.resolve()
    done, problem = await register(ctx, workspace=project)
    if problem:
        return CheckResult(False, problem)
    generic = json.loads(done.stdout.decode("utf-8"))["mcpServers"][_NAME]
    if str(project) not in generic["args"]:
        return CheckResult(False, f"the project path {str(project)!r} is not a literal argument: {generic['args']!r}")
    expected = (generic["command"], generic["args"], generic.get("env"))
    subs = [
        await _one_host_format(ctx, project, client, syntax, header, expected)
        for client, syntax, header in _HOST_FORMATS
    ]
    broken = [f"{sub.name}: {sub.detail}" for sub in subs if not sub.ok]
    if broken:
        return CheckResult(False, "; ".join(broken), subresults=subs)
    return CheckResult(True, f"{len(subs)} host formats read back with the generic launch command", subresults=subs)


_LOOPBACK_URL = "http://127.0.0.1:8765/mcp"
_REFUSALS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("codex_json", ("REG-03",), ("--json", "{ws}", "--client", "codex")),
    ("claude_dollar_brace", ("REG-05",), ("{dollar}", "--client", "claude")),
    ("cursor_dollar_brace", ("REG-05",), ("{dollar}", "--client", "cursor")),
    ("vscode_dollar_brace", ("REG-05",), ("{dollar}", "--client", "vscode")),
    ("windsurf_dollar_brace", ("REG-05",), ("{dollar}", "--client", "windsurf")),
    ("gemini_dollar", ("REG-05",), ("{dollar}", "--client", "gemini")),
    ("continue_json", ("REG-03",), ("--json", "{ws}", "--client", "continue")),
    ("zed_http", ("REG-07",), ("{ws}", "--client", "zed", "--url", _LOOPBACK_URL, "--token-env", _TOKEN_ENV)),
    ("generic_http", ("REG-07",), ("{ws}", "--url", _LOOPBACK_URL, "--token-env", _TOKEN_ENV)),
    ("query", ("REG-07",), ("{ws}", "--client", "claude", "--url", _LOOPBACK_URL + "?a=b", "--token-env", "T")),
    ("fragment", ("REG-07",), ("{ws}", "--client", "cursor", "--url", _LOOPBACK_URL + "#x", "--token-env", "T")),
    (
        "credentials",
        ("REG-07",),
        ("{ws}", "--client", "codex", "--url", "http://u:p@127.0.0.1:8765/mcp", "--token-env", "T"),
    ),
    (
        "remote_host",
        ("REG-07",),
        ("{ws}", "--client", "codex", "--url", "http://192.0.2.1:8765/mcp", "--token-env", "T"),
    ),
    (
        "other_path",
        ("REG-07",),
        ("{ws}", "--client", "codex", "--url", "http://127.0.0.1:8765/sse", "--token-env", "T"),
    ),
    (
        "write_flag_http",
        ("REG-07",),
        ("{ws}", "--client", "codex", "--url", _LOOPBACK_URL, "--token-env", "T", "--allow-write"),
    ),
    (
        "approvals_flag_http",
        ("REG-07",),
        ("{ws}", "--client", "claude", "--url", _LOOPBACK_URL, "--token-env", "T", "--allow-approvals"),
    ),
)
"""Refused invocations: sub-check name, ids, arguments (``{ws}``/``{dollar}`` pick the workspace)."""


@check("registration:refusals", covers=["REG-03", "REG-05", "REG-07"], timeout_seconds=120)
async def refusals(ctx: Context) -> CheckResult:
    """Each refused ``mcp register`` exits 2 with a message on stderr and prints nothing on stdout."""
    dollar = ctx.scratch / "proj ${HOME}"
    dollar.mkdir()
    subs: list[SubResult] = []
    for name, covers, spec in _REFUSALS:
        args = list(spec)
        json_flag = args[0] == "--json"
        if json_flag:
            args.pop(0)
        workspace = dollar if args.pop(0) == "{dollar}" else ctx.project
        argv = [
            *ctx.target,
            *(["--json"] if json_flag else []),
            "--workspace",
            str(workspace),
            "mcp",
            "register",
            *args,
        ]
        done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        problems: list[str] = []
        if done.timed_out or done.returncode != 2:
            problems.append(f"exit {done.returncode}, expected 2")
        if done.stdout:
            problems.append(f"stdout not empty: {tail(done.stdout, 200)!r}")
        if not done.stderr.strip():
            problems.append("no message on stderr")
        detail = "; ".join(problems) if problems else f"exit 2: {tail(done.stderr, 160)}"
        subs.append(SubResult(f"registration:refusals:{name}", covers, not problems, detail))
    return CheckResult.tallied(subs, "refusals held")


@check("registration:claude_http_connected", covers=["REG-08", "REG-06"], timeout_seconds=150)
async def claude_http_connected(ctx: Context) -> CheckResult:
    """Claude Code connects to a running gateway through the ``--client claude --url`` entry.

    The check starts ``mcp serve --http 127.0.0.1:0`` with a fresh token in its environment,
    takes the loopback address the gateway reports on stderr, registers it, and gives Claude
    Code the same variable.
    """
    claude = host_bin(ctx, "claude")
    if claude is None:
        return missing_host("claude")
    token = os.urandom(32).hex()
    argv = ctx.serve_argv("--http", "127.0.0.1:0", "--token-env", _TOKEN_ENV)
    proc = await start_process(
        argv,
        env={**ctx.env, _TOKEN_ENV: token},
        cwd=ctx.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stderr = bytearray()
    announced = anyio.Event()
    result = CheckResult(False, "the Claude Code session over HTTP did not finish")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(drain, proc.stderr, stderr, announce=(_ADDRESS, announced)))
            try:
                result = await _claude_over_http(ctx, claude, token, stderr, announced)
            finally:
                tg.cancel_scope.cancel()
    finally:
        await reap(proc)
    return result


async def _claude_over_http(
    ctx: Context, claude: Path, token: str, stderr: bytearray, announced: anyio.Event
) -> CheckResult:
    """Wait for the gateway's address, register it for Claude Code, and let Claude connect."""
    with anyio.move_on_after(min(_GATEWAY_READY_SECONDS, ctx.remaining())):
        await announced.wait()
    found = _ADDRESS.search(stderr.decode("utf-8", "replace"))
    if found is None:
        return CheckResult(False, f"the gateway reported no loopback address (stderr: {tail(bytes(stderr))})")
    url = f"http://{found.group(1)}:{int(found.group(2))}/mcp"
    # The variable is set while registering, as a user's shell would have it: only its name may be printed.
    registering = {_TOKEN_ENV: token}
    done, problem = await register(ctx, "--client", "claude", "--url", url, "--token-env", _TOKEN_ENV, env=registering)
    if problem:
        return CheckResult(False, problem)
    if token in done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace"):
        return CheckResult(False, "the printed snippet contains the token value")
    try:
        entry = _json_entry(done)
    except (ValueError, KeyError) as exc:
        return CheckResult(False, f"not a Claude Code HTTP snippet: {exc!r}: {tail(done.stdout)}")
    return await _claude_connects(ctx, claude, entry, host_env(ctx, **{_TOKEN_ENV: token}))


@check("registration:registered_command_keeps_its_profile", covers=["REG-01"], timeout_seconds=180)
async def registered_command_keeps_its_profile(ctx: Context) -> CheckResult:
    """The printed command, started with only ``HOME`` and ``PATH`` as a host would, opens the same profile.

    Hosts start servers with an environment of their own (Codex passes a short fixed list),
    so the profile chosen with ``SHADOWCODE_HOME`` and ``--profile`` must travel in the entry
    itself. The check trusts the project in profile ``pinned`` under the check's root, prints
    the codex and generic entries with ``--profile pinned``, starts each with ``HOME`` set to
    an empty folder, ``PATH`` and the entry's own ``env`` only, and reads ``shadow_status``:
    the project must be trusted there.
    """
    pinned = [*ctx.target, "--profile", "pinned", "--workspace", str(ctx.project)]
    trust = await ctx.run(
        [*pinned, "trust", "--level", "read_only", str(ctx.project)], timeout_seconds=_COMMAND_TIMEOUT_SECONDS
    )
    if problem := failed("trust", trust):
        return CheckResult(False, problem)
    bare_home = ctx.scratch / "bare home"
    bare_home.mkdir()
    subs: list[SubResult] = []
    for client in ("codex", "generic"):
        argv = [*pinned, "mcp", "register", "--client", client]
        done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
        if problem := failed(f"mcp register --client {client}", done):
            subs.append(SubResult(f"registration:keeps_profile:{client}", ("REG-01",), False, problem))
            continue
        text = done.stdout.decode("utf-8")
        try:
            entry = (
                tomllib.loads(text)["mcp_servers"][_NAME]
                if client == "codex"
                else json.loads(text)["mcpServers"][_NAME]
            )
        except (ValueError, KeyError) as exc:
            subs.append(
                SubResult(f"registration:keeps_profile:{client}", ("REG-01",), False, f"unreadable entry: {exc!r}")
            )
            continue
        env = {"HOME": str(bare_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict(entry.get("env") or {})}
        ok, detail = await _trusted_under(ctx, entry, env)
        subs.append(SubResult(f"registration:keeps_profile:{client}", ("REG-01",), ok, detail))
    broken = [f"{sub.name}: {sub.detail}" for sub in subs if not sub.ok]
    if broken:
        return CheckResult(False, "; ".join(broken), subresults=subs)
    return CheckResult(
        True, "codex and generic entries opened the trusted profile with only HOME and PATH", subresults=subs
    )


async def _trusted_under(ctx: Context, entry: Mapping[str, Any], env: Mapping[str, str]) -> tuple[bool, str]:
    """Start ``entry`` with exactly ``env`` and report whether ``shadow_status`` sees the project trusted."""
    command, args = entry.get("command"), json_array(entry.get("args"))
    if not isinstance(command, str) or args is None:
        return False, f"no command and args in {entry!r}"
    params = StdioServerParameters(command=command, args=[str(a) for a in args], env=dict(env), cwd=str(ctx.scratch))
    log = ctx.scratch / f"keeps-profile-{len(list(ctx.scratch.glob('keeps-profile-*')))}.log"
    try:
        with (
            log.open("w", encoding="utf-8") as errlog,
            anyio.fail_after(max(1.0, min(_HEALTH_TIMEOUT_SECONDS, ctx.remaining()))),
        ):
            async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                result = await client.call_tool("shadow_status", {})
    except Exception as exc:  # a failed session is the finding; quote the server's stderr
        return False, f"session failed: {type(exc).__name__}: {exc} (stderr: {tail(log.read_bytes())})"
    status = json_object(result.structured_content) or {}
    project = json_member(status, "project")
    profile = status.get("profile")
    name = found.get("name") if (found := json_object(profile)) is not None else profile
    if result.is_error or project.get("trusted") is not True or name != "pinned":
        return False, f"profile {name!r}, project {project!r}: the trust given in 'pinned' is not seen"
    return True, f"profile {name!r} sees the project trusted at {project.get('level')!r}"
