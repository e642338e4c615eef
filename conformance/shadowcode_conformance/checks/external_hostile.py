"""Remote servers that attack the client during sign-in, over HTTP and through the terminal, seen from outside.

Covers CW-04, CW-07, CW-08, CLI-13, CLI-15, CLI-16, CLI-17, CLI-18.

The target is driven only through its command line, with the helpers of
:mod:`shadowcode_conformance.checks.external_servers`; every server runs on 127.0.0.1.

* ``sign_in_bounds``: ``fixtures/servers/oauth_server.py`` answers the authorization server
  metadata, the client registration, the token exchange and a refresh with a compression bomb
  (2.4 KiB sent as ``gzip, gzip``, 1 GiB inflated). ``mcp login`` (and, for the refresh,
  ``mcp tools`` starting a connection with an expired sign-in) runs under
  ``fixtures/peak_rss.py``: it must exit 1 naming the compressed reply, with a peak resident
  memory under 100 MiB. Without any metadata, ``mcp login`` must send nothing to a guessed
  ``/register``, ``/authorize`` or ``/token`` (the fixture lists every request it received).
* ``http_session``: a strict legacy Streamable HTTP server in this process answers
  ``notifications/initialized`` slowly and refuses a ``tools/list`` that comes before it; its
  tools answer with a header block of 10,000 short headers (the call must fail naming the
  16 KiB limit), never (a 1 s ``call_timeout``: the ``notifications/cancelled`` for the call's
  id must reach the server before the session's ``DELETE``, although the task ends right
  after) and with a 404 for the session (no ``DELETE`` may follow).
* ``terminal_text``: ``fixtures/servers/hostile_server.py escapes`` puts clear-screen,
  window-title, colour, carriage-return, bidi and C1 sequences and a faked line into every
  string; ``mcp tools`` and ``jobs ID --follow`` (after a Build task whose call failed with such
  an error) must print no control character but line ends, each value on its own line, and
  ``--json`` must keep the strings whole. ``bad_name`` servers (a name with a newline, 5,000
  characters, ``../../etc/passwd``) are refused at discovery with the name escaped.
"""

from __future__ import annotations

import json
import re
import unicodedata
from contextlib import suppress
from typing import Any, cast

import anyio
import anyio.abc

from shadowcode_conformance.checks.external_oauth import (
    FixtureDidNotStart,
    fixture_control,
    oauth_fixture,
    play_browser,
    register_secure,
)
from shadowcode_conformance.checks.external_servers import (
    add_model,
    check_result,
    cli,
    enable_server,
    initialize_result,
    register_server,
    rpc_result,
    run_task,
    tool_turns,
    trust_workspace,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.loopback_http import read_request
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["http_session", "sign_in_bounds", "terminal_text"]

_PEAK_MAX_MIB = 100
_URL_LINE = re.compile(rb"authorization URL: (\S+)")
_HEADERS_MAX_BYTES = 16 * 1024
ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[41m\rRED\u202eevil\x9b2J\napprove with: yes"
"""What ``hostile_server.py escapes`` puts in every string."""


def _raw_controls(text: str) -> list[str]:
    """Characters a terminal would act on or hide, line ends aside."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]


# -- sign-in bounds (CW-08) -------------------------------------------------------------------


async def _measured(ctx: Context, name: str, args: list[str], *, play: bool) -> tuple[int | None, str, float]:
    """Run ``<target> ARGS`` under peak_rss.py (playing the browser when ``play``).

    Returns:
        The exit status, stdout and stderr together, and the peak RSS in MiB (-1 when unknown).
    """
    report = ctx.scratch / f"peak-{name}"
    argv = [helper_python(), str(ctx.repo_root / "fixtures/peak_rss.py"), str(report), *ctx.target_argv(*args)]
    out, err = bytearray(), bytearray()
    code: int | None = None
    with anyio.move_on_after(min(120, ctx.remaining())):
        async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stdout, out)
            tg.start_soon(drain, proc.stderr, err)
            if play:
                while not _URL_LINE.search(err) and proc.returncode is None:
                    await anyio.sleep(0.05)
                found = _URL_LINE.search(err)
                if found is not None:
                    await play_browser(found.group(1).decode())
            code = await proc.wait()
    try:
        peak = int(report.read_text(encoding="utf-8")) / 1024
    except (OSError, ValueError):
        peak = -1.0
    return code, (out + err).decode("utf-8", "replace"), peak


@check("external_hostile:sign_in_bounds", covers=["CW-08"], timeout_seconds=600)
async def sign_in_bounds(ctx: Context) -> CheckResult:
    """Sign-in bombs are refused under 100 MiB; without metadata nothing goes to a guessed endpoint."""
    problems: list[str] = []
    peaks: dict[str, float] = {}
    try:
        async with oauth_fixture(ctx) as origin:
            try:
                server_id = await register_secure(ctx, origin, problems)
            except (RuntimeError, TimeoutError, OSError) as exc:
                return CheckResult(False, f"set-up failed: {exc}")
            if server_id is not None:
                await _bombs(ctx, origin, peaks, problems)
                await _guessed(ctx, origin, problems)
    except FixtureDidNotStart as exc:
        return CheckResult(False, str(exc))
    shown = ", ".join(f"{case} {mib:.0f} MiB" for case, mib in peaks.items())
    return check_result(
        problems,
        f"every sign-in bomb refused before inflating (peak RSS: {shown}); nothing sent to a guessed endpoint",
        {"peak_rss_mib": peaks},
    )


async def _bombs(ctx: Context, origin: str, peaks: dict[str, float], problems: list[str]) -> None:
    login = ["mcp", "login", "secure", "--no-browser"]
    for case in ("metadata", "registration", "token"):
        await fixture_control(origin, bad=f"bomb-{case}", bomb_mib=1024)
        code, text, peaks[case] = await _measured(ctx, case, login, play=case == "token")
        _judge(case, code, text, peaks[case], problems)
    await fixture_control(origin, bad=None, expires_in=1)
    code, text, _ = await _measured(ctx, "signed-in", login, play=True)
    if code != 0:
        problems.append(f"the sign-in before the refresh case failed (exit {code}): {tail(text)}")
        return
    await fixture_control(origin, bad="bomb-refresh", expires_in=3600)
    code, text, peaks["refresh"] = await _measured(ctx, "refresh", ["mcp", "tools", "secure"], play=False)
    _judge("refresh", code, text, peaks["refresh"], problems)
    await fixture_control(origin, bad=None)


def _judge(case: str, code: int | None, text: str, peak: float, problems: list[str]) -> None:
    if code != 1 or "compressed reply" not in text:
        problems.append(f"{case} bomb: expected exit 1 naming the compressed reply, got {code}: {tail(text)}")
    if not 0 < peak < _PEAK_MAX_MIB:
        problems.append(f"{case} bomb: peak RSS {peak:.0f} MiB (must stay under {_PEAK_MAX_MIB} MiB)")


async def _guessed(ctx: Context, origin: str, problems: list[str]) -> None:
    await fixture_control(origin, bad="no-metadata", requests=[])
    before = (await fixture_control(origin))["registrations"]
    code, _, err = await cli(ctx, "mcp", "login", "secure", "--no-browser")
    seen = await fixture_control(origin)
    await fixture_control(origin, bad=None)
    if code != 1 or "guessed endpoints" not in err:
        problems.append(f"without metadata: expected exit 1 refusing guessed endpoints, got {code}: {tail(err)}")
    posts = [r for r in seen["requests"] if not str(r).startswith("GET ")]
    if seen["registrations"] != before or posts != ["POST /mcp"]:
        problems.append(f"without metadata the login sent {posts} ({seen['registrations'] - before} registrations)")


# -- a strict, hostile legacy HTTP server (CLI-16, CLI-17, CLI-18, CW-07) ------------------------------


class _Strict:
    """A legacy Streamable HTTP server: slow to take ``notifications/initialized``, strict about order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, Any]] = []  # (session, what, detail)
        self.sessions = 0
        self.initialized: set[str] = set()
        self.early_lists = 0

    def _head(self, status: int, headers: dict[str, str], body: bytes) -> bytes:
        lines = [f"HTTP/1.1 {status} X", *(f"{k}: {v}" for k, v in headers.items())]
        lines += [f"content-length: {len(body)}", "connection: close"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def reply(self, method: str, session: str, message: dict[str, Any]) -> bytes | None:
        rpc, rid = message.get("method"), message.get("id")
        self.log.append((session, method if method != "POST" else str(rpc), message.get("params")))
        if method == "DELETE":
            return self._head(200, {}, b"")
        if method != "POST":
            return self._head(405, {}, b"")
        json_head = {"content-type": "application/json"}
        if rpc == "notifications/initialized":
            await anyio.sleep(0.3)
            self.initialized.add(session)
        if rid is None:
            return self._head(202, {}, b"")
        if rpc == "initialize":
            self.sessions += 1
            info = initialize_result("s")
            return self._head(200, json_head | {"mcp-session-id": f"s{self.sessions}"}, rpc_result(rid, info))
        if rpc == "tools/list":
            if session not in self.initialized:
                self.early_lists += 1
                error = {"code": -32600, "message": "tools/list before notifications/initialized"}
                return self._head(400, json_head, json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode())
            schema = {"type": "object", "properties": {"text": {"type": "string"}}}
            tools = [{"name": n, "inputSchema": schema} for n in ("flood", "slow", "expire")]
            return self._head(200, json_head, rpc_result(rid, {"tools": tools}))
        if rpc == "tools/call":
            name = message["params"]["name"]
            if name == "flood":
                headers = {f"x{i:05d}": f"{i:09d}" for i in range(10_000)}
                return self._head(200, json_head | headers, rpc_result(rid, {"content": []}))
            if name == "slow":
                await anyio.sleep(30)
                return None
            return self._head(404, {}, b"")
        error = {"code": -32600, "message": "no"}
        return self._head(400, json_head, json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode())

    async def serve_one(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                if (request := await read_request(stream)) is None:
                    return
                head, message = request
                session = dict(head.headers).get(b"mcp-session-id", b"").decode()
                reply = await self.reply(head.method.decode(), session, message)
                if reply is not None:
                    await stream.send(reply)


@check("external_hostile:http_session", covers=["CLI-15", "CLI-16", "CLI-17", "CLI-18", "CW-07"], timeout_seconds=400)
async def http_session(ctx: Context) -> CheckResult:
    """initialized first; 10,000 headers name the limit; a timed-out cancel is flushed; no DELETE after a 404."""
    problems: list[str] = []
    strict = _Strict()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, strict.serve_one)
        try:
            await trust_workspace(ctx, ctx.project)
            url = f"http://127.0.0.1:{port}/mcp"
            server_id = await register_server(
                ctx, {"name": "strict", "url": url, "call_timeout": 1}, ctx.project, problems
            )
            tasks = [
                {
                    "match": f"call {t}",
                    "turns": tool_turns(("mcp_call", {"server": "strict", "tool": t, "arguments": {}})),
                }
                for t in ("flood", "slow", "expire")
            ]
            await add_model(ctx, tasks)
        except RuntimeError as exc:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"set-up failed: {exc}")
        if server_id is not None:
            causes = {
                "flood": f"more than {_HEADERS_MAX_BYTES} bytes of headers",
                "slow": "did not finish within 1",
                "expire": "ended the session (HTTP 404)",
            }
            for tool, cause in causes.items():
                expected: list[dict[str, Any]] = [{"server": server_id, "tool": tool, "arguments": {}}]
                _, events = await run_task(ctx, f"call {tool}", ctx.project, expected, problems)
                text = json.dumps([e["data"] for e in events], ensure_ascii=False)
                if cause not in text:
                    problems.append(f"the {tool} call did not fail with {cause!r}: {text[-300:]}")
            _session_order(strict, problems)
        tg.cancel_scope.cancel()
    return check_result(
        problems,
        "initialized taken before tools/list; 10,000 headers named the 16 KiB limit; the timed-out call's "
        "cancellation reached the server before DELETE; no DELETE after the 404",
    )


def _session_order(strict: _Strict, problems: list[str]) -> None:
    if strict.early_lists:
        problems.append(f"{strict.early_lists} tools/list requests came before notifications/initialized was taken")
    calls = {
        str(cast("dict[str, Any]", params)["name"]): session  # a JSON object, as checked below
        for session, what, params in strict.log
        if what == "tools/call" and isinstance(params, dict)
    }
    slow, expire = calls.get("slow"), calls.get("expire")
    if slow is None or expire is None:
        problems.append(f"the server did not receive the slow and expire calls: {sorted(calls)}")
        return
    order = [what for session, what, _ in strict.log if session == slow]
    if "notifications/cancelled" not in order:
        problems.append(f"the timed-out call's notifications/cancelled never reached the server: {order}")
    elif "DELETE" in order and order.index("DELETE") < order.index("notifications/cancelled"):
        problems.append(f"the session was deleted before the cancellation was sent: {order}")
    if any(session == expire and what == "DELETE" for session, what, _ in strict.log):
        problems.append("a DELETE was sent for a session the server had ended with a 404")


# -- the terminal (CW-04, CLI-13) ---------------------------------------------------------------


@check("external_hostile:terminal_text", covers=["CW-04", "CLI-13", "ENG-08"], timeout_seconds=300)
async def terminal_text(ctx: Context) -> CheckResult:
    """mcp tools and jobs --follow show a server's escape sequences inert; invalid tool names are refused."""
    problems: list[str] = []
    fixture = str(ctx.repo_root / "fixtures/servers/hostile_server.py")
    folder = ctx.project / ".shadowcode/mcp"
    folder.mkdir(parents=True, exist_ok=True)
    servers = {"esc": ["escapes"], "bad0": ["bad_name", "0"], "bad1": ["bad_name", "1"], "bad2": ["bad_name", "2"]}
    try:
        await trust_workspace(ctx, ctx.project)
        for name, mode in servers.items():
            definition = {"name": name, "command": [helper_python(), fixture, *mode], "timeout_sec": 10}
            (folder / f"{name}.json").write_text(json.dumps(definition), encoding="utf-8")
            await enable_server(ctx, f"project:.shadowcode/mcp/{name}.json", ctx.project)
        call = ("mcp_call", {"server": "esc", "tool": "fail", "arguments": {"text": ESCAPES}})
        await add_model(ctx, [{"match": "use esc", "turns": [*tool_turns(call)[:-1], {"content": "done" + ESCAPES}]}])
    except RuntimeError as exc:
        return CheckResult(False, f"set-up failed: {exc}")
    code, out, _ = await cli(ctx, "mcp", "tools", "esc")
    lines = out.splitlines()
    if code != 0 or _raw_controls(out) or len(lines) != 6 or "\\x1b]0;owned\\x07" not in out:
        problems.append(f"mcp tools esc (exit {code}) printed {len(lines)} lines, raw {_raw_controls(out)[:5]}")
    code, out, _ = await cli(ctx, "mcp", "tools", "esc", "--json")
    with suppress(ValueError, KeyError, IndexError):
        if json.loads(out)["tools"][0]["title"] != "Echo" + ESCAPES:
            problems.append("mcp tools --json did not keep the title whole")
    for name in ("bad0", "bad1", "bad2"):
        code, out, _ = await cli(ctx, "mcp", "tools", name)
        if code != 1 or "not a valid MCP tool name" not in out or len(out.splitlines()) != 1 or _raw_controls(out):
            problems.append(f"mcp tools {name}: exit {code}, {tail(out)}")
    esc_id = "project:.shadowcode/mcp/esc.json"
    expected = [{"server": esc_id, "tool": "fail", "arguments": {"text": ESCAPES}}]
    job, _ = await run_task(ctx, "use esc", ctx.project, expected, problems)
    if job.get("id"):
        code, out, _ = await cli(ctx, "jobs", str(job["id"]), "--follow")
        faked = [line for line in out.splitlines() if line.startswith(("approve with", "RED"))]
        if _raw_controls(out) or faked or "\\x1b[2J" not in out:
            problems.append(f"jobs --follow printed raw controls {_raw_controls(out)[:5]} or faked lines {faked}")
    return check_result(
        problems, "escape sequences shown inert in mcp tools and jobs --follow; invalid tool names refused"
    )
