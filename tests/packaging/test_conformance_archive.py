"""``dist/conformance.pyz``: the conformance suite runs on its own, outside the checkout (CONF-01).

``ci/build`` builds it beside ``dist/shadowcode.pyz`` from ``conformance/pyproject.toml`` with
the same lock and entry. These tests read the built archive, then run it from an empty folder
with only ``PATH`` and ``HOME`` set and an interpreter outside the project's virtualenv, against
a bare Python SDK server (``bench/bare_server.py``) under ``--profile generic``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.zipapp import ZipappFiles

pytestmark = pytest.mark.req("CONF-01")

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "dist" / "conformance.pyz"
SERVER = REPO / "bench" / "bare_server.py"
RUN_TIMEOUT_SECONDS = 120
CHECKS = ("generic:split_utf8_frame", "generic:invalid_json_answered")
"""Fast generic checks, run side by side; the bare SDK server fails the second, as the bundled baseline says."""
TAGS = {f"cp{v}-manylinux_{m}" for v in ("311", "312", "313", "314") for m in ("x86_64", "aarch64")}


def _built() -> Path:
    if not ARCHIVE.is_file():
        pytest.fail("build it first: bash ci/build")
    return ARCHIVE


def _base_python() -> str:
    """The interpreter the virtualenv was made from: it has none of the project's packages."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python3 -I conformance.pyz ARGS`` in ``tmp/run`` with only PATH and HOME (``tmp/home``)."""
    work, home = tmp / "run", tmp / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    python = _base_python()
    env = {"PATH": os.pathsep.join([str(Path(python).parent), "/usr/bin", "/bin"]), "HOME": str(home)}
    target = f"{sys.executable} {SERVER}"  # the server under test brings its own SDK
    return subprocess.run(
        [python, "-I", str(_built()), "--profile", "generic", "--target", target, "--jobs", "2", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_archive_carries_the_suite_its_data_and_only_its_own_dependencies() -> None:
    files = ZipappFiles(_built())
    names = files.names
    tags = json.loads(files.read("_platlib/manifest.json"))["tags"]
    site = "site-packages/shadowcode_conformance/"
    for data in (
        "expected_failures.yml",
        "baselines/python-sdk-server.yml",
        "baselines/server-everything.yml",
        "fixtures/sample_project.py",
        "fixtures/projects/sample/notebook/store.py",
        "fixtures/servers/python_sdk_server.py",
        "node_probes/package.json",
        "node_probes/package-lock.json",
        "node_probes/probes/stdio_sdk1.mjs",
        "node_probes/lib/harness.mjs",
        "checks/generic.py",
    ):
        assert site + data in names, data
    assert not [n for n in names if "/node_modules/" in n or "__pycache__" in n]
    assert not [n for n in names if n.startswith(("site-packages/shadowcode/", "site-packages/typer/"))]
    assert "site-packages/mcp/__init__.py" in names and "site-packages/yaml/__init__.py" in names
    assert set(tags) == TAGS
    assert all(any(w.startswith("pydantic_core-") for w in t["wheels"]) for t in tags.values())


@pytest.mark.slow
def test_it_runs_from_an_empty_folder_and_its_exit_status_follows_the_baseline(tmp_path: Path) -> None:
    done = _run(tmp_path, "--only", ",".join(CHECKS), "--expected-failures", "python-sdk-server")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    out = tmp_path / "run" / "conformance-out"
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (out / "report.md").is_file()
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    # A line that is not JSON dropped silently is a robustness finding: a baselined warning.
    assert statuses == {
        "generic:split_utf8_frame": "pass",
        "generic:invalid_json_answered": "expected_warn",
    }, report["checks"]
    assert report["target"] == [sys.executable, str(SERVER)]

    # A baseline entry whose check passes is stale and fails the run; the unpacked copy is reused.
    stale = tmp_path / "run" / "stale.yml"
    stale.write_text('- check: "generic:split_utf8_frame"\n  reason: "listed, yet it passes"\n', encoding="utf-8")
    done = _run(tmp_path, "--only", "generic:split_utf8_frame", "--expected-failures", str(stale), "--out", "stale")
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "run" / "stale" / "report.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in report["checks"]] == ["pass"]
    assert "STALE generic:split_utf8_frame" in done.stderr
