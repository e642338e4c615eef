"""Tool filters in the server reports: ``mcp validate``, ``mcp tools`` and ``mcp doctor`` (CW-02).

An ``enabled_tools`` entry naming no tool the server lists is a warning, never a failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from shadowcode.engine.api import Access, Caller, Empty, McpServerQuery, McpValidate
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import PermissionLevel
from shadowcode.mcp.client.definitions import ServerDefinition
from tests.support.mcp_client import hostile_argv, project_definition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-02"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

WRITE = Access(allow_write=True, allow_approvals=True)
FILTERED = {"enabled_tools": ["echo", "record", "no_such_tool"], "disabled_tools": ["record"]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _enabled(api: LocalEngine, project_dir: Path) -> tuple[Path, ServerDefinition]:
    project = api.state.project_at(project_dir).path
    api.state.projects.trust(project, PermissionLevel.WORKSPACE)
    def_id = project_definition(project, "h", {"name": "h", "command": hostile_argv()} | FILTERED)
    registry = api.state.mcp_servers
    definition = next(d for d in registry.definitions(project) if d.id == def_id)
    assert isinstance(definition, ServerDefinition)
    registry.enable(project, def_id, definition.sha256, trusted=True)
    return project, definition


async def test_validate_and_tools_show_only_allowed_tools_and_warn_of_an_unknown_enabled_name(
    api: LocalEngine, project_dir: Path
) -> None:
    project, _ = _enabled(api, project_dir)
    caller = Caller(project=project, access=WRITE)
    with anyio.fail_after(60):
        report = await api.mcp_validate(McpValidate(), caller)
        listing = await api.mcp_server_tools(McpServerQuery("h"), caller)
    (server,) = report.servers
    assert report.ok and server.connected and server.tools == 1
    assert server.warnings == ["enabled_tools names 'no_such_tool', which the server does not list"]
    assert [t.name for t in listing.tools] == ["echo"]
    assert listing.server.warnings == server.warnings


async def test_doctor_warns_from_the_cached_listing_without_failing(api: LocalEngine, project_dir: Path) -> None:
    project, definition = _enabled(api, project_dir)
    caller = Caller(project=project, access=WRITE)
    before = await api.mcp_doctor(Empty(), caller)
    assert before.problems == [] and before.warnings == [], "no cached listing: nothing to compare with"
    listed = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "record", "env")]
    api.state.mcp_servers.save_tools(project, definition, listed)
    after = await api.mcp_doctor(Empty(), caller)
    assert after.problems == []
    assert [(w.server, w.check, w.message) for w in after.warnings] == [
        (definition.id, "filter", "enabled_tools names 'no_such_tool', which the server does not list")
    ]


@pytest.mark.req("CW-07")
async def test_validate_reports_a_required_server_that_cannot_connect_like_any_other(
    api: LocalEngine, project_dir: Path
) -> None:
    project = api.state.project_at(project_dir).path
    api.state.projects.trust(project, PermissionLevel.WORKSPACE)
    definition = {"name": "needed", "command": hostile_argv("no_init"), "required": True, "connect_timeout": 0.5}
    def_id = project_definition(project, "needed", definition)
    registry = api.state.mcp_servers
    found = next(d for d in registry.definitions(project) if d.id == def_id)
    registry.enable(project, def_id, found.sha256, trusted=True)
    with anyio.fail_after(60):
        report = await api.mcp_validate(McpValidate(), Caller(project=project, access=WRITE))
    (server,) = report.servers
    assert not report.ok and not server.connected
    assert server.error == "the server did not finish initialization within 0.5 s"
