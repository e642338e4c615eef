"""The conformance suite builds from its folder alone and runs against a foreign server (CONF-01).

``conformance/`` is copied out of the checkout (without ``node_modules`` or build leftovers), a
zipapp is built from the copy with shiv exactly as docs/conformance.md shows, and the archive
runs from an empty folder with only ``PATH`` and ``HOME`` set, under ``--profile generic``,
against the bare Python SDK server the copy carries, with the copy's bundled baseline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.req("CONF-01"), pytest.mark.slow]

SUITE = Path(__file__).resolve().parents[2] / "conformance"
BUILD_TIMEOUT_SECONDS = 300
RUN_TIMEOUT_SECONDS = 120
CHECKS = ("generic:split_utf8_frame", "generic:invalid_json_answered")


def _base_python() -> str:
    """The interpreter the virtualenv was made from: it has none of the project's packages."""
    return getattr(sys, "_base_executable", None) or sys.executable


def test_a_copy_of_the_folder_builds_an_archive_that_checks_a_foreign_server(tmp_path: Path) -> None:
    copy = tmp_path / "conformance-copy"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("node_modules", "build", "*.egg-info", "__pycache__"))
    archive = tmp_path / "conformance.pyz"
    shiv = Path(sys.executable).parent / "shiv"
    built = subprocess.run(
        [
            str(shiv),
            "--compressed",
            "-c",
            "shadowcode-conformance",
            "-p",
            "/usr/bin/env python3",
            "-o",
            str(archive),
            ".",
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=BUILD_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]

    work, home = tmp_path / "run", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    python = _base_python()
    server = copy / "shadowcode_conformance" / "fixtures" / "servers" / "python_sdk_server.py"
    target = f"{sys.executable} {server}"  # the server under test brings its own SDK
    done = subprocess.run(
        [python, "-I", str(archive), "--profile", "generic", "--target", target, "--jobs", "2"]
        + ["--only", ",".join(CHECKS), "--expected-failures", "python-sdk-server"],
        cwd=work,
        env={"PATH": os.pathsep.join([str(Path(python).parent), "/usr/bin", "/bin"]), "HOME": str(home)},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    report = json.loads((work / "conformance-out" / "report.json").read_text(encoding="utf-8"))
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "generic:split_utf8_frame": "pass",
        "generic:invalid_json_answered": "expected_warn",
    }, report["checks"]
    assert report["target"] == [sys.executable, str(server)]
