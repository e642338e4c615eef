"""``mcp validate`` and ``mcp tools`` through the engine API, with real server processes (engine/mcp/live_reports.py).

Covers CW-03, CW-04, with CLI-04, CLI-09, CLI-13 and CLI-19 as they apply to a probe.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import pytest

from shadowcode.engine.api import Access, Caller, McpServerQuery, McpValidate
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.wire import to_json
from shadowcode.enums import PermissionLevel
from shadowcode.errors import NotFound, PolicyError
from shadowcode.secrets import SecretStore
from tests.support.mcp_client import HOSTILE, PY, group_gone, project_definition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

SECRET = "probe-secret-4b7d9e21"
WRITE = Access(allow_write=True, allow_approvals=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _noting_pid(name: str, mode: str) -> list[str]:
    """The hostile server in ``mode``, started through a shell that first notes its pid in ``<name>.pid``."""
    return ["/bin/sh", "-c", f'echo $$ > {name}.pid; exec "$0" "$@"', PY, str(HOSTILE), mode]


def _enable(api: LocalEngine, project: Path, *def_ids: str) -> None:
    registry = api.state.mcp_servers
    found = {d.id: d for d in registry.definitions(project)}
    for def_id in def_ids:
        registry.enable(project, def_id, found[def_id].sha256, trusted=True)  # type: ignore[union-attr]


def _trusted(api: LocalEngine, folder: Path) -> Path:
    path = api.state.project_at(folder).path
    api.state.projects.trust(path, PermissionLevel.WORKSPACE)
    return path


@pytest.mark.req("CW-03", "CLI-13", "CLI-19")
async def test_validate_reports_each_enabled_server_within_its_deadline_and_leaves_no_process(
    api: LocalEngine, project_dir: Path
) -> None:
    project = _trusted(api, project_dir)
    ids = [
        project_definition(project, "good", {"name": "good", "command": _noting_pid("good", "plain")}),
        project_definition(
            project, "mute", {"name": "mute", "command": _noting_pid("mute", "no_init"), "timeout_sec": 0.5}
        ),
        project_definition(project, "gone", {"name": "gone", "command": _noting_pid("gone", "crash_at_init")}),
    ]
    project_definition(project, "idle", {"name": "idle", "command": _noting_pid("idle", "plain")})  # not enabled
    _enable(api, project, *ids)

    started = time.monotonic()
    with anyio.fail_after(30):
        report = await api.mcp_validate(McpValidate(), Caller(project=project, access=WRITE))
    elapsed = time.monotonic() - started

    by_id = {r.id: r for r in report.servers}
    assert list(by_id) == sorted(ids) and not report.ok
    good, mute, gone = (by_id[i] for i in ids)
    assert good.connected and good.protocol_version == "2025-11-25" and good.tools == 5 and good.error is None
    assert not mute.connected and mute.error == "the server did not finish initialization within 0.5 s"
    assert mute.cleanup in ("terminated", "killed")
    assert not gone.connected and gone.error and "closed its output" in gone.error
    assert not (good.skipped or mute.skipped or gone.skipped)
    assert elapsed < 20  # the 0.5 s deadline bounds it, not the 30 s default of the others
    for name in ("good", "mute", "gone"):
        pid = int((project / f"{name}.pid").read_text(encoding="utf-8"))
        assert group_gone(pid), f"{name} left a process"
    assert not (project / "idle.pid").exists()  # a server that is not enabled is not started

    one = await api.mcp_validate(McpValidate("good"), Caller(project=project, access=WRITE))
    assert one.ok and [r.id for r in one.servers] == [ids[0]]


@pytest.mark.req("CW-03", "CW-04", "CLI-04")
async def test_a_credential_from_env_refs_reaches_the_server_but_never_a_report(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROBE_TOKEN", raising=False)
    SecretStore(api.state.profile).set("PROBE_TOKEN", SECRET)
    project = _trusted(api, project_dir)
    refs = {"FIXTURE_TOKEN": "PROBE_TOKEN"}
    leaky = project_definition(
        project, "leaky", {"name": "leaky", "command": [PY, str(HOSTILE), "leak_catalog"], "env_refs": refs}
    )
    refusing = project_definition(
        project, "refusing", {"name": "refusing", "command": [PY, str(HOSTILE), "leak_init_error"], "env_refs": refs}
    )
    monkeypatch.delenv("PROBE_UNSET_REF", raising=False)
    unset = project_definition(
        project, "unset", {"name": "unset", "command": ["touch", "ran"], "env_refs": {"X": "PROBE_UNSET_REF"}}
    )
    _enable(api, project, leaky, refusing, unset)

    report = await api.mcp_validate(McpValidate(), Caller(project=project, access=WRITE))
    tools = await api.mcp_server_tools(McpServerQuery("leaky"), Caller(project=project, access=WRITE))

    shown = json.dumps([to_json(report), to_json(tools)])
    assert SECRET not in shown
    by_id = {r.id: r for r in report.servers}
    assert by_id[leaky].connected
    assert by_id[refusing].error == "initialization failed: refused: token [redacted]"
    assert by_id[unset].error is not None and not by_id[unset].skipped and by_id[unset].cleanup is None
    assert by_id[unset].error.startswith("env_refs: X refers to PROBE_UNSET_REF, which is neither set")
    assert not (project / "ran").exists()
    echo = next(t for t in tools.tools if t.name == "echo")
    assert echo.title == "Echo [redacted]" and echo.description == "Echo with [redacted]."


@pytest.mark.req("CW-04")
async def test_tools_lists_each_tool_with_its_schemas_after_one_connection(api: LocalEngine, project_dir: Path) -> None:
    project = _trusted(api, project_dir)
    def_id = project_definition(project, "plain", {"name": "plain", "command": _noting_pid("plain", "plain")})
    _enable(api, project, def_id)

    result = await api.mcp_server_tools(McpServerQuery(def_id), Caller(project=project, access=WRITE))

    assert result.server.connected and result.server.tools == len(result.tools) == 5
    assert [t.name for t in result.tools] == ["echo", "env", "crash", "slow", "record"]
    echo = result.tools[0]
    assert echo.description == "Echo the text." and echo.title is None and echo.annotations is None
    assert echo.input_schema == {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert result.server.cleanup is not None
    assert group_gone(int((project / "plain.pid").read_text(encoding="utf-8")))
    assert api.state.mcp_servers.cached_tools(project, api.state.mcp_servers.snapshot(project).servers[0]) is None


@pytest.mark.req("CW-03", "CW-04", "CLI-09")
async def test_nothing_is_started_unless_a_task_would_start_it(
    api: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    project = _trusted(api, project_dir)
    run_me = {"command": ["touch", str(marker)]}
    idle = project_definition(project, "idle", {"name": "idle"} | run_me)
    edited = project_definition(project, "edited", {"name": "edited"} | run_me)
    _enable(api, project, edited)
    project_definition(project, "edited", {"name": "edited", "description": "changed"} | run_me)
    caller = Caller(project=project, access=WRITE)

    not_enabled = await api.mcp_server_tools(McpServerQuery("idle"), caller)
    assert not not_enabled.server.connected and not_enabled.tools == []
    assert not_enabled.server.error is not None and "not enabled for this project" in not_enabled.server.error
    assert f"shadowcode mcp enable {idle} --hash" in not_enabled.server.error
    changed = await api.mcp_validate(McpValidate(), caller)
    assert [r.id for r in changed.servers] == [edited] and not changed.ok
    assert changed.servers[0].error is not None and "changed since it was enabled" in changed.servers[0].error

    project_definition(project, "edited", {"name": "edited"} | run_me)  # back to the reviewed bytes
    api.state.projects.untrust(project)
    untrusted = await api.mcp_validate(McpValidate(), caller)
    assert untrusted.servers[0].error is not None and "not trusted" in untrusted.servers[0].error
    api.state.projects.trust(project, PermissionLevel.READ_ONLY)
    read_only = await api.mcp_validate(McpValidate("edited"), caller)
    assert read_only.servers[0].error is not None and "read_only" in read_only.servers[0].error
    assert all(r.skipped for r in (not_enabled.server, *changed.servers, *untrusted.servers, *read_only.servers))
    with pytest.raises(PolicyError, match="needs write access"):
        await api.mcp_validate(McpValidate(), Caller(project=project))  # a read-only frontend starts nothing
    assert not marker.exists()


@pytest.mark.req("CW-03", "CW-04")
async def test_an_unknown_or_shared_name_is_refused_and_no_enabled_server_validates_empty(
    api: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    project = _trusted(api, project_dir)
    caller = Caller(project=project, access=WRITE)
    empty = await api.mcp_validate(McpValidate(), caller)
    assert empty.ok and empty.servers == []
    with pytest.raises(NotFound, match="no MCP server 'nosuch'"):
        await api.mcp_server_tools(McpServerQuery("nosuch"), caller)
    twin = tmp_path / "twin.json"
    twin.write_text(json.dumps({"name": "twin", "command": ["touch", "x"]}), encoding="utf-8")
    api.state.mcp_servers.add(twin)
    project_definition(project, "twin", {"name": "twin", "command": ["touch", "x"]})
    with pytest.raises(NotFound, match="several MCP servers are named 'twin'"):
        await api.mcp_validate(McpValidate("twin"), caller)
    assert not (await api.mcp_validate(McpValidate("config:twin"), caller)).ok
    assert not (project / "x").exists()


@pytest.mark.req("CW-03", "CLI-04")
async def test_an_http_server_is_reported_with_the_task_paths_reason_and_no_credential(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_HTTP_TOKEN", SECRET)
    project = _trusted(api, project_dir)
    def_id = project_definition(
        project,
        "remote",
        {"name": "remote", "url": "http://127.0.0.1:9/mcp", "api_key_env": "PROBE_HTTP_TOKEN", "timeout_sec": 1},
    )
    _enable(api, project, def_id)
    with anyio.fail_after(20):
        report = await api.mcp_validate(McpValidate(), Caller(project=project, access=WRITE))
    (only,) = report.servers
    assert only.transport == "http" and not only.connected and only.error
    assert SECRET not in json.dumps(to_json(report))


@pytest.mark.req("CW-08", "CLI-11")
async def test_validate_reports_authorization_required_for_a_server_asking_for_a_sign_in(
    api: LocalEngine, project_dir: Path
) -> None:
    from tests.support.oauth import oauth_fixture

    project = _trusted(api, project_dir)
    with oauth_fixture() as fixture:
        def_id = project_definition(project, "secure", {"name": "secure", "url": fixture.url, "oauth": {}})
        _enable(api, project, def_id)
        with anyio.fail_after(60):
            report = await api.mcp_validate(McpValidate(), Caller(project=project, access=WRITE))
        counts = fixture.control()
    (only,) = report.servers
    assert not only.connected and only.auth == "authorization_required"
    assert only.error is not None and f"run `shadowcode mcp login {def_id}`" in only.error
    assert counts["refreshes"] == 0 and counts["registrations"] == 0
