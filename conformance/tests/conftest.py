"""Shared pieces for the conformance runner tests: fake targets that behave or misbehave."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FAKE_SERVER = r"""
import json, sys
args = sys.argv[1:]
if "--json" in args or any(name in args for name in ("a/b", "..", ".hidden")):
    sys.stderr.write("refused\n")
    sys.exit(2 if "exit-right" in FLAGS else 0)
if "banner" in FLAGS:
    sys.stdout.write("starting up...\n")
    sys.stdout.flush()
for raw in sys.stdin:
    try:
        msg = json.loads(raw)
    except ValueError:
        out = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
    else:
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            info = {"name": "fake", "version": "0"}
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": info}
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        else:
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


def write_fake_target(folder: Path, *flags: str) -> list[str]:
    """A Python script behaving like a minimal stdio MCP server; ``flags`` switch misbehaviour on.

    ``--banner``: prints a non-JSON line on stdout first. ``--exit-right``: refusals exit 2.
    """
    script = folder / "fake_target.py"
    script.write_text(f"FLAGS = {sorted(f.lstrip('-') for f in flags)!r}\n" + FAKE_SERVER, encoding="utf-8")
    return [sys.executable, str(script)]


@pytest.fixture
def fake_target(tmp_path: Path):
    """Factory: ``fake_target(*flags)`` -> target argv of a fake server script."""

    def make(*flags: str) -> list[str]:
        return write_fake_target(tmp_path, *flags)

    return make
