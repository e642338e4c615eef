"""Signing in to a remote MCP server with OAuth, and a Build task using the sign-in, seen from outside.

Covers CW-08.

The target is driven only through its command line. The check starts
``fixtures/servers/oauth_server.py`` (an MCP server behind OAuth with its own authorization
server, both on 127.0.0.1) and registers it with ``"oauth": {}``. Then, in order:

1. ``mcp doctor`` reports ``authorization_required`` before any sign-in;
2. ``mcp login secure --no-browser``: the check reads the ``authorization URL:`` line from
   stderr and plays the browser (opens the URL, follows its redirect to the loopback callback);
3. a Build task calls ``add`` on the server after an exact approval, with the stored token;
4. after a sign-in whose token expires at once, a task's connection refreshes it (one refresh
   grant at the authorization server) and the call succeeds;
5. after ``mcp logout`` a task's call fails with "authentication required: run `shadowcode mcp login`";
6. after a new sign-in, the server names another issuer: the task's call fails, the stored
   sign-in is not used (the server sees no authorized request), and the user is told to log in;
7. no token the authorization server issued appears in any file of the profile but its secret
   store (database, WAL, logs included) or in the output of any command.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from anyio.abc import Process

from shadowcode_conformance.checks.external_servers import (
    add_model,
    check_result,
    cli,
    register_server,
    run_task,
    tool_turns,
    trust_workspace,
)
from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import announced_port, drain, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["FixtureDidNotStart", "oauth_fixture", "register_secure", "sign_in"]

_URL_LINE = re.compile(rb"authorization URL: (\S+)")
_ADD = {"a": 20, "b": 22}


async def register_secure(ctx: Context, origin: str, problems: list[str]) -> str | None:
    """The project trusted, and the OAuth fixture at ``origin`` added and enabled as server ``secure``.

    Returns:
        The server's id, or None with the reason noted in ``problems``.

    Raises:
        RuntimeError: trusting the project failed.
    """
    await trust_workspace(ctx, ctx.project)
    return await register_server(ctx, {"name": "secure", "url": origin + "/mcp", "oauth": {}}, ctx.project, problems)


async def fixture_control(origin: str, **changes: Any) -> dict[str, Any]:
    async with httpx2.AsyncClient(trust_env=False, timeout=30) as client:
        if changes:
            reply = await client.post(origin + "/control", json=changes)
        else:
            reply = await client.get(origin + "/control")
        return dict(reply.json())


async def play_browser(url: str) -> int:
    async with httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=30) as client:
        answer = await client.get(url)
        location = answer.headers.get("location")
        if answer.status_code not in (302, 303) or not location:
            return answer.status_code
        return (await client.get(location)).status_code


async def _login(ctx: Context, problems: list[str], seen: list[str]) -> bool:
    """Run ``mcp login secure --no-browser``, playing the browser; True when it signed in."""
    out, err = bytearray(), bytearray()
    argv = ctx.target_argv("mcp", "login", "secure", "--no-browser")
    proc: Process | None = None
    with anyio.move_on_after(min(120, ctx.remaining())):
        async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stdout, out)
            tg.start_soon(drain, proc.stderr, err)
            while not _URL_LINE.search(err) and proc.returncode is None:
                await anyio.sleep(0.05)
            found = _URL_LINE.search(err)
            if found is not None:
                status = await play_browser(found.group(1).decode())
                if status != 200:
                    problems.append(f"the loopback callback answered HTTP {status}")
            await proc.wait()
    returncode = None if proc is None else proc.returncode
    seen.append((out + err).decode("utf-8", "replace"))
    if returncode != 0 or b"signed in to config:secure" not in out:
        problems.append(f"mcp login exited {returncode}: {tail(err)}")
        return False
    return True


def _text(events: list[dict[str, Any]]) -> str:
    return json.dumps([e["data"] for e in events], ensure_ascii=False)


async def _task(ctx: Context, n: int, server_id: str, problems: list[str]) -> str:
    expected = [{"server": server_id, "tool": "add", "arguments": _ADD}]
    job, events = await run_task(ctx, f"call secure {n}", ctx.project, expected, problems)
    if job.get("status") != "done":
        problems.append(f"task {n} ended {job.get('status')!r}: {job.get('error')}")
    return _text(events)


def _leaks(ctx: Context, tokens: list[str], outputs: list[str]) -> list[str]:
    found: list[str] = []
    for path in ctx.home.rglob("*"):
        if path.is_file() and path.name not in ("secrets.json", "secrets.json.tmp"):
            data = path.read_bytes()
            found += [f"a token in {path.relative_to(ctx.home)}" for t in tokens if t.encode() in data]
    found += ["a token in a command's output" for t in tokens for o in outputs if t in o]
    return sorted(set(found))


class FixtureDidNotStart(Exception):
    """The OAuth fixture server did not start or did not answer its control endpoint."""


@asynccontextmanager
async def oauth_fixture(ctx: Context) -> AsyncGenerator[str, None]:
    """The loopback OAuth fixture server, listening and answering its control endpoint.

    Yields:
        Its origin, ``http://127.0.0.1:PORT``; the server stops when the block ends.

    Raises:
        FixtureDidNotStart: it printed no port, or its control endpoint did not answer, within
            60 s each.
    """
    out = bytearray()
    server = ctx.repo_root / "fixtures/servers/oauth_server.py"
    async with ctx.spawn([helper_python(), str(server)]) as proc, anyio.create_task_group() as tg:
        try:
            port = await announced_port(proc, tg, out, 60)
            if port is None:
                raise FixtureDidNotStart(f"the OAuth fixture did not start: {tail(out)}")
            origin = f"http://127.0.0.1:{port}"
            try:
                with anyio.fail_after(60):
                    while True:
                        try:
                            await fixture_control(origin)
                            break
                        except (OSError, httpx2.HTTPError):  # it may print its port before it listens
                            await anyio.sleep(0.1)
            except TimeoutError:
                raise FixtureDidNotStart(f"the OAuth fixture did not answer at {origin}: {tail(out)}") from None
            yield origin
        finally:
            tg.cancel_scope.cancel()


@check("external_oauth:sign_in", covers=["CW-08"], timeout_seconds=900)
async def sign_in(ctx: Context) -> CheckResult:
    """mcp login plays through a loopback OAuth server; tasks use, refresh and drop the sign-in as they must."""
    problems: list[str] = []
    seen: list[str] = []
    try:
        async with oauth_fixture(ctx) as origin:
            try:
                server_id = await register_secure(ctx, origin, problems)
                call = tool_turns(("mcp_call", {"server": "secure", "tool": "add", "arguments": _ADD}))
                await add_model(ctx, [{"match": f"call secure {n}", "turns": call} for n in range(1, 5)])
            except (RuntimeError, TimeoutError) as exc:
                return CheckResult(False, f"set-up failed: {exc}")
            if server_id is not None:
                await _steps(ctx, origin, server_id, problems, seen)
                issued = (await fixture_control(origin))["issued"]
                problems += _leaks(ctx, issued, seen)
    except FixtureDidNotStart as exc:
        return CheckResult(False, str(exc))
    return check_result(
        problems,
        "login by a played browser, an authenticated task call, refresh after expiry, logout and refusal "
        "after an issuer change all behaved; no token outside the secret store",
    )


async def _steps(ctx: Context, origin: str, server_id: str, problems: list[str], seen: list[str]) -> None:
    code, out, _ = await cli(ctx, "--json", "mcp", "doctor")
    seen.append(out)
    if "authorization_required" not in out:
        problems.append(f"mcp doctor did not report authorization_required before login (exit {code})")
    if not await _login(ctx, problems, seen):
        return
    text = await _task(ctx, 1, server_id, problems)
    if '\\"total\\": 42' not in text and '"total": 42' not in text:
        problems.append(f"the signed-in task's call did not return 42: {text[-300:]}")
    await fixture_control(origin, expires_in=1)
    signed = await _login(ctx, problems, seen)
    await fixture_control(origin, expires_in=3600)
    if signed:
        before = (await fixture_control(origin))["refreshes"]
        await anyio.sleep(1.5)
        text = await _task(ctx, 2, server_id, problems)
        if (await fixture_control(origin))["refreshes"] != before + 1:
            problems.append("an expired sign-in was not refreshed exactly once at connection start")
        if '"total": 42' not in text and '\\"total\\": 42' not in text:
            problems.append(f"the call after the refresh did not return 42: {text[-300:]}")
    code, out, err = await cli(ctx, "mcp", "logout", "secure")
    seen.append(out + err)
    if code != 0 or "signed out of config:secure" not in out:
        problems.append(f"mcp logout exited {code}: {tail(err)}")
    text = await _task(ctx, 3, server_id, problems)
    if "authentication required: run `shadowcode mcp login" not in text:
        problems.append(f"after logout the call did not fail asking to log in: {text[-300:]}")
    if not await _login(ctx, problems, seen):
        return
    await fixture_control(origin, issuer_path="/as2")
    authorized = (await fixture_control(origin))["authorized"]
    text = await _task(ctx, 4, server_id, problems)
    if "not used: run `shadowcode mcp login" not in text:
        problems.append(f"after an issuer change the stored sign-in was not refused: {text[-300:]}")
    if (await fixture_control(origin))["authorized"] != authorized:
        problems.append("a sign-in bound to the old issuer was still sent to the server")
