"""The client command the official ``@modelcontextprotocol/conformance`` package runs.

Usage (the package appends the scenario server's URL and sets ``MCP_CONFORMANCE_SCENARIO``)::

    python3 conformance/official_client.py [--target "python3 dist/shadowcode.pyz"] [--scenario NAME] URL

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
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["CALLS", "main"]

CALLS: dict[str, tuple[str, dict[str, Any], str, bool]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}, "The sum of 5 and 3 is 8", True),
    "sse-retry": ("test_reconnection", {}, "Reconnection test completed", False),
}
"""Scenario → (tool, arguments, a text of the tool's answer, whether that answer must come back).

``sse-retry`` sends its answer only on a resumed stream, so there it must never arrive (CLI-18).
"""

_SERVER = "conformance"
_COMMAND_SECONDS = 60.0
_TASK_SECONDS = 90.0
_POLL_SECONDS = 0.2


class AdapterError(Exception):
    """A step failed; the message says which and why."""


class _Cli:
    """Runs ShadowCode commands in the temporary profile, the project as ``--workspace``."""

    def __init__(self, target: list[str], home: Path, project: Path) -> None:
        self.target = target
        self.project = project
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE_")}
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


def _register(cli: _Cli, scratch: Path, url: str) -> str:
    """Trust the project, add the URL as an HTTP server, enable it at its reviewed hash."""
    cli.run("trust", "--level", "workspace", str(cli.project))
    definition = scratch / f"{_SERVER}.json"
    definition.write_text(json.dumps({"name": _SERVER, "url": url}), encoding="utf-8")
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
    script = scratch / "model.json"
    call = {"name": "mcp_call", "arguments": {"server": _SERVER, "tool": tool, "arguments": arguments}}
    turns = [{"content": "calling", "tool_calls": [call]}, {"content": "finished"}]
    script.write_text(json.dumps({"tasks": [{"match": prompt, "turns": turns}]}), encoding="utf-8")
    cli.run("models", "add", "scripted", "--provider", "scripted", "--script", str(script), "--default")
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
        server_id = _register(cli, scratch, url)
        if scenario == "initialize":
            return _validate(cli, server_id)
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
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        summary = run_scenario(args.scenario, args.url, shlex.split(args.target))
    except AdapterError as exc:
        sys.stderr.write(f"{args.scenario}: {exc}\n")
        return 1
    sys.stdout.write(f"{args.scenario}: {summary}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
