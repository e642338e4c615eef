"""``shadowcode mcp login`` / ``logout`` as a user (or an adapter playing the browser) runs them.

Covers CW-08.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.support.engine import PY, cli, cli_env
from tests.support.oauth import OAuthFixture, oauth_fixture, play_browser

pytestmark = pytest.mark.req("CW-08")

URL_LINE = re.compile(r"authorization URL: (\S+)")


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_fixture() as running:
        yield running


def _register(home: Path, tmp_path: Path, fixture: OAuthFixture) -> None:
    definition = tmp_path / "secure.json"
    definition.write_text(json.dumps({"name": "secure", "url": fixture.url, "oauth": {}}), encoding="utf-8")
    added = cli(home, "mcp", "add", str(definition), workspace=tmp_path)
    assert added.returncode == 0, added.stderr


def _start_login(home: Path, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "shadowcode", "--workspace", str(tmp_path), "mcp", "login", "secure", "--no-browser", *extra],
        env=cli_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def _authorization_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        found = URL_LINE.search(line)
        if found:
            return found.group(1)
        assert line, "the login ended before printing the authorization URL"
    raise AssertionError("no authorization URL within 60 s")


def test_login_by_a_caller_playing_the_browser_then_logout(tmp_path: Path, fixture: OAuthFixture) -> None:
    home = tmp_path / "home"
    _register(home, tmp_path, fixture)
    doctor = cli(home, "--json", "mcp", "doctor", workspace=tmp_path)
    assert "authorization_required: run `shadowcode mcp login config:secure`" in doctor.stdout
    proc = _start_login(home, tmp_path)
    try:
        url = _authorization_url(proc)
        assert url.startswith(fixture.origin + "/as1/authorize?") and "code_challenge_method=S256" in url
        second = cli(home, "mcp", "login", "secure", "--no-browser", workspace=tmp_path)
        assert second.returncode == 2 and "is in progress" in second.stderr
        assert anyio.run(play_browser, url) == 200
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.startswith("signed in to config:secure (issuer " + fixture.origin + "/as1")
    stored = json.loads((home / "profiles/default/secrets.json").read_text(encoding="utf-8"))
    (record,) = [json.loads(v) for k, v in stored.items() if k.startswith("mcp-oauth:")]
    access = record["token"]["access_token"]
    assert access not in out + err and record["token"]["refresh_token"] not in out + err
    assert "authorization_required" not in cli(home, "--json", "mcp", "doctor", workspace=tmp_path).stdout
    listed = cli(home, "--json", "secret", "list", workspace=tmp_path)
    assert "mcp-oauth" not in listed.stdout
    for path in home.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            assert access.encode() not in path.read_bytes(), path
    logout = cli(home, "mcp", "logout", "config:secure", workspace=tmp_path)
    assert logout.returncode == 0 and "signed out of config:secure" in logout.stdout
    stored = json.loads((home / "profiles/default/secrets.json").read_text(encoding="utf-8"))
    assert not any(k.startswith("mcp-oauth:") for k in stored)


def test_a_denied_login_exits_1_with_the_reason_and_stores_nothing(tmp_path: Path, fixture: OAuthFixture) -> None:
    home = tmp_path / "home"
    _register(home, tmp_path, fixture)
    fixture.control(bad="deny")
    proc = _start_login(home, tmp_path)
    try:
        url = _authorization_url(proc)
        anyio.run(play_browser, url)
        _, err = proc.communicate(timeout=60)
    finally:
        fixture.control(bad=None)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1 and "the sign-in was denied" in err and "Traceback" not in err
    assert not (home / "profiles/default/secrets.json").exists() or "mcp-oauth" not in (
        home / "profiles/default/secrets.json"
    ).read_text(encoding="utf-8")


def test_login_of_a_stdio_server_or_an_unknown_one_is_bad_usage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    unknown = cli(home, "mcp", "login", "nothing", "--no-browser", workspace=tmp_path)
    assert unknown.returncode == 2 and "no MCP server 'nothing'" in unknown.stderr


def test_a_confidential_client_logs_in_with_its_secret_which_stays_out_of_every_output(
    tmp_path: Path, fixture: OAuthFixture
) -> None:
    home, secret = tmp_path / "home", "conf-secret-9f2c"
    fixture.control(confidential={"client_id": "pre-reg", "client_secret": secret})
    try:
        oauth = {"client_id": "pre-reg", "issuer": fixture.origin + "/as1", "client_secret_env": "SECURE_SECRET"}
        definition = tmp_path / "secure.json"
        definition.write_text(json.dumps({"name": "secure", "url": fixture.url, "oauth": oauth}), encoding="utf-8")
        assert cli(home, "mcp", "add", str(definition), workspace=tmp_path, timeout=120).returncode == 0
        missing = cli(home, "mcp", "login", "secure", "--no-browser", workspace=tmp_path, timeout=120)
        assert missing.returncode == 2 and "SECURE_SECRET" in missing.stderr
        proc = subprocess.Popen(
            [PY, "-m", "shadowcode", "--workspace", str(tmp_path), "mcp", "login", "secure", "--no-browser"],
            env=cli_env(home) | {"SECURE_SECRET": secret},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        try:
            assert anyio.run(play_browser, _authorization_url(proc)) == 200
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, err
        listing = cli(home, "--json", "mcp", workspace=tmp_path, timeout=120).stdout
        assert "SECURE_SECRET" in listing
        assert secret not in out + err + listing
        for path in home.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    finally:
        fixture.control(confidential=None)
