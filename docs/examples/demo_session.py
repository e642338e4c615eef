"""Drive a ShadowCode server with the official MCP Python SDK client and print a transcript.

Usage: ``python docs/examples/demo_session.py [--target "python3 dist/shadowcode.pyz"]``

It makes the sample project of ``fixtures/`` in a temporary folder (with a SQLite database in
WAL mode whose newest rows are still in the WAL file), uses a temporary profile, trusts the
project, then connects over stdio and shows: the negotiated protocol revision, the tools, a
project map, a memory note written and read back, and a SQL answer. Everything it made is
removed at the end. Exit status 0 when every step answered, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]


def _load_fixture() -> Any:
    spec = importlib.util.spec_from_file_location("sample_project", REPO / "fixtures" / "sample_project.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def session(target: list[str], project: Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=target[0], args=[*target[1:], "--workspace", str(project), "mcp", "serve", "--allow-write"], env=env
    )
    async with Client(params) as client:
        say(f"connected: protocol revision {client.protocol_version}")
        tools = (await client.list_tools()).tools
        say(f"\n== {len(tools)} tools")
        for tool in tools:
            mark = "read-only" if tool.annotations and tool.annotations.read_only_hint else "changes state"
            say(f"  {tool.name:<18} {mark}")

        async def call(name: str, **arguments: Any) -> dict[str, Any]:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content[0].text}")  # type: ignore[union-attr]
            return dict(result.structured_content or {})

        status = await call("shadow_status")
        say(f"\n== project {status['project']['path']} (trusted: {status['project']['level']})")
        understood = await call("shadow_understand")
        say(f"\n== project map ({understood['files']} files)")
        for line in str(understood["map"]).splitlines()[:24]:
            say(f"  {line}")
        note = await call("shadow_memory", action="append", text="The notebook store keeps notes in data/app.db.")
        read = await call("shadow_memory", action="read")
        say(f"\n== memory note (hash {str(note['hash'])[:12]}...)\n  {read['content']}")
        tables = await call("shadow_sqlite", action="tables", path="data/app.db")
        say("\n== SQL: tables in data/app.db: " + ", ".join(t["name"] for t in tables["tables"]))
        answer = await call(
            "shadow_sqlite",
            action="query",
            path="data/app.db",
            sql="SELECT id, title FROM notes WHERE title = ?",
            params=["from-wal"],
        )
        say(f"  SELECT id, title FROM notes WHERE title = 'from-wal' -> {json.dumps(answer['rows'])}")
        say("  (that row exists only in the WAL file: the query sees live data)")


async def _bounded(target: list[str], project: Path, env: dict[str, str]) -> None:
    with anyio.fail_after(120):
        await session(target, project, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=f"{sys.executable} -m shadowcode", help="server command (shell words)")
    args = parser.parse_args()
    target = shlex.split(args.target)
    with tempfile.TemporaryDirectory(prefix="shadowcode-demo ") as tmp:
        project = _load_fixture().make_sample_project(Path(tmp) / "sample project")
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
        env["SHADOWCODE_HOME"] = str(Path(tmp) / "home")
        subprocess.run(
            [*target, "--workspace", str(project), "trust", "--level", "workspace"],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
            timeout=60,
        )
        command = shlex.join([*target, "--workspace", str(project), "mcp", "serve", "--allow-write"])
        say(f"$ {command}")
        try:
            anyio.run(_bounded, target, project, env)
        except Exception as exc:  # noqa: BLE001 - a demo reports and exits 1
            sys.stderr.write(f"demo failed: {exc}\n")
            return 1
    say("\ndone: the server exited with its client, and the temporary project and profile are gone.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
