"""``shadowcode test`` as a person uses it (cli/testjob.py): a test job with an exact approval,
followed to its end. Covers SRV-17, ENG-07.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.engine import PY, cli, cli_env, wait_for_sync

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses unix sockets and /proc")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.mark.req("SRV-17", "ENG-07")
def test_a_test_job_waits_for_its_exact_approval_and_exits_with_the_tests_verdict(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert cli(home, "trust", "--level", "workspace", str(project)).returncode == 0
    argv = [PY, "-c", "print('all ' + 'green')"]
    follower = subprocess.Popen(
        [PY, "-m", "shadowcode", "--workspace", str(project), "test", "--", *argv],
        env=cli_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        [approval] = wait_for_sync(
            lambda: json.loads(cli(home, "--json", "approvals").stdout)["approvals"], timeout=30, what="approval"
        )
        assert approval["kind"] == "test" and approval["action"]["argv"] == argv
        assert cli(home, "approve", approval["id"]).returncode == 0
        out, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, err
    assert "waiting for approval" in out and "all green" in out and "done" in out


@pytest.mark.req("SRV-17")
def test_a_test_job_on_an_untrusted_project_is_refused(home: Path, tmp_path: Path) -> None:
    refused = cli(home, "test", "--", "true", workspace=tmp_path)
    assert refused.returncode == 3 and "shadowcode trust" in refused.stderr and refused.stdout == ""
    assert json.loads(cli(home, "--json", "jobs").stdout)["jobs"] == []
