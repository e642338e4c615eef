"""The client command the official ``@modelcontextprotocol/conformance`` package runs.

Usage (the package appends the scenario server's URL and sets ``MCP_CONFORMANCE_SCENARIO``)::

    python3 -m shadowcode_conformance.official_client [--target "python3 dist/shadowcode.pyz"] [--scenario NAME] URL

ShadowCode is driven only through its command line, in a profile of its own
(``SHADOWCODE_HOME`` in a temporary folder, removed at the end) and a small trusted project:

1. ``mcp add`` a definition ``{"name": "conformance", "url": URL}`` (a Streamable HTTP server),
   read its hash from the ``mcp`` catalog and ``mcp enable`` it at that hash;
2. ``initialize``: ``mcp validate`` connects it once (discovery, then the legacy ``initialize``
   lifecycle the scenario server speaks) and must report it connected;
3. ``tools_call`` (and ``sse-retry``): a ``scripted`` model is added and a Build task
   (``run`` in the foreground) calls the scenario's tool through ``mcp_call``; the approval it
   asks for is checked to name exactly that server, tool and arguments before it is given, and
   the tool's answer must come back in the task's events.

For ``auth/pre-registration`` the definition names the scenario's pre-registered client
(``client_id`` from ``MCP_CONFORMANCE_CONTEXT``, the issuer its protected-resource metadata
names) and ``oauth.client_secret_env``; the secret is set in that variable for the ``mcp login``
command only (no other command gets the context).

``sse-retry`` closes the tool's SSE stream before answering and expects the client to
resume it; ShadowCode never resumes a stream (CLI-18), so there the call fails, as it should.

Only the standard library is used, so any ``python3`` can run it from the repository root.
Exit status: 0 when the scenario's client side did what it should, 1 otherwise (the reason on
stderr), 2 on bad usage. Every process started here is stopped before it returns.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, cast

__all__ = ["CALLS", "DEFINITION_EXTRAS", "main", "play_browser", "sign_in"]

CALLS: dict[str, tuple[str, dict[str, Any], str, bool]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}, "The sum of 5 and 3 is 8", True),
    "sse-retry": ("test_reconnection", {}, "Reconnection test completed", False),
}
"""Scenario → (tool, arguments, a text of the tool's answer, whether that answer must come back).

``sse-retry`` sends its answer only on a resumed stream, so there it must never arrive (CLI-18).
"""

DEFINITION_EXTRAS: dict[str, dict[str, Any]] = {
    "auth/basic-cimd": {"oauth": {"client_metadata_url": "https://conformance-test.local/client-metadata.json"}},
}
"""Scenario → what its definition adds: the client ID metadata document URL the scenario expects."""

_SERVER = "conformance"
_SECRET_ENV = "CONFORMANCE_CLIENT_SECRET"
_LOGIN_SECONDS = 120.0
_BROWSER_SECONDS = 30.0
_URL_LINE = "authorization URL: "
_COMMAND_SECONDS = 150.0
_TASK_SECONDS = 150.0
_POLL_SECONDS = 0.2


class AdapterError(Exception):
    """A step failed; the message says which and why."""


class _Cli:
    """Runs ShadowCode commands in the temporary profile, the project as ``--workspace``."""

    def __init__(self, target: list[str], home: Path, project: Path) -> None:
        self.target = target
        self.project = project
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE_") and k != "MCP_CONFORMANCE_CONTEXT"
        }
        self.env["SHADOWCODE_HOME"] = str(home)

    def argv(self, *args: str) -> list[str]:
        return [*self.target, "--workspace", str(self.project), *args]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(
                self.argv(*args),
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=_COMMAND_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AdapterError(f"`{' '.join(args)}` did not finish within {_COMMAND_SECONDS:.0f} s") from exc
        if check and done.returncode != 0:
            raise AdapterError(f"`{' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
        return done

    def json(self, *args: str) -> Any:
        done = self.run("--json", *args)
        try:
            return json.loads(done.stdout)
        except ValueError as exc:
            raise AdapterError(f"`{' '.join(args)}` printed no JSON document: {done.stdout[:300]!r}") from exc


def _register(cli: _Cli, scratch: Path, url: str, extra: dict[str, Any] | None = None) -> str:
    """Trust the project, add the URL as an HTTP server, enable it at its reviewed hash."""
    cli.run("trust", "--level", "workspace", str(cli.project))
    definition = scratch / f"{_SERVER}.json"
    definition.write_text(json.dumps({"name": _SERVER, "url": url, **(extra or {})}), encoding="utf-8")
    server_id = str(cli.json("mcp", "add", str(definition))["id"])
    catalog = cli.json("mcp")
    digest = next((s.get("hash") for s in catalog["servers"] if s["id"] == server_id), None)
    if not digest:
        raise AdapterError(f"{server_id} is not in the catalog with a hash: {json.dumps(catalog)[:300]}")
    cli.run("mcp", "enable", server_id, "--hash", str(digest))
    return server_id


def _validate(cli: _Cli, server_id: str) -> str:
    done = cli.run("--json", "mcp", "validate", check=False)
    try:
        report = json.loads(done.stdout)
        server = next(s for s in report["servers"] if s["id"] == server_id)
    except (ValueError, KeyError, StopIteration) as exc:
        raise AdapterError(f"mcp validate exited {done.returncode} without a report: {done.stderr[-300:]}") from exc
    if done.returncode != 0 or not server.get("connected"):
        raise AdapterError(f"mcp validate: {server_id} did not connect: {server.get('error')}")
    return f"{server_id}: connected, protocol {server.get('protocol_version')}, {server.get('tools')} tools"


def _answer_approvals(cli: _Cli, want: dict[str, Any], seen: list[dict[str, Any]]) -> None:
    """Approve the one expected MCP call; deny anything else (and remember it)."""
    for approval in cli.json("approvals")["approvals"]:
        ok = approval.get("kind") == "mcp_call" and approval.get("action") == want and not seen
        seen.append(approval)
        cli.run("approve" if ok else "deny", str(approval["id"]), check=False)


def _call(cli: _Cli, scratch: Path, server_id: str, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """Run a Build task whose scripted model calls ``tool`` once; return (task status, events text)."""
    prompt = f"call {tool} on the conformance server"
    script = scratch / f"model{len(list(scratch.glob('model*.json')))}.json"
    call = {"name": "mcp_call", "arguments": {"server": _SERVER, "tool": tool, "arguments": arguments}}
    turns = [{"content": "calling", "tool_calls": [call]}, {"content": "finished"}]
    script.write_text(json.dumps({"tasks": [{"match": prompt, "turns": turns}]}), encoding="utf-8")
    model = f"scripted{len(list(scratch.glob('model*.json')))}"
    cli.run("models", "add", model, "--provider", "scripted", "--script", str(script), "--default")
    want = {"server": server_id, "tool": tool, "arguments": arguments}
    seen: list[dict[str, Any]] = []
    out, err = scratch / "run.out", scratch / "run.err"
    with out.open("w", encoding="utf-8") as sink, err.open("w", encoding="utf-8") as errors:
        proc = subprocess.Popen(
            cli.argv("--json", "run", "--level", "workspace", prompt),
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=errors,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + _TASK_SECONDS
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise AdapterError(f"the task did not finish within {_TASK_SECONDS:.0f} s")
            _answer_approvals(cli, want, seen)
            try:
                proc.wait(timeout=_POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
    if [a.get("action") for a in seen] != [want]:
        raise AdapterError(f"expected one approval for {json.dumps(want)}, got {json.dumps(seen)[:500]}")
    try:
        job_id = str(json.loads(out.read_text(encoding="utf-8"))["id"])
    except (ValueError, KeyError, TypeError) as exc:
        printed = out.read_text(encoding="utf-8")[:300]
        raise AdapterError(f"run printed no job: {printed!r}; {err.read_text(encoding='utf-8')[-500:]}") from exc
    shown = cli.json("jobs", job_id)
    return str(shown["job"].get("status")), json.dumps([e["data"] for e in shown["events"]], ensure_ascii=False)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _fetch_no_redirect(url: str) -> tuple[int, str]:
    """GET ``url`` without following redirects; (status, Location header or "")."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise AdapterError(f"refused to open {url[:100]!r}: not an http(s) URL")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, method="GET"), timeout=_BROWSER_SECONDS) as resp:
            return resp.status, resp.headers.get("Location") or ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Location") or ""
    except OSError as exc:
        raise AdapterError(f"the browser could not open {url[:200]}: {exc}") from exc


def play_browser(authorization_url: str, max_hops: int = 5) -> str:
    """Do what a user's browser does with ``authorization_url``; return the callback's answer status.

    Follows the authorization server's redirects (at most ``max_hops``) until one leads to a
    loopback callback (``http://127.0.0.1:PORT/...``), which is fetched last.

    Raises:
        AdapterError: no redirect, a redirect that leaves http(s), or too many hops.
    """
    url = authorization_url
    for _ in range(max_hops):
        status, location = _fetch_no_redirect(url)
        if not location:
            raise AdapterError(f"{url[:200]} answered HTTP {status} without a redirect")
        url = urllib.parse.urljoin(url, location)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http" and parts.hostname == "127.0.0.1" and "code=" in (parts.query or ""):
            status, _ = _fetch_no_redirect(url)
            return f"callback answered HTTP {status}"
        if "error=" in (parts.query or ""):
            status, _ = _fetch_no_redirect(url)
            return f"callback (error) answered HTTP {status}"
    raise AdapterError(f"no redirect to a loopback callback within {max_hops} hops")


def sign_in(
    cli: _Cli, server_id: str, scopes: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``mcp login SERVER --no-browser``, playing the browser for every authorization URL it prints.

    Returns:
        (login's exit status, its stdout, its stderr); how many authorization URLs it printed
        is the number of ``authorization URL:`` lines in that stderr.

    Raises:
        AdapterError: login did not finish in time, or the browser part failed.
    """
    argv = cli.argv("mcp", "login", server_id, "--no-browser", *(a for s in scopes for a in ("--scope", s)))
    proc = subprocess.Popen(
        argv,
        env={**cli.env, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    urls: queue.Queue[str | None] = queue.Queue()
    lines: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith(_URL_LINE):
                urls.put(line[len(_URL_LINE) :].strip())
        urls.put(None)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + _LOGIN_SECONDS
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AdapterError(f"mcp login did not finish within {_LOGIN_SECONDS:.0f} s")
            try:
                url = urls.get(timeout=remaining)
            except queue.Empty:
                continue
            if url is None:
                break
            play_browser(url)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        reader.join(timeout=5)
        return proc.returncode, out, "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        reader.join(timeout=5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _signed_in(cli: _Cli, server_id: str, scopes: tuple[str, ...] = (), env: dict[str, str] | None = None) -> str:
    code, out, err = sign_in(cli, server_id, scopes, env)
    if code != 0:
        raise AdapterError(f"mcp login exited {code}: {err.strip()[-600:]}")
    if _URL_LINE not in err:
        raise AdapterError(f"mcp login printed no authorization URL: {err.strip()[-300:]}")
    return out.strip()


def _auth_scenario(cli: _Cli, scratch: Path, scenario: str, server_id: str) -> str:
    """Sign in as a user would for an ``auth/`` scenario, then use the server."""
    if scenario == "auth/scope-retry-limit":
        # The server refuses every token with 403 insufficient_scope: login must give up
        # after a bounded number of authorizations, store nothing, and exit 1.
        code, _, err = sign_in(cli, server_id)
        attempts = err.count(_URL_LINE)
        if code == 0 or not 1 <= attempts <= 3:
            raise AdapterError(f"expected login to fail after 1 to 3 authorizations; exit {code}, {attempts}")
        return f"login gave up after {attempts} authorization(s): {err.strip().splitlines()[-1]}"
    if scenario == "auth/resource-mismatch":
        # The server's metadata names another resource: login must refuse before any
        # authorization URL is shown, store nothing, and exit 1.
        code, _, err = sign_in(cli, server_id)
        if code == 0 or _URL_LINE in err or "resource" not in err:
            raise AdapterError(f"expected login to refuse the mismatched resource; exit {code}: {err[-300:]}")
        return f"login refused: {err.strip().splitlines()[-1]}"
    env = None
    if scenario == "auth/pre-registration":
        # The client secret reaches only the login command, through the variable the
        # definition's oauth.client_secret_env names.
        env = {_SECRET_ENV: str(_context().get("client_secret") or "")}
    signed = _signed_in(cli, server_id, env=env)
    if scenario != "auth/scope-step-up":
        return f"{signed}; {_validate(cli, server_id)}"
    # Step-up: the call is refused with 403 insufficient_scope; the task names the scopes to
    # log in with (it starts no login itself, CLI-11); the user logs in with them and calls again.
    status, events = _call(cli, scratch, server_id, "test-tool", {})
    found = re.search(r"mcp login \S+ ((?:--scope \S+ ?)+)", events.replace("`", " "))
    if found is None:
        raise AdapterError(f"the refused call named no scope to log in with (task {status}): {events[-400:]}")
    scopes = tuple(found.group(1).split()[1::2])
    again = _signed_in(cli, server_id, scopes)
    status, events = _call(cli, scratch, server_id, "test-tool", {})
    if '"test"' not in events.replace('\\"', '"') or status != "done":
        raise AdapterError(f"the call after the wider login did not answer (task {status}): {events[-400:]}")
    return f"{signed}; step-up login with {' '.join(scopes)}: {again}; test-tool answered; task {status}"


def _context() -> dict[str, Any]:
    """The scenario's context (``MCP_CONFORMANCE_CONTEXT``, JSON), or {}."""
    try:
        doc = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        return {}
    return cast("dict[str, Any]", doc) if isinstance(doc, dict) else {}


def _issuer_of(url: str) -> str:
    """The first authorization server the server's protected-resource metadata names (RFC 9728)."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path.rstrip("/")
    metadata = urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource" + path, "", "")
    )
    try:
        with urllib.request.urlopen(metadata, timeout=_BROWSER_SECONDS) as reply:  # noqa: S310 - http(s) checked
            return str(json.loads(reply.read())["authorization_servers"][0])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise AdapterError(f"no authorization server named at {metadata}: {exc}") from exc


def _extras(scenario: str, url: str) -> dict[str, Any] | None:
    """What the scenario's definition adds (:data:`DEFINITION_EXTRAS`, or a pre-registered client)."""
    if scenario == "auth/pre-registration":
        client_id = _context().get("client_id")
        if not client_id:
            raise AdapterError("MCP_CONFORMANCE_CONTEXT names no client_id")
        issuer = _issuer_of(url)
        return {"oauth": {"client_id": str(client_id), "issuer": issuer, "client_secret_env": _SECRET_ENV}}
    return DEFINITION_EXTRAS.get(scenario)


def run_scenario(scenario: str, url: str, target: list[str]) -> str:
    """Run one scenario's client side; return a one-line summary.

    Raises:
        AdapterError: a step failed or the outcome is not the one expected.
    """
    with tempfile.TemporaryDirectory(prefix="shadowcode-official-") as tmp:
        scratch = Path(tmp)
        (scratch / "home").mkdir()
        project = scratch / "project"
        project.mkdir()
        (project / "app.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
        cli = _Cli(target, scratch / "home", project)
        server_id = _register(cli, scratch, url, _extras(scenario, url))
        if scenario == "initialize":
            return _validate(cli, server_id)
        if scenario.startswith("auth/"):
            return _auth_scenario(cli, scratch, scenario, server_id)
        if scenario not in CALLS:
            raise AdapterError(f"no client behaviour for scenario {scenario!r}; known: initialize, {', '.join(CALLS)}")
        tool, arguments, expected, answered = CALLS[scenario]
        status, events = _call(cli, scratch, server_id, tool, arguments)
        if not answered:
            if expected in events:
                raise AdapterError(f"{tool} was answered on a resumed stream, which CLI-18 forbids")
            return f"{tool} called once and not resumed after its stream closed; task {status}"
        if expected not in events:
            raise AdapterError(f"the answer of {tool} ({expected!r}) is not in the task's events: {events[-500:]}")
        if status != "done":
            raise AdapterError(f"the task ended {status!r}")
        return f"{tool} answered {expected!r}; task {status}"


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the scenario, report on stdout (summary) or stderr (failure)."""
    parser = argparse.ArgumentParser(description="Run an official MCP conformance client scenario through ShadowCode.")
    parser.add_argument("--target", default=f"{shlex.quote(sys.executable)} -m shadowcode", help="ShadowCode command")
    parser.add_argument("--scenario", default=os.environ.get("MCP_CONFORMANCE_SCENARIO"))
    parser.add_argument("url")
    args = parser.parse_args(argv)
    if not args.scenario:
        parser.error("no --scenario and MCP_CONFORMANCE_SCENARIO is not set")
    # The package ends a client past its timeout with SIGTERM: unwind, so the task's process
    # group is stopped and the temporary profile removed.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    try:
        summary = run_scenario(args.scenario, args.url, shlex.split(args.target))
    except AdapterError as exc:
        sys.stderr.write(f"{args.scenario}: {exc}\n")
        return 1
    sys.stdout.write(f"{args.scenario}: {summary}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
