"""``mcp validate``, ``mcp tools`` and ``mcp doctor`` seen from outside (CW-03, CW-04).

Covers CW-03, CW-04, CLI-04.

The target is driven only through its command line (``trust``, ``secret set``, ``--json mcp``,
``mcp enable`` and the three reports) against ``fixtures/servers/hostile_server.py`` in a
project's ``.shadowcode/mcp/`` folder. Each server starts through ``/bin/sh``, which notes its
pid in the project before it becomes the server, so the check can tell that every process is
gone once a report is printed.

* ``validate_tools_doctor``: ``mcp doctor`` reports an unresolvable ``env_refs`` name (the name,
  no value) and starts nothing; ``mcp validate`` prints one line per enabled server (connected
  with its revision and tool count, or a 0.5 s initialization deadline that a silent server
  misses), exits 1, leaves no process and prints no credential; ``mcp tools`` lists a tool
  whose title carried a stored secret, redacted; an unknown server exits 2 with nothing on stdout.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["validate_tools_doctor"]

_SECRET = "conformance-report-secret-6e2a91"
_TOKEN_NAME = "CONF_REPORT_TOKEN"


async def _cli(ctx: Context, *args: str, workspace: Path, stdin: bytes = b"") -> tuple[int, str, str]:
    done = await ctx.run(ctx.target_argv(*args, workspace=workspace), stdin=stdin, timeout_seconds=60)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    return (-999 if done.returncode is None else done.returncode), out, err


def _noting_pid(fixture: Path, name: str, mode: str) -> list[str]:
    return ["/bin/sh", "-c", f'echo $$ > {name}.pid; exec "$0" "$@"', helper_python(), str(fixture), mode]


def _define(workspace: Path, name: str, doc: dict[str, Any]) -> str:
    folder = workspace / ".shadowcode" / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps({"name": name} | doc), encoding="utf-8")
    return f"project:.shadowcode/mcp/{name}.json"


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _setup(ctx: Context, workspace: Path, fixture: Path, problems: list[str]) -> dict[str, str]:
    """Trust the project, store the secret, write four definitions and enable three of them."""
    refs = {"FIXTURE_TOKEN": _TOKEN_NAME}
    ids = {
        "good": _define(workspace, "good", {"command": _noting_pid(fixture, "good", "plain")}),
        "mute": _define(workspace, "mute", {"command": _noting_pid(fixture, "mute", "no_init"), "timeout_sec": 0.5}),
        "leaky": _define(
            workspace, "leaky", {"command": _noting_pid(fixture, "leaky", "leak_catalog"), "env_refs": refs}
        ),
        "idle": _define(
            workspace,
            "idle",
            {"command": _noting_pid(fixture, "idle", "plain"), "env_refs": {"T": "CONF_REPORT_UNSET"}},
        ),
    }
    steps: list[tuple[tuple[str, ...], bytes]] = [
        (("trust", "--level", "workspace", str(workspace)), b""),
        (("secret", "set", _TOKEN_NAME), _SECRET.encode("utf-8")),
    ]
    for args, stdin in steps:
        code, _, err = await _cli(ctx, *args, workspace=workspace, stdin=stdin)
        if code != 0:
            problems.append(f"`{' '.join(args[:2])}` exited {code}: {tail(err)}")
    code, out, err = await _cli(ctx, "--json", "mcp", workspace=workspace)
    if code != 0:
        problems.append(f"`--json mcp` exited {code}: {tail(err)}")
        return ids
    hashes = {s["id"]: s["hash"] for s in json.loads(out)["servers"]}
    for name in ("good", "mute", "leaky"):
        code, _, err = await _cli(
            ctx, "mcp", "enable", ids[name], "--hash", str(hashes.get(ids[name])), workspace=workspace
        )
        if code != 0:
            problems.append(f"mcp enable {ids[name]} exited {code}: {tail(err)}")
    return ids


@check("server_reports:validate_tools_doctor", covers=["CW-03", "CW-04", "CLI-04"], timeout_seconds=240)
async def validate_tools_doctor(ctx: Context) -> CheckResult:
    """The three reports: what they print, their exit status, nothing leaked, nothing left running."""
    workspace = ctx.scratch / "reports"
    workspace.mkdir()
    fixture = ctx.repo_root / "fixtures/servers/hostile_server.py"
    problems: list[str] = []
    ids = await _setup(ctx, workspace, fixture, problems)
    if problems:
        return CheckResult(False, "; ".join(problems))
    printed: list[str] = []

    code, out, err = await _cli(ctx, "--json", "mcp", "doctor", workspace=workspace)
    printed += [out, err]
    found = [(p["server"], p["check"]) for p in json.loads(out)["problems"]] if out.strip() else []
    if code != 1 or found != [(ids["idle"], "env")] or "CONF_REPORT_UNSET" not in out:
        problems.append(f"doctor: exit {code}, problems {found} (expected exit 1 and one env problem of idle)")
    if list(workspace.glob("*.pid")):
        problems.append("doctor started a server")

    started = time.monotonic()
    code, out, err = await _cli(ctx, "mcp", "validate", workspace=workspace)
    elapsed = time.monotonic() - started
    printed += [out, err]
    expected = [
        f"{ids['good']}: connected, protocol 2025-11-25, 5 tools",
        f"{ids['leaky']}: connected, protocol 2025-11-25, 5 tools",
        f"{ids['mute']}: failed: the server did not finish initialization within 0.5 s",
    ]
    if code != 1 or sorted(out.splitlines()) != sorted(expected):
        problems.append(f"validate: exit {code}, printed {out.splitlines()!r}; expected exit 1 and {expected!r}")
    for name in ("good", "mute", "leaky"):
        noted = workspace / f"{name}.pid"
        if not noted.exists():
            problems.append(f"validate did not start {name}")
        elif _alive(int(noted.read_text(encoding="utf-8").strip())):
            problems.append(f"{name}'s process group outlived validate")
    if (workspace / "idle.pid").exists():
        problems.append("validate started a server that is not enabled")

    code, out, err = await _cli(ctx, "--json", "mcp", "tools", "leaky", workspace=workspace)
    printed += [out, err]
    tools: list[dict[str, Any]] = json.loads(out).get("tools", []) if code == 0 and out.strip() else []
    titles = [t.get("title") for t in tools if t.get("name") == "echo"]
    if code != 0 or titles != ["Echo [redacted]"]:
        problems.append(f"tools leaky: exit {code}, echo titles {titles!r} (expected ['Echo [redacted]'])")

    code, out, err = await _cli(ctx, "mcp", "tools", "nosuch", workspace=workspace)
    if code != 2 or out or "nosuch" not in err:
        problems.append(f"tools nosuch: exit {code}, stdout {tail(out, 120)!r} (expected exit 2, nothing on stdout)")
    if any(_SECRET in text for text in printed):
        problems.append("a stored secret was printed")

    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(
        True,
        f"doctor found the unresolvable name and started nothing; validate reported 2 connected and 1 timed out "
        f"in {elapsed:.1f} s with every process gone; tools showed the secret redacted; an unknown server exits 2",
    )
