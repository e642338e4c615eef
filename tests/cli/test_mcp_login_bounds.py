"""``mcp login`` (and a connection's refresh) against hostile authorization servers, measured from outside.

Covers CW-08.

Each command runs under ``shadowcode_conformance/fixtures/peak_rss.py``, which reports the peak resident memory of
that one process (``wait4``): a compression bomb (2.4 KiB sent as ``gzip, gzip``, 1 GiB
inflated) in the metadata, registration, token or refresh reply must be refused with the
cause named while the process stays under 100 MiB; and without metadata, nothing may reach a
guessed endpoint.
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

PEAK_RSS = Path(__file__).resolve().parents[2] / "conformance/shadowcode_conformance/fixtures/peak_rss.py"
PEAK_MAX_KIB = 100 * 1024
URL_LINE = re.compile(r"authorization URL: (\S+)")


@pytest.fixture(scope="module")
def fixture() -> Iterator[OAuthFixture]:
    with oauth_fixture() as running:
        yield running


def _setup(home: Path, project: Path, fixture: OAuthFixture, *, enable: bool = False) -> None:
    definition = project / "secure.json"
    definition.write_text(json.dumps({"name": "secure", "url": fixture.url, "oauth": {}}), encoding="utf-8")
    assert cli(home, "mcp", "add", str(definition), workspace=project, timeout=120).returncode == 0
    if enable:
        assert cli(home, "trust", "--level", "workspace", str(project), workspace=project).returncode == 0
        catalog = json.loads(cli(home, "--json", "mcp", workspace=project).stdout)
        digest = next(s["hash"] for s in catalog["servers"] if s["id"] == "config:secure")
        enabled = cli(home, "mcp", "enable", "config:secure", "--hash", digest, workspace=project)
        assert enabled.returncode == 0, enabled.stderr


def _measured(home: Path, project: Path, report: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, str(PEAK_RSS), str(report), PY, "-m", "shadowcode", "--workspace", str(project), *args],
        env=cli_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def _finish(proc: subprocess.Popen[str], *, play: bool) -> tuple[str, str]:
    """Play the browser when ``play`` (once the URL is printed), then wait for the command."""
    try:
        err_head = ""
        if play:
            assert proc.stderr is not None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                err_head += line
                found = URL_LINE.search(line)
                if found:
                    anyio.run(play_browser, found.group(1))
                    break
                assert line, f"the login ended before printing the authorization URL: {err_head}"
        out, err = proc.communicate(timeout=120)
        return out, err_head + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _peak_kib(report: Path) -> int:
    return int(report.read_text(encoding="utf-8"))


@pytest.mark.parametrize("bad", ["bomb-metadata", "bomb-registration", "bomb-token"])
def test_a_sign_in_bomb_is_refused_and_mcp_login_stays_under_100_mib(
    tmp_path: Path, fixture: OAuthFixture, bad: str
) -> None:
    home, report = tmp_path / "home", tmp_path / "peak"
    _setup(home, tmp_path, fixture)
    fixture.control(bad=bad, bomb_mib=1024)
    try:
        proc = _measured(home, tmp_path, report, "mcp", "login", "secure", "--no-browser")
        out, err = _finish(proc, play=bad == "bomb-token")
    finally:
        fixture.control(bad=None)
    assert proc.returncode == 1, err
    assert "sent a compressed reply during sign-in" in err and "Traceback" not in err
    assert _peak_kib(report) < PEAK_MAX_KIB, f"peak RSS {_peak_kib(report)} KiB"
    assert out == ""


def test_a_refresh_bomb_is_refused_and_the_connection_start_stays_under_100_mib(
    tmp_path: Path, fixture: OAuthFixture
) -> None:
    home, report = tmp_path / "home", tmp_path / "peak"
    _setup(home, tmp_path, fixture, enable=True)
    fixture.control(expires_in=1)
    try:
        login = _measured(home, tmp_path, tmp_path / "login-peak", "mcp", "login", "secure", "--no-browser")
        _, err = _finish(login, play=True)
        assert login.returncode == 0, err
        fixture.control(bad="bomb-refresh", bomb_mib=1024)
        before = fixture.control()["refreshes"]
        proc = _measured(home, tmp_path, report, "mcp", "tools", "secure")
        out, err = _finish(proc, play=False)
        refreshes = fixture.control()["refreshes"] - before
    finally:
        fixture.control(bad=None, expires_in=3600)
    assert proc.returncode == 1, out + err
    assert "compressed reply during sign-in" in out and "Traceback" not in err
    assert refreshes == 1
    assert _peak_kib(report) < PEAK_MAX_KIB, f"peak RSS {_peak_kib(report)} KiB"


def test_without_metadata_mcp_login_sends_nothing_to_a_guessed_endpoint(tmp_path: Path, fixture: OAuthFixture) -> None:
    home = tmp_path / "home"
    _setup(home, tmp_path, fixture)
    fixture.control(bad="no-metadata", requests=[])
    try:
        before = fixture.control()["registrations"]
        done = cli(home, "mcp", "login", "secure", "--no-browser", workspace=tmp_path, timeout=120)
        seen = fixture.control()
    finally:
        fixture.control(bad=None)
    assert done.returncode == 1 and "guessed endpoints (/register, /authorize, /token) are not used" in done.stderr
    assert seen["registrations"] == before
    assert [r for r in seen["requests"] if not r.startswith("GET ")] == ["POST /mcp"]
