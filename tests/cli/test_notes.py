"""``shadowcode goal …`` and ``shadowcode memory …`` as a person uses them (cli/notes.py).

Covers SRV-12, SRV-14: the rules of shadow_goal and shadow_memory hold at the terminal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.engine import cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses unix sockets and /proc")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    done = cli(home, "trust", "--level", "workspace", str(folder))
    assert done.returncode == 0, done.stderr
    return folder.resolve()


@pytest.mark.req("SRV-14")
def test_a_goal_is_created_advanced_listed_and_an_abandoned_one_does_not_advance(home: Path, project: Path) -> None:
    made = cli(home, "--json", "goal", "create", "ship the release", workspace=project)
    assert made.returncode == 0, made.stderr
    goal = json.loads(made.stdout)["goal"]["id"]
    advanced = cli(home, "goal", "advance", goal, "tests pass", workspace=project)
    assert advanced.returncode == 0 and "tests pass" in advanced.stdout
    listed = cli(home, "goal", "list", workspace=project)
    assert f"{goal}  active" in listed.stdout and "ship the release" in listed.stdout

    assert cli(home, "goal", "abandon", goal, "--note", "dropped", workspace=project).returncode == 0
    refused = cli(home, "goal", "advance", goal, "more", workspace=project)
    assert refused.returncode != 0 and "abandoned" in refused.stderr and refused.stdout == ""
    shown = json.loads(cli(home, "--json", "goal", "show", goal, workspace=project).stdout)["goal"]
    assert shown["status"] == "abandoned" and [p["note"] for p in shown["progress"]] == ["tests pass", "dropped"]


@pytest.mark.req("SRV-12")
def test_memory_replace_needs_the_current_hash_and_a_stale_one_changes_nothing(home: Path, project: Path) -> None:
    assert cli(home, "memory", "append", "first paragraph", workspace=project).returncode == 0
    read = json.loads(cli(home, "--json", "memory", "read", workspace=project).stdout)
    assert read["content"] == "first paragraph"
    assert cli(home, "memory", "append", "second", workspace=project).returncode == 0

    stale = cli(home, "memory", "replace", "overwritten", "--expected-hash", read["hash"], workspace=project)
    assert stale.returncode == 1 and "stale" in stale.stderr and stale.stdout == ""
    now = json.loads(cli(home, "--json", "memory", "read", workspace=project).stdout)
    assert "first paragraph" in now["content"] and "second" in now["content"]

    fresh = cli(home, "--json", "memory", "replace", "clean", "--expected-hash", now["hash"], workspace=project)
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads(cli(home, "--json", "memory", "read", workspace=project).stdout)["content"] == "clean"


@pytest.mark.req("SRV-12", "SRV-14")
def test_changes_on_an_untrusted_project_are_refused_and_reads_are_not(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "untrusted"
    folder.mkdir()
    for args in (
        ("goal", "create", "x"),
        ("goal", "advance", "goal_000000000000", "x"),
        ("goal", "abandon", "goal_000000000000"),
        ("memory", "append", "x"),
        ("memory", "replace", "x", "--expected-hash", "0" * 64),
    ):
        refused = cli(home, *args, workspace=folder)
        assert refused.returncode == 3, (args, refused.stderr)
        assert "shadowcode trust" in refused.stderr and refused.stdout == ""
    assert cli(home, "goal", "list", workspace=folder).stdout.strip() == "no goals"
    assert cli(home, "--json", "memory", "read", workspace=folder).returncode == 0
