"""The sign-in verbs of the engine API: typed in the verb table, the person's own, bounded by the engine.

Covers CW-08.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowcode.engine.api import (
    Access,
    Caller,
    McpAdd,
    McpServerQuery,
    McpSignedIn,
    McpSignedOut,
    McpSignIn,
    McpSignInRef,
    McpSignInStarted,
    verb_named,
)
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.mcp.sign_ins import ProfileSignIns
from shadowcode.errors import NotAvailable, NotFound, PolicyError, UsageError
from shadowcode.profile import Profile
from tests.support.jobs import cli_caller
from tests.support.oauth import OAuthFixture, oauth_fixture, play_browser

pytestmark = [pytest.mark.anyio, pytest.mark.req("CW-08")]


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_fixture() as running:
        yield running


async def _register(api: LocalEngine, project: Path, fixture: OAuthFixture) -> None:
    definition = project / "secure.json"
    definition.write_text(json.dumps({"name": "secure", "url": fixture.url, "oauth": {}}), encoding="utf-8")
    await api.mcp_add(McpAdd(str(definition)), cli_caller(project))


def test_the_sign_in_verbs_are_rows_of_the_table_with_their_own_types() -> None:
    rows = {name: verb_named(name) for name in ("mcp_sign_in", "mcp_sign_in_wait", "mcp_sign_out")}
    assert {n: (r.wire, r.request, r.result) for n, r in rows.items()} == {
        "mcp_sign_in": ("signin/start", McpSignIn, McpSignInStarted),
        "mcp_sign_in_wait": ("signin/wait", McpSignInRef, McpSignedIn),
        "mcp_sign_out": ("signin/remove", McpServerQuery, McpSignedOut),
    }
    assert rows["mcp_sign_in_wait"].deadline_seconds > rows["mcp_sign_in"].deadline_seconds


@pytest.mark.parametrize(
    "caller",
    [
        Caller(access=Access(allow_write=True), confined=True),
        Caller(access=Access(allow_write=False)),
    ],
    ids=["confined", "read-only"],
)
async def test_only_the_persons_own_command_line_signs_in_or_out(
    api: LocalEngine, project_dir: Path, caller: Caller
) -> None:
    caller = Caller(project=project_dir, access=caller.access, confined=caller.confined)
    with pytest.raises(PolicyError, match="shadowcode mcp login"):
        await api.mcp_sign_in(McpSignIn("secure"), caller)
    with pytest.raises(PolicyError):
        await api.mcp_sign_in_wait(McpSignInRef("signin_0"), caller)
    with pytest.raises(PolicyError):
        await api.mcp_sign_out(McpServerQuery("secure"), caller)


async def test_an_unknown_server_or_sign_in_is_refused(api: LocalEngine, project_dir: Path) -> None:
    with pytest.raises(UsageError, match="no MCP server 'nothing'"):
        await api.mcp_sign_in(McpSignIn("nothing"), cli_caller(project_dir))
    with pytest.raises(NotFound, match="no sign-in 'signin_0'"):
        await api.mcp_sign_in_wait(McpSignInRef("signin_0"), cli_caller(project_dir))


async def test_a_started_sign_in_finishes_once_and_signs_out(
    api: LocalEngine, project_dir: Path, fixture: OAuthFixture
) -> None:
    await _register(api, project_dir, fixture)
    caller = cli_caller(project_dir)
    started = await api.mcp_sign_in(McpSignIn("secure", browser=False), caller)
    assert started.server == "config:secure" and started.authorization_url.startswith(fixture.origin)
    assert started.callback_url.startswith("http://127.0.0.1:")
    assert await play_browser(started.authorization_url) == 200
    done = await api.mcp_sign_in_wait(McpSignInRef(started.sign_in), caller)
    assert done.server == "config:secure" and done.signed_in and done.issuer.startswith(fixture.origin)
    with pytest.raises(NotFound):  # handed over once
        await api.mcp_sign_in_wait(McpSignInRef(started.sign_in), caller)
    assert await api.mcp_sign_out(McpServerQuery("secure"), caller) == McpSignedOut("config:secure", True)
    assert await api.mcp_sign_out(McpServerQuery("config:secure"), caller) == McpSignedOut("config:secure", False)


async def test_stopping_the_engine_ends_a_waiting_sign_in_and_stores_nothing(
    profile: Profile, project_dir: Path, fixture: OAuthFixture
) -> None:
    engine = LocalEngine(profile)
    try:
        async with engine.running():
            await _register(engine, project_dir, fixture)
            started = await engine.mcp_sign_in(McpSignIn("secure", browser=False), cli_caller(project_dir))
        with pytest.raises(NotAvailable, match="nothing was stored"):
            await engine.state.logins.wait(started.sign_in)
        assert ProfileSignIns(profile, "config:secure", fixture.url).remove() is False  # nothing was stored
    finally:
        await engine.aclose()
