"""The timeouts of a definition with their defaults (CW-07)."""

from __future__ import annotations

import json

import pytest

from shadowcode.limits import MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS
from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec, parse_definition
from shadowcode.mcp.client.timeouts import Timeouts, timeouts_of

STDIO = {"name": "tools", "command": ["server", "--stdio"]}


def _parse(doc: object) -> StdioSpec | HttpSpec:
    return parse_definition(json.dumps(doc).encode(), "def.json", fmt="json")


@pytest.mark.req("CW-07")
def test_timeouts_default_to_timeout_sec_and_launchers_get_at_least_120_s_to_connect() -> None:
    assert timeouts_of(_parse(STDIO)) == Timeouts(30.0, 30.0, 30.0)
    assert timeouts_of(_parse(STDIO | {"timeout_sec": 5})) == Timeouts(5.0, 5.0, 5.0)
    npx = {"name": "ev", "command": ["npx", "-y", "@modelcontextprotocol/server-everything"]}
    assert timeouts_of(_parse(npx)).connect == MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS
    assert timeouts_of(_parse(npx | {"timeout_sec": 5})).connect == 120.0
    assert timeouts_of(_parse(npx | {"connect_timeout": 10})).connect == 10.0
    for launcher in ("/usr/bin/uvx", "bunx", "pnpx", "NPX.cmd"):
        assert timeouts_of(_parse({"name": "l", "command": [launcher, "pkg"]})).connect == 120.0
    full = {"connect_timeout": 7, "call_timeout": 1500, "read_timeout": 2, "timeout_sec": 9}
    assert timeouts_of(_parse(STDIO | full)) == Timeouts(7.0, 1500.0, 2.0)
