"""A stdio server's first read-only tool call loads neither the SDK nor pydantic (issue 32).

Spawn to the first tool result is mostly imports: the SDK, pydantic and the engine API's types
cost more than the rest of the server together. So ``serve_stdio`` (what the stdio front's
child runs) answers ``shadow_status`` in a profile without a settings file with none of them
loaded and with only the API parts that call needs; a settings file to validate, arguments to
validate and any other tool load what they need when they need it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine import PY, cli_env

pytestmark = [pytest.mark.req("SRV-01"), pytest.mark.req("SRV-04")]

TIMEOUT_SECONDS = 60

HEAVY = ("pydantic", "mcp", "typer", "shadowcode.cli", "shadowcode.engine.verbs.jobs")
PARTS = ("engine", "projects", "models", "inspection", "notes", "jobs", "servers", "plugins", "doors")

_SERVER = """
import json, sys
from pathlib import Path
import shadowcode.mcp.server.tool_calls as tool_calls

heavy, parts = json.loads(sys.argv[2])
run = tool_calls.ToolCalls.run

async def noting_run(self, *args, **kwargs):
    outcome = await run(self, *args, **kwargs)
    loaded = [m for m in heavy if m in sys.modules]
    loaded += [p for p in parts if f"shadowcode.engine.api.{p}" in sys.modules]
    sys.stderr.write("loaded " + json.dumps(loaded) + "\\n")
    return outcome

tool_calls.ToolCalls.run = noting_run
from shadowcode.mcp.server.launch import serve_stdio
serve_stdio(workspace=Path(sys.argv[1]), profile=None, allow_write=False, allow_approvals=False)
"""


def _frame(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def _serve(
    tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], heavy: tuple[str, ...] = HEAVY
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Each call's result and the modules of ``heavy`` and API parts loaded after it, in a new server process."""
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    frames = [_frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})]
    frames.append(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    for n, (name, arguments) in enumerate(calls, start=1):
        params = {"name": name, "arguments": arguments}
        frames.append(_frame({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}))
    env = cli_env(tmp_path / "home")
    with subprocess.Popen(
        [PY, "-c", _SERVER, str(tmp_path), json.dumps([heavy, PARTS])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        results: list[dict[str, Any]] = []
        try:
            server.stdin.write(b"".join(frames[:2]))
            server.stdin.flush()
            assert json.loads(server.stdout.readline())["id"] == 0
            for frame in frames[2:]:  # one at a time: each call's modules are noted before the next runs
                server.stdin.write(frame)
                server.stdin.flush()
                results.append(json.loads(server.stdout.readline())["result"])
            server.stdin.close()
            server.wait(timeout=TIMEOUT_SECONDS)  # its stderr is a few lines: the pipe never fills
            assert server.stderr is not None
            stderr = server.stderr.read()
        finally:
            if server.poll() is None:
                server.kill()
    loaded = [json.loads(line[len(b"loaded ") :]) for line in stderr.splitlines() if line.startswith(b"loaded ")]
    return results, loaded


def test_the_first_status_call_loads_no_sdk_no_pydantic_and_one_api_part(tmp_path: Path) -> None:
    results, loaded = _serve(
        tmp_path,
        [("shadow_status", {}), ("shadow_status", {"unexpected": 1}), ("shadow_models", {})],
    )
    assert results[0]["isError"] is False and results[0]["structuredContent"]["models"] == {
        "configured": 0,
        "default": None,
    }
    assert loaded[0] == ["projects"]
    # Arguments to validate load pydantic, and the refusal is pydantic's as before.
    assert results[1]["isError"] is True
    assert "invalid arguments for shadow_status: unexpected: Extra inputs are not permitted" in (
        results[1]["content"][0]["text"]
    )
    assert "pydantic" in loaded[1] and "mcp" not in loaded[1]
    # Another tool loads its own part.
    assert results[2]["isError"] is False and results[2]["structuredContent"] == {"models": [], "default": None}
    assert "models" in loaded[2]


def test_a_settings_file_is_validated_on_the_first_status_call(tmp_path: Path) -> None:
    settings = tmp_path / "home" / "profiles" / "default" / "settings.json"
    settings.parent.mkdir(parents=True)
    doc = {"models": [{"name": "one", "provider": "scripted", "script": "/s/a"}], "default_model": "one"}
    settings.write_text(json.dumps(doc), encoding="utf-8")
    results, loaded = _serve(tmp_path, [("shadow_status", {})])
    assert results[0]["structuredContent"]["models"] == {"configured": 1, "default": "one"}
    assert "pydantic" in loaded[0] and "mcp" not in loaded[0]
    settings.write_text(json.dumps({"models": "none"}), encoding="utf-8")
    results, _ = _serve(tmp_path, [("shadow_status", {})])
    assert results[0]["isError"] is True and "settings.json of profile 'default' is invalid" in (
        results[0]["content"][0]["text"]
    )


def test_a_current_store_is_opened_without_importlib_resources(tmp_path: Path) -> None:
    # The first start applies the migrations (their scripts are read through importlib.resources);
    # a later one lists them from the package's folder: importlib.resources and what it imports
    # stay off the way to the first tool result (issue 32).
    watched = (*HEAVY, "importlib.resources")
    _, first = _serve(tmp_path, [("shadow_status", {})], watched)
    results, later = _serve(tmp_path, [("shadow_status", {})], watched)
    assert "importlib.resources" in first[0]
    assert results[0]["isError"] is False and later[0] == ["projects"]
