"""Probing servers the way a Build task connects them (engine/mcp/probe.py).

Covers CW-03, CLI-13, CLI-19.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.engine.mcp.probe import probe_servers
from shadowcode.mcp.client.definitions import ServerDefinition, StdioSpec
from shadowcode.profile import Profile
from tests.support.mcp_client import hostile_argv

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups are Linux-specific here"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _definition(name: str, mode: str, timeout: float) -> ServerDefinition:
    spec = StdioSpec(name=name, command=tuple(hostile_argv(mode)), timeout_sec=timeout)
    return ServerDefinition(id=f"config:{name}", scope="config", path=None, sha256="0" * 64, spec=spec)


@pytest.mark.req("CW-03", "CLI-13", "CLI-19")
async def test_servers_are_probed_concurrently_so_the_slowest_deadline_bounds_the_whole_probe(
    profile: Profile, project_dir: Path
) -> None:
    mute = [_definition(f"mute{i}", "no_init", 3.0) for i in range(4)]
    started = time.monotonic()
    with anyio.fail_after(60):
        outcomes = await probe_servers(
            [*mute, _definition("good", "plain", 5.0)], project=project_dir, profile=profile, env=child_env()
        )
    elapsed = time.monotonic() - started
    assert [o.definition.id for o in outcomes] == [*(f"config:mute{i}" for i in range(4)), "config:good"]
    for outcome in outcomes[:4]:
        assert outcome.error == "the server did not finish initialization within 3.0 s" and outcome.tools is None
        assert outcome.cleanup in ("terminated", "killed")
    assert outcomes[4].tools is not None and len(outcomes[4].tools) == 5 and outcomes[4].error is None
    assert outcomes[4].protocol_version == "2025-11-25"
    # One after another, four 3 s deadlines alone would take 12 s; together they take one, plus
    # start-up and cleanup, which a loaded machine stretches: a wide margin that still tells them apart.
    assert elapsed < 8.0
