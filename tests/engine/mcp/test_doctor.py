"""``mcp doctor``: static checks of definitions and grants, nothing started (engine/mcp/doctor.py).

Covers CW-03.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowcode.engine.api import Caller, Empty
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.doctor import url_problems
from shadowcode.engine.wire import to_json
from shadowcode.enums import PermissionLevel
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX
from shadowcode.mcp.client.definitions import HttpSpec
from shadowcode.secrets import SecretStore
from tests.support.mcp_client import project_definition

pytestmark = [pytest.mark.anyio, pytest.mark.req("CW-03")]

SECRET = "doctor-secret-93c1a7"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _findings(report: object) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for problem in to_json(report)["problems"]:
        found.setdefault(problem["server"] or "", []).append((problem["check"], problem["message"]))
    return found


async def test_doctor_reports_each_static_problem_and_starts_nothing(
    api: LocalEngine, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    writes_marker = f"open({str(marker)!r}, 'w').close()"
    project = api.state.project_at(project_dir).path
    api.state.projects.trust(project, PermissionLevel.WORKSPACE)
    registry = api.state.mcp_servers
    monkeypatch.setenv("DOCTOR_SET", SECRET)
    monkeypatch.delenv("DOCTOR_STORED", raising=False)
    monkeypatch.delenv("DOCTOR_UNSET", raising=False)
    SecretStore(api.state.profile).set("DOCTOR_STORED", SECRET)
    script = project / "server.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    script.chmod(0o644)

    fine = project_definition(
        project,
        "fine",
        {
            "name": "fine",
            "command": ["python3", "-c", writes_marker],
            "env_refs": {"A": "DOCTOR_SET", "B": "DOCTOR_STORED"},
        },
    )
    missing_cmd = project_definition(project, "nocmd", {"name": "nocmd", "command": ["no-such-program-7c2e", "x"]})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "own-path-server").write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    (bin_dir / "own-path-server").chmod(0o755)
    own_path = project_definition(
        project, "ownpath", {"name": "ownpath", "command": ["own-path-server"], "env": {"PATH": str(bin_dir)}}
    )
    not_exec = project_definition(project, "noexec", {"name": "noexec", "command": ["./server.sh"]})
    unresolved = project_definition(
        project,
        "noenv",
        {"name": "noenv", "command": ["python3", "-c", writes_marker], "env_refs": {"T": "DOCTOR_UNSET"}},
    )
    remote = project_definition(
        project, "remote", {"name": "remote", "url": "https://example.com/mcp", "api_key_env": "DOCTOR_UNSET"}
    )
    edited = project_definition(project, "edited", {"name": "edited", "command": ["python3", "-c", writes_marker]})
    gone = project_definition(project, "gone", {"name": "gone", "command": ["python3", "-c", writes_marker]})
    for def_id in (fine, edited, gone):
        definition = next(d for d in registry.definitions(project) if d.id == def_id)
        registry.enable(project, def_id, definition.sha256, trusted=True)  # type: ignore[union-attr]
    project_definition(project, "edited", {"name": "edited", "command": ["python3", "-c", writes_marker, "x"]})
    (project / ".shadowcode" / "mcp" / "gone.json").unlink()
    broken = project / ".shadowcode" / "mcp" / "broken.json"
    broken.write_text('{"name": "broken", "command": "server --stdio"}', encoding="utf-8")

    report = await api.mcp_doctor(Empty(), Caller(project=project))

    found = _findings(report)
    assert fine not in found and own_path not in found  # found on the definition's own PATH
    assert found[missing_cmd] == [
        ("command", "the command 'no-such-program-7c2e' is not an executable found on the PATH servers start with")
    ]
    assert found[not_exec] == [("command", "the command './server.sh' is not executable")]
    assert found[unresolved] == [
        (
            "env",
            "env_refs: T refers to DOCTOR_UNSET, which is neither set in the environment nor stored "
            "(store it with `shadowcode secret set DOCTOR_UNSET`)",
        )
    ]
    assert found[edited] == [("grant", "changed since it was enabled: review it and enable it again, or disable it")]
    assert found[remote] == [
        ("url", NOT_COVERED),
        (
            "env",
            "api_key_env refers to DOCTOR_UNSET, which is neither set in the environment nor stored "
            "(store it with `shadowcode secret set DOCTOR_UNSET`)",
        ),
    ]
    assert found[gone] == [("grant", "enabled but missing: restore the definition or disable it")]
    assert found["project:.shadowcode/mcp/broken.json"][0][0] == "definition"
    assert set(report.servers) >= {fine, missing_cmd, not_exec, unresolved, edited, gone}
    assert SECRET not in json.dumps(to_json(report))
    assert not marker.exists()  # nothing was started


async def test_doctor_reports_grants_over_the_limit_and_a_clean_project_has_no_problem(
    api: LocalEngine, project_dir: Path
) -> None:
    project = api.state.project_at(project_dir).path
    api.state.projects.trust(project, PermissionLevel.WORKSPACE)
    caller = Caller(project=project)
    project_definition(project, "ok", {"name": "ok", "command": ["python3", "-c", "pass"]})
    assert (await api.mcp_doctor(Empty(), caller)).problems == []
    rows = api.state.store.mcp_servers
    for index in range(MCP_ENABLED_SERVERS_MAX):
        rows.grant(project, f"config:s{index}", "0" * 64)
    at_limit = _findings(await api.mcp_doctor(Empty(), caller))
    assert "" not in at_limit  # grants of missing definitions, each reported, but no limit problem
    rows.grant(project, "config:extra", "0" * 64)
    over = _findings(await api.mcp_doctor(Empty(), caller))
    assert over[""] == [
        (
            "limit",
            f"{MCP_ENABLED_SERVERS_MAX + 1} servers are enabled for this project; the limit is "
            f"{MCP_ENABLED_SERVERS_MAX} (disable some)",
        )
    ]


NOT_COVERED = (
    "the server's host 'example.com' is not on the loopback interface and the network permission "
    "does not cover it; add it to the profile setting mcp.network_hosts to allow it"
)
PLAIN_BEARER = (
    "the server URL sends a credential ('api_key_env', 'bearer_token_env_var', 'env_headers' or OAuth) to a network "
    "host over plain http; use https (a bearer credential goes in clear text only to a loopback address)"
)


@pytest.mark.req("CLI-11")
@pytest.mark.parametrize(
    ("url", "key", "allowed", "expected"),
    [
        ("http://127.0.0.1:8000/mcp", "KEY", (), []),
        ("http://localhost:8000/mcp", "KEY", (), []),
        ("http://[::1]:8000/mcp", "KEY", (), []),
        ("https://example.com/mcp", "KEY", ("example.com",), []),
        ("http://example.com/mcp", None, ("example.com",), []),
        ("https://example.com/mcp", "KEY", (), [NOT_COVERED]),
        ("https://example.com/mcp", None, ("other.example",), [NOT_COVERED]),
    ],
)  # fmt: skip
def test_url_rules_and_the_network_permission_are_the_clients_own(
    url: str, key: str | None, allowed: tuple[str, ...], expected: list[str]
) -> None:
    assert url_problems(HttpSpec(name="remote", url=url, api_key_env=key), frozenset(allowed)) == expected


@pytest.mark.req("CLI-11")
def test_a_bearer_over_plain_http_off_loopback_is_refused_before_the_permission_is_looked_at() -> None:
    spec = HttpSpec.model_construct(name="remote", url="http://example.com/mcp", api_key_env="KEY")
    assert url_problems(spec, frozenset({"example.com"})) == [PLAIN_BEARER]
