"""The authenticated loopback HTTP gateway from the outside.

Covers GW-01, GW-02, GW-03, GW-04, GW-05, GW-06, GW-07, GW-08, CONF-02, CONF-03.

Every check starts ``<target> --workspace P mcp serve --http 127.0.0.1:0 --token-env NAME``
with a fresh random token in that variable, reads the address the gateway announces on
stderr, and talks to it:

* ``gateway:startup``: the ready line, an empty stdout, stdin EOF ignored, SIGTERM exit 0.
* ``gateway:refusals``: hostile requests on raw sockets (token, Host, a second Host, Origin,
  query, duplicated metadata headers, methods, legacy paths, body size, slow heads, the 33rd
  connection, the 129th request in a second) and refused start-ups (non-loopback binds,
  a token on the command line, tokens of 31 and 513 characters); tokens of exactly 32 and
  512 characters start a gateway that answers.
* ``gateway:python_sdk``: the Python SDK client in both eras, no session id.
* ``gateway:http_sdk1`` / ``gateway:http_sdk2``: the TypeScript SDK probes over HTTP
  (discovery, an exact approval, a native test job, a second connection sees the job).
* ``gateway:inspector_cli``: ``@modelcontextprotocol/inspector-cli --cli`` lists the tools.
* ``gateway:dropped_request_keeps_job``: a client that sends ``shadow_run`` and closes its
  connection before the answer leaves a job that runs to its end, seen by a new connection.
* ``gateway:kill_scenario``: CONF-03's SIGKILL of a gateway whose owner runs an approved
  long command and has a task queued behind a busy model, beside an unrelated detached task.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.abc

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.limits import CLEANUP_WAIT_SECONDS
from shadowcode_conformance.processes import drain, kill_group, reap, start_process, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "dropped_request_keeps_job",
    "http_sdk1",
    "http_sdk2",
    "inspector_cli",
    "kill_scenario",
    "python_sdk",
    "refusals",
    "startup",
]

_TOKEN_ENV = "SHADOW_MCP_HTTP_TOKEN"
_READY_SECONDS = 30.0
_REQUEST_SECONDS = 10.0
_ADDRESS = re.compile(r"(127\.0\.0\.1|\[::1\]|localhost):([1-9]\d{0,4})\b")
_CONNECTIONS_MAX = 32
"""GW-07: concurrent TCP connections."""
_REQUESTS_PER_SECOND_MAX = 128
"""GW-07: requests in one second."""
_FLOOD_ATTEMPTS = 6
"""Request bursts sent at most while each is too slow to reach the per-second limit."""
_BODY_MAX_BYTES = 1024 * 1024
"""GW-07: request body bytes."""
_HEADER_DEADLINE_SECONDS = 5.0
"""GW-07: seconds to receive a request head."""
_PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
_T = TypeVar("_T")


@dataclass
class Gateway:
    """A running gateway process and what it wrote."""

    proc: anyio.abc.Process
    token: str
    stderr: bytearray = field(default_factory=bytearray)
    stdout: bytearray = field(default_factory=bytearray)
    host: str = ""
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"


@asynccontextmanager
async def start_gateway(ctx: Context, *flags: str, token: str | None = None) -> AsyncGenerator[Gateway, None]:
    """Start the target's gateway and wait for its address; it is killed when the block ends.

    Raises:
        AssertionError: no address was announced in time (the message quotes stderr).
    """
    value = token or os.urandom(32).hex()
    proc = await start_process(
        ctx.serve_argv("--http", "127.0.0.1:0", "--token-env", _TOKEN_ENV, *flags),
        env={**ctx.env, _TOKEN_ENV: value},
        cwd=ctx.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    gw = Gateway(proc, value)
    seen = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(drain, proc.stderr, gw.stderr, announce=(_ADDRESS, seen)))
            tg.start_soon(drain, proc.stdout, gw.stdout)
            with anyio.move_on_after(min(_READY_SECONDS, ctx.remaining())):
                await seen.wait()
            found = _ADDRESS.search(gw.stderr.decode("utf-8", "replace"))
            if found is None:
                raise AssertionError(f"the gateway announced no loopback address (stderr: {tail(bytes(gw.stderr))})")
            gw.host, gw.port = found.group(1), int(found.group(2))
            try:
                yield gw
            finally:
                tg.cancel_scope.cancel()
    finally:
        await reap(proc)


def _raw(
    gw: Gateway,
    *,
    method: str = "POST",
    target: str = "/mcp",
    host: str | None = None,
    token: str | None = None,
    body: bytes = _PING,
    extra: tuple[tuple[str, str], ...] = (),
    auth: bool = True,
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host if host is not None else f'{gw.host}:{gw.port}'}"]
    if auth:
        lines.append(f"Authorization: Bearer {token if token is not None else gw.token}")
    lines += ["Content-Type: application/json", "Accept: application/json, text/event-stream"]
    lines += [f"Content-Length: {len(body)}", *(f"{n}: {v}" for n, v in extra)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read(stream: anyio.abc.SocketStream, bound: float = _REQUEST_SECONDS) -> bytes:
    data = bytearray()
    with anyio.move_on_after(bound):
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            while True:
                data += await stream.receive()
    return bytes(data)


def _status(answer: bytes) -> int:
    try:
        return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0
    except (IndexError, ValueError):
        return 0


async def _exchange(gw: Gateway, raw: bytes) -> int:
    async with await anyio.connect_tcp(gw.host.strip("[]"), gw.port) as stream:
        with suppress(anyio.BrokenResourceError, OSError):
            await stream.send(raw)
        return _status(await _read(stream))


async def _stop(gw: Gateway, sig: signal.Signals = signal.SIGTERM) -> int | None:
    with suppress(ProcessLookupError):
        gw.proc.send_signal(sig)
    with anyio.move_on_after(40):
        return await gw.proc.wait()
    return None


# --- startup --------------------------------------------------------------------------------


@check("gateway:startup", covers=["GW-01", "GW-02"], timeout_seconds=90)
async def startup(ctx: Context) -> CheckResult:
    """The ready address comes on stderr, stdout stays empty, stdin EOF is ignored, SIGTERM stops it."""
    try:
        async with start_gateway(ctx) as gw:
            if gw.proc.stdin is not None:
                await gw.proc.stdin.aclose()
            with anyio.fail_after(_REQUEST_SECONDS):
                while gw.proc.returncode is None and b"ready" not in gw.stderr:
                    await anyio.sleep(0.05)
            status = await _exchange(gw, _raw(gw))
            code = await _stop(gw)
            problems: list[str] = []
            if status != 200:
                problems.append(f"an authenticated ping after stdin EOF answered {status}")
            if code != 0:
                problems.append(f"SIGTERM: exit {code}")
            if gw.stdout:
                problems.append(f"stdout is not empty: {tail(bytes(gw.stdout), 200)!r}")
            if gw.token in gw.stderr.decode("utf-8", "replace"):
                problems.append("the token appears on stderr")
            detail = f"ready at {gw.url}; ping after stdin EOF {status}; SIGTERM exit {code}"
            return CheckResult(not problems, "; ".join(problems) or detail)
    except AssertionError as exc:
        return CheckResult(False, str(exc))


# --- refusals -------------------------------------------------------------------------------


async def _slow_head(gw: Gateway) -> tuple[int, float]:
    started = time.monotonic()
    raw = _raw(gw)
    async with await anyio.connect_tcp(gw.host.strip("[]"), gw.port) as stream:
        answer = bytearray()

        async def read(scope: anyio.CancelScope) -> None:
            answer.extend(await _read(stream, _HEADER_DEADLINE_SECONDS * 3))
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read, tg.cancel_scope)
            for byte in raw:
                try:
                    await stream.send(bytes([byte]))
                except (anyio.BrokenResourceError, OSError):
                    break
                await anyio.sleep(1.0)
    return _status(bytes(answer)), time.monotonic() - started


async def _connection_flood(gw: Gateway) -> int:
    held: list[anyio.abc.SocketStream] = []
    try:
        for _ in range(_CONNECTIONS_MAX):
            held.append(await anyio.connect_tcp(gw.host.strip("[]"), gw.port))
        await anyio.sleep(0.3)  # let the gateway accept all of them before the extra one
        return await _exchange(gw, _raw(gw))
    finally:
        for stream in held:
            await stream.aclose()


async def _request_flood(gw: Gateway) -> tuple[int, int, float]:
    """Send more than the per-second number of requests at once; returns (refused 429, others, seconds)."""
    statuses: list[int] = []
    limiter = anyio.CapacityLimiter(_CONNECTIONS_MAX - 4)
    raw = _raw(gw, token="x" * 40)

    async def one() -> None:
        async with limiter:
            statuses.append(await _exchange(gw, raw))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(_REQUESTS_PER_SECOND_MAX + 64):
            tg.start_soon(one)
    elapsed = time.monotonic() - started
    return statuses.count(429), len(statuses) - statuses.count(429), elapsed


async def _refused_start(ctx: Context, bind: str, *, token: str, extra: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Start the gateway in a way that must be refused: exit 2, nothing on stdout, the token never shown."""
    from shadowcode_conformance.processes import run_command

    argv = ctx.serve_argv("--http", bind, *(extra or ("--token-env", _TOKEN_ENV)))
    done = await run_command(argv, env={**ctx.env, _TOKEN_ENV: token}, cwd=ctx.cwd, timeout_seconds=30)
    problems: list[str] = []
    if done.returncode != 2:
        problems.append(f"exit {done.returncode}, expected 2")
    if done.stdout:
        problems.append("stdout not empty")
    if token in done.stderr.decode("utf-8", "replace"):
        problems.append("the token is echoed on stderr")
    return not problems, "; ".join(problems) or f"exit 2: {tail(done.stderr, 160)}"


@check("gateway:refusals", covers=["GW-01", "GW-03", "GW-04", "GW-05", "GW-07"], timeout_seconds=150)
async def refusals(ctx: Context) -> CheckResult:
    """Every hostile request and start-up of the gateway contract is refused with a plain HTTP error."""
    subs: list[SubResult] = []

    def add(name: str, covers: tuple[str, ...], ok: bool, detail: str) -> None:
        subs.append(SubResult(f"gateway:refusals:{name}", covers, ok, detail))

    try:
        async with start_gateway(ctx) as gw:
            own = f"{gw.host}:{gw.port}"
            other = f"{gw.host}:{gw.port + 1 if gw.port < 65535 else gw.port - 1}"
            padded = b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' + b"x" * _BODY_MAX_BYTES + b'"}'
            chunk = b"x" * 65536
            chunked = _raw(gw, body=b"").replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
            chunked += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(17)) + b"0\r\n\r\n"
            cases: list[tuple[str, tuple[str, ...], bytes, int]] = [
                ("accepted", ("GW-03",), _raw(gw), 200),
                ("missing_token", ("GW-03",), _raw(gw, auth=False), 401),
                ("wrong_token", ("GW-03",), _raw(gw, token="y" * 64), 401),
                ("short_token", ("GW-03",), _raw(gw, token=gw.token[:31]), 401),
                ("long_token", ("GW-03",), _raw(gw, token=gw.token + "z" * 449), 401),
                ("non_token_characters", ("GW-03",), _raw(gw, token=gw.token[:40] + "\x7f"), 401),
                ("token_in_query", ("GW-04",), _raw(gw, target=f"/mcp?access_token={gw.token}", auth=False), 400),
                ("host_evil", ("GW-04",), _raw(gw, host="evil.example"), 421),
                ("host_other_port", ("GW-04",), _raw(gw, host=other), 421),
                ("host_localhost_evil", ("GW-04",), _raw(gw, host=f"localhost.evil:{gw.port}"), 421),
                ("host_localhost_ok", ("GW-04",), _raw(gw, host=f"localhost:{gw.port}"), 200),
                ("host_duplicate", ("GW-04",), _raw(gw, extra=(("Host", "evil.example"),)), 400),
                ("origin_null", ("GW-04",), _raw(gw, extra=(("Origin", "null"),)), 403),
                ("origin_own", ("GW-04",), _raw(gw, extra=(("Origin", f"http://{own}"),)), 403),
                ("duplicate_protocol_version", ("GW-04",),
                 _raw(gw, extra=(("MCP-Protocol-Version", "2025-11-25"), ("MCP-Protocol-Version", "2025-11-25"))), 400),
                ("get", ("GW-05",), _raw(gw, method="GET", body=b""), 405),
                ("delete", ("GW-05",), _raw(gw, method="DELETE", body=b""), 405),
                ("sse_path", ("GW-05",), _raw(gw, target="/sse"), 404),
                ("messages_path", ("GW-05",), _raw(gw, target="/messages"), 404),
                ("body_over_1mib", ("GW-07",), _raw(gw, body=padded[: _BODY_MAX_BYTES + 1]), 413),
                ("chunked_over_1mib", ("GW-07",), chunked, 413),
            ]  # fmt: skip
            for name, covers, raw, expected in cases:
                got = await _exchange(gw, raw)
                add(name, covers, got == expected, f"answered {got}, expected {expected}")
            got = await _connection_flood(gw)
            add("connection_33", ("GW-07",), got == 429, f"the 33rd connection was answered {got}")
            # A burst that never went faster than the limit proves nothing either way (a loaded
            # machine may open fewer than 128 connections a second): one that took more than a
            # second with no 429 is sent again, at most _FLOOD_ATTEMPTS in all.
            slow: list[str] = []
            refused, others, seconds = 0, 0, 0.0  # _FLOOD_ATTEMPTS bursts (at least one) set these
            for _ in range(_FLOOD_ATTEMPTS):
                refused, others, seconds = await _request_flood(gw)
                if refused or seconds <= 1.0:
                    break
                slow.append(f"{(refused + others) / seconds:.0f}/s")
            # The window slides: in a burst lasting T seconds at most 128 * ceil(T) are served.
            bound = _REQUESTS_PER_SECOND_MAX * max(1, math.ceil(seconds))
            earlier = f" (bursts slower than the limit before it: {', '.join(slow)})" if slow else ""
            add(
                "request_129_in_a_second",
                ("GW-07",),
                refused > 0 and others <= bound,
                f"{refused} answered 429 and {others} served (at most {bound}) of {refused + others} sent "
                f"in {seconds:.2f} s{earlier}",
            )
            status, elapsed = await _slow_head(gw)
            add(
                "slow_head",
                ("GW-07",),
                status == 408 and elapsed < _HEADER_DEADLINE_SECONDS + 3,
                f"a head sent one byte a second was answered {status} after {elapsed:.1f} s",
            )
    except AssertionError as exc:
        return CheckResult(False, str(exc))
    token = os.urandom(32).hex()
    for name, bind in (("bind_any", "0.0.0.0:0"), ("bind_lan", "192.168.1.10:0"), ("bind_hostname", "localhost:0")):
        ok, detail = await _refused_start(ctx, bind, token=token)
        add(name, ("GW-03",), ok, detail)
    ok, detail = await _refused_start(ctx, "127.0.0.1:0", token=token, extra=("--token", token))
    add("token_on_command_line", ("GW-01",), ok, detail)
    for name, value in (("start_token_31", "a" * 31), ("start_token_513", "a" * 513)):
        ok, detail = await _refused_start(ctx, "127.0.0.1:0", token=value)
        add(name, ("GW-03",), ok, detail)
    for name, value in (("start_token_32", "b" * 32), ("start_token_512", "c" * 512)):
        try:
            async with start_gateway(ctx, token=value) as edge:
                got = await _exchange(edge, _raw(edge))
            add(name, ("GW-03",), got == 200, f"with a {len(value)}-character token a request was answered {got}")
        except* AssertionError as group:  # raised inside the gateway's task group, so it may come wrapped
            why = "; ".join(str(e) for e in group.exceptions)
            add(name, ("GW-03",), False, f"a {len(value)}-character token was refused at start: {why}")
    return CheckResult.tallied(subs, "refusals held")


# --- clients --------------------------------------------------------------------------------------


@check("gateway:python_sdk", covers=["GW-05", "SRV-03"], timeout_seconds=90)
async def python_sdk(ctx: Context) -> CheckResult:
    """The Python SDK client lists the seventeen tools over HTTP in both eras; no session id is issued."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    found: dict[str, Any] = {}
    try:
        async with start_gateway(ctx) as gw:
            for mode in ("auto", "legacy"):
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.token}"}, timeout=_REQUEST_SECONDS)
                async with http:
                    with anyio.fail_after(30):
                        async with Client(streamable_http_client(gw.url, http_client=http), mode=mode) as client:
                            tools = await client.list_tools()
                            revision = getattr(client, "protocol_version", None)
                found[mode] = {"tools": len(tools.tools), "revision": revision}
                if revision:
                    ctx.record_revision(f"gateway:python_sdk:{mode}", str(revision))
            async with httpx2.AsyncClient(timeout=_REQUEST_SECONDS) as http:
                params = {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {},
                          "clientInfo": {"name": "conformance", "version": "1"}}  # fmt: skip
                init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
                answer = await http.post(
                    gw.url,
                    json=init,
                    headers={"Authorization": f"Bearer {gw.token}", "Accept": "application/json, text/event-stream"},
                )
            session_id = answer.headers.get("mcp-session-id")
            kind = answer.headers.get("content-type", "")
    except AssertionError as exc:
        return CheckResult(False, str(exc))
    problems = [f"{m}: {v['tools']} tools" for m, v in found.items() if v["tools"] != 17]
    if found.get("auto", {}).get("revision") not in (None, MODERN_REVISION):
        problems.append(f"auto negotiated {found['auto']['revision']}")
    if session_id:
        problems.append("initialize issued an Mcp-Session-Id")
    if not kind.startswith("application/json"):
        problems.append(f"initialize answered {kind!r}, not JSON")
    return CheckResult(not problems, "; ".join(problems) or f"both eras list 17 tools, no session id: {found}", found)


async def _node_probe(ctx: Context, probe: str) -> CheckResult:
    from shadowcode_conformance.checks.node_stdio import probe_document, probe_verdict, trusted_probe

    found = await trusted_probe(ctx, probe)
    if isinstance(found, CheckResult):
        return found
    node, script = found
    from shadowcode_conformance.processes import run_command

    try:
        async with start_gateway(ctx, "--allow-write", "--allow-approvals") as gw:
            budget = max(10.0, ctx.remaining() - 15)
            argv = [node, str(script), "--url", gw.url, "--token-env", _TOKEN_ENV,
                    "--workspace", str(ctx.project), "--timeout-ms", str(int(budget * 1000))]  # fmt: skip
            done = await run_command(
                argv, env={**ctx.env, _TOKEN_ENV: gw.token}, cwd=ctx.cwd, timeout_seconds=budget + 5
            )
    except AssertionError as exc:
        return CheckResult(False, str(exc))
    read = probe_document(ctx, done, probe, revision_name=f"gateway:{probe}")
    if isinstance(read, CheckResult):
        return read
    doc, subs = read
    subs = [SubResult(f"gateway:{s.name}", s.covers, s.ok, s.detail) for s in subs]
    head = f"{doc.get('sdk')} {doc.get('sdk_version')} over HTTP at {doc.get('protocol_version')}"
    return probe_verdict(doc, subs, done, head)


@check("gateway:http_sdk1", covers=["CONF-02", "GW-05"], timeout_seconds=150)
async def http_sdk1(ctx: Context) -> CheckResult:
    """The TypeScript SDK 1.x client over HTTP: legacy initialization, discovery, approval, test job."""
    return await _node_probe(ctx, "http_sdk1")


@check("gateway:http_sdk2", covers=["CONF-02", "GW-05"], timeout_seconds=150)
async def http_sdk2(ctx: Context) -> CheckResult:
    """The TypeScript SDK 2.x client over HTTP: the modern revision, discovery, approval, test job."""
    return await _node_probe(ctx, "http_sdk2")


@check("gateway:inspector_cli", covers=["GW-05"], timeout_seconds=120)
async def inspector_cli(ctx: Context) -> CheckResult:
    """``inspector-cli --cli URL --transport http --header 'Authorization: Bearer ...' --method tools/list``."""
    from shadowcode_conformance.processes import run_command

    cli = ctx.repo_root / "node_probes" / "node_modules" / ".bin" / "mcp-inspector-cli"
    if not cli.exists():
        return CheckResult(
            False, "node_probes/node_modules/.bin/mcp-inspector-cli is missing; run npm ci in node_probes"
        )
    try:
        async with start_gateway(ctx) as gw:
            argv = [str(cli), "--cli", gw.url, "--transport", "http", "--header",
                    f"Authorization: Bearer {gw.token}", "--method", "tools/list"]  # fmt: skip
            # The CLI looks for "../package.json" relative to its working directory but imports it
            # relative to its own module, so it is run from its build folder, where both agree.
            build = cli.resolve().parent
            done = await run_command(argv, env=ctx.env, cwd=build, timeout_seconds=min(60, ctx.remaining()))
    except AssertionError as exc:
        return CheckResult(False, str(exc))
    try:
        names = sorted(t["name"] for t in json.loads(done.stdout.decode("utf-8"))["tools"])
    except (ValueError, KeyError, TypeError):
        return CheckResult(False, f"exit {done.returncode}; not a tools list: {tail(done.stdout)} {tail(done.stderr)}")
    return CheckResult(len(names) == 17, f"inspector-cli listed {len(names)} tools", {"tools": names})


# --- CONF-03: SIGKILL of the gateway ---------------------------------------------------------------


_KILL_SCRIPT_BUSY = {
    "tasks": [
        {"match": "unrelated", "turns": [{"content": "working slowly", "delay_seconds": 25}]},
        {"match": "", "turns": [{"content": "this queued task must never reach the model"}]},
    ]
}


def _runner_script(pidfile: Path) -> dict[str, Any]:
    argv = ["sh", "-c", f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 60"]
    turns = [{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}, {"content": "slept"}]
    return {"tasks": [{"match": "", "turns": turns}]}


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def _group_alive(pgid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False


async def _cli_json(ctx: Context, *args: str) -> dict[str, Any]:
    done = await ctx.run([*ctx.target, "--json", "--workspace", str(ctx.project), *args], timeout_seconds=30)
    if done.returncode != 0:
        raise AssertionError(f"`{' '.join(args)}` exited {done.returncode}: {tail(done.stderr)}")
    return dict(json.loads(done.stdout.decode("utf-8")))


async def _models(ctx: Context, logs: dict[str, Path], scripts: dict[str, dict[str, Any]]) -> None:
    for name, script in scripts.items():
        path = ctx.scratch / f"{name}.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        done = await ctx.run(
            [*ctx.target, "models", "add", name, "--provider", "scripted", "--script", str(path)], timeout_seconds=30
        )
        if done.returncode != 0:
            raise AssertionError(f"models add {name} exited {done.returncode}: {tail(done.stderr)}")
    settings = ctx.home / "profiles" / "default" / "settings.json"
    doc = json.loads(settings.read_text(encoding="utf-8"))
    for entry in doc.get("models", []):
        if entry.get("name") in logs:
            entry["request_log"] = str(logs[entry["name"]])
    settings.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _logged(log: Path, task_id: str | None = None) -> int:
    if not log.exists():
        return 0
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return len([x for x in lines if task_id is None or x.get("task_id") == task_id])


async def _wait(what: str, probe: Callable[[], Awaitable[_T]], bound: float) -> _T:
    with anyio.move_on_after(bound):
        while True:
            found = await probe()
            if found:
                return found
            await anyio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@check(
    "gateway:kill_scenario",
    covers=["CONF-03", "GW-06", "SRV-21", "SRV-22", "ENG-08"],
    timeout_seconds=180,
    own_engine=True,
)
async def kill_scenario(ctx: Context) -> CheckResult:
    """SIGKILL of a gateway: its command child dies, its queued task never reaches the model, others go on."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    facts: dict[str, Any] = {}
    busy_log, runner_log = ctx.scratch / "busy-requests.jsonl", ctx.scratch / "runner-requests.jsonl"
    pidfile = ctx.scratch / "command.pid"
    engine = await start_process(
        [*ctx.target, "engine"], env=ctx.env, cwd=ctx.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    engine_err = bytearray()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, engine.stderr, engine_err)
            try:
                trusted = await ctx.trust("workspace")
                if trusted.returncode != 0:
                    raise AssertionError(f"trust exited {trusted.returncode}: {tail(trusted.stderr)}")
                await _models(ctx, {"busy": busy_log, "runner": runner_log},
                              {"busy": _KILL_SCRIPT_BUSY, "runner": _runner_script(pidfile)})  # fmt: skip
                await _wait("the headless engine", lambda: _ready(engine_err), 30)
                unrelated = await _cli_json(ctx, "run", "--detach", "--model", "busy", "unrelated work")
                facts["unrelated"] = unrelated["job_id"]
                await _wait("the busy model's first request", _sync(lambda: _logged(busy_log) >= 1), 30)
                async with start_gateway(ctx, "--allow-write", "--allow-approvals") as gw:
                    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.token}"}, timeout=30)
                    async with http, Client(streamable_http_client(gw.url, http_client=http)) as client:
                        facts["command_job"] = await _owned_command(client, pidfile)
                        pid = int(
                            await _wait(
                                "the command's pid",
                                _sync(lambda: pidfile.exists() and pidfile.read_text(encoding="utf-8")),
                                30,
                            )
                        )
                        facts["command_pid"] = pid
                        queued = await _call(client, "shadow_run", {"prompt": "queued work", "model": "busy"})
                        facts["queued"] = queued["job_id"]
                        state = await _call(client, "shadow_jobs", {"action": "get", "job_id": facts["queued"]})
                        facts["queued_status_before"] = state["job"]["status"]
                    gw.proc.send_signal(signal.SIGKILL)
                    with anyio.move_on_after(CLEANUP_WAIT_SECONDS):
                        await gw.proc.wait()
                await _wait(
                    "the command child and its group to go",
                    _sync(lambda: not _pid_alive(pid) and not _group_alive(pid)),
                    20,
                )
                unrelated_now = (await _cli_json(ctx, "jobs", facts["unrelated"]))["job"]["status"]
                facts["unrelated_after_kill"] = unrelated_now
                queued_now = (await _cli_json(ctx, "jobs", facts["queued"]))["job"]["status"]
                facts["queued_after_kill"] = queued_now
                final = await _wait("the unrelated task to finish", lambda: _finished(ctx, facts["unrelated"]), 60)
                facts["unrelated_final"] = final
                facts["queued_requests"] = _logged(busy_log, facts["queued"])
            finally:
                tg.cancel_scope.cancel()
    except AssertionError as exc:
        return CheckResult(False, f"{exc} (facts: {facts}; engine stderr: {tail(bytes(engine_err))})", facts)
    finally:
        with anyio.CancelScope(shield=True):
            engine.send_signal(signal.SIGTERM)
            with anyio.move_on_after(CLEANUP_WAIT_SECONDS * 2):
                await engine.wait()
            kill_group(engine.pid)
            if engine.stderr is not None:
                with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await engine.stderr.aclose()
    problems: list[str] = []
    if facts.get("queued_status_before") not in ("queued", "running"):
        problems.append(f"the second owned task was {facts.get('queued_status_before')} before the kill")
    if facts.get("unrelated_after_kill") != "running":
        problems.append(f"the unrelated task was {facts.get('unrelated_after_kill')} right after the kill")
    if facts.get("unrelated_final") != "done":
        problems.append(f"the unrelated task ended {facts.get('unrelated_final')}")
    if facts.get("queued_after_kill") not in ("cancelled", "interrupted"):
        problems.append(f"the queued owned task is {facts.get('queued_after_kill')} after the kill")
    if facts.get("queued_requests"):
        problems.append(f"the queued owned task reached the model {facts['queued_requests']} time(s)")
    detail = (
        f"command child {facts.get('command_pid')} and its group gone; queued task {facts.get('queued_after_kill')} "
        f"with 0 model requests; unrelated task running after the kill, then {facts.get('unrelated_final')}"
    )
    return CheckResult(not problems, "; ".join(problems) or detail, facts)


def _sync(fn: Any) -> Any:
    async def probe() -> Any:
        return fn()

    return probe


async def _ready(buffer: bytearray) -> bool:
    return b"ready" in buffer


async def _finished(ctx: Context, job_id: str) -> str | None:
    status = str((await _cli_json(ctx, "jobs", job_id))["job"]["status"])
    return status if status in ("done", "failed", "cancelled", "interrupted") else None


async def _call(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise AssertionError(f"{name} failed: {result.content[0].text if result.content else ''}")
    return dict(result.structured_content or {})


async def _owned_command(client: Any, pidfile: Path) -> str:
    """Delegate the runner task, approve its exact command, and return the job id."""
    job = await _call(
        client, "shadow_run", {"prompt": "sleep a while", "model": "runner", "permission_level": "elevated"}
    )
    job_id = str(job["job_id"])

    async def pending() -> Any:
        state = await _call(client, "shadow_jobs", {"action": "get", "job_id": job_id})
        return state["pending_approvals"][0] if state["pending_approvals"] else None

    approval = await _wait("the command's approval", pending, 30)
    action = approval.get("action", approval)
    if str(pidfile) not in " ".join(action.get("argv") or []):
        raise AssertionError(f"the approval does not name the exact command: {approval}")
    await _call(client, "shadow_approve", {"approval_id": approval["id"], "decision": "approve"})
    return job_id


@check("gateway:dropped_request_keeps_job", covers=["GW-08", "GW-06"], timeout_seconds=120)
async def dropped_request_keeps_job(ctx: Context) -> CheckResult:
    """A ``shadow_run`` whose HTTP connection is closed before the answer still runs to its end."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    facts: dict[str, Any] = {}
    log = ctx.scratch / "slow-requests.jsonl"
    try:
        trusted = await ctx.trust("workspace")
        if trusted.returncode != 0:
            raise AssertionError(f"trust exited {trusted.returncode}: {tail(trusted.stderr)}")
        script = {"tasks": [{"match": "", "turns": [{"content": "thought it over", "delay_seconds": 1.5}]}]}
        await _models(ctx, {"slow": log}, {"slow": script})
        async with start_gateway(ctx) as gw:
            params = {"name": "shadow_run", "arguments": {"prompt": "take your time", "model": "slow"}}
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
            raw = _raw(gw, body=body, extra=(("MCP-Protocol-Version", LEGACY_REVISIONS[-1]),))
            async with await anyio.connect_tcp(gw.host.strip("[]"), gw.port) as stream:
                await stream.send(raw)  # and close at once, before any answer
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw.token}"}, timeout=_REQUEST_SECONDS)
            async with http, Client(streamable_http_client(gw.url, http_client=http)) as client:

                async def listed() -> Any:
                    return (await _call(client, "shadow_jobs", {"action": "list"}))["jobs"]

                jobs = await _wait("the dropped request's job", listed, 30)
                job_id = str(jobs[0].get("id") or jobs[0].get("job_id"))
                facts["job"] = job_id

                async def finished() -> Any:
                    state = await _call(client, "shadow_jobs", {"action": "get", "job_id": job_id})
                    status = state["job"]["status"]
                    return status if status in ("done", "failed", "cancelled", "interrupted") else None

                facts["status"] = await _wait("the job to finish", finished, 45)
            facts["model_requests"] = _logged(log, job_id)
            facts["exit"] = await _stop(gw)
    except AssertionError as exc:
        return CheckResult(False, f"{exc} (facts: {facts})", facts)
    ok = facts.get("status") == "done" and facts.get("model_requests", 0) >= 1
    detail = f"job {facts.get('job')} ended {facts.get('status')} after its request was dropped"
    return CheckResult(ok, detail, facts)
