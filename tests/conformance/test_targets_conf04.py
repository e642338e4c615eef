"""The whole conformance suite against the source tree and against the packaged zipapp (CONF-04).

Each target is its own test. The run uses the shipped expected-failures baseline, must exit
0, must prove every id in ``MUST_PASS`` and every id a registered check covers (unless only
baselined checks cover it); ids that no check covers must be reported as not covered, never
as passing. The zipapp is run twice: once as is, where each stdio server opens a temporary
engine, and once with ``--attached``, where a headless engine runs in every check's profile
and servers relay into it. Both must pass the same ids. CI builds the zipapp with ``bash
ci/build`` before the tests. Under every other carried CPython installed here the zipapp runs
the bounded subset ``PER_INTERPRETER_CHECKS`` (PKG-01: one archive for every interpreter).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shadowcode_conformance.cli import DEFAULT_EXPECTED_FAILURES
from shadowcode_conformance.registry import load_checks
from shadowcode_conformance.report import load_expected_failures
from tests.support.interpreters import ARCHIVE_PYTHONS, default_python_version, find_python

REPO_ROOT = Path(__file__).resolve().parents[2]
ZIPAPP = REPO_ROOT / "dist" / "shadowcode.pyz"
RUN_TIMEOUT_SECONDS = 1500
"""Seconds one whole suite run may take inside the test suite, which runs beside other tests on
2 cores: the sign-in, timeout and discovery checks of external servers take minutes each."""
PER_INTERPRETER_CHECKS = "packaging,python_client,node_stdio"
"""The checks the zipapp runs under each non-default interpreter: start-up, both SDK clients."""
PER_INTERPRETER_TIMEOUT_SECONDS = 240
"""The bound on each interpreter's subset run (about 40 s on an idle 2-core machine)."""

MUST_PASS = (
    "ENG-01 ENG-02 SRV-01 SRV-02 SRV-03 SRV-04 SRV-05 SRV-06 SRV-07 SRV-08 SRV-09 SRV-12 SRV-13 SRV-14 SRV-19 "
    "SRV-20 REG-01 REG-02 REG-03 REG-04 REG-05 REG-06 REG-07 REG-08 PKG-01 CONF-01"
).split()


def _explain(report: dict[str, Any], done: subprocess.CompletedProcess[str]) -> str:
    """The failing checks and baseline problems, with details, for the assertion message."""
    lines = [f"exit {done.returncode}"]
    for c in report.get("checks", []):
        if c.get("status") == "fail":
            lines.append(f"FAIL {c['name']} ({', '.join(c['covers'])}): {c['detail']}")
    for e in report.get("expected_failures", []):
        if e.get("outcome") != "failed_as_expected":
            lines.append(f"{e['outcome'].upper()} baseline entry {e['check']}")
    lines.append("stderr tail: " + done.stderr[-3000:])
    return "\n".join(lines)


def _covered_ids() -> set[str]:
    """Every id some registered check covers, leaving out checks the shipped baseline lists."""
    baselined = {e.check for e in load_expected_failures(DEFAULT_EXPECTED_FAILURES)}
    return {i for c in load_checks().values() if c.name not in baselined for i in c.covers}


def _run_suite(target: str, out: Path, *flags: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    argv = [sys.executable, "-m", "shadowcode_conformance", "--target", target, "--out", str(out), *flags]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
        encoding="utf-8",
    )
    report_path = out / "report.json"
    assert report_path.is_file(), f"no report was written (exit {done.returncode}): {done.stderr[-3000:]}"
    return json.loads(report_path.read_text(encoding="utf-8")), done


def _assert_conformant(report: dict[str, Any], done: subprocess.CompletedProcess[str]) -> None:
    why = _explain(report, done)
    assert done.returncode == 0, why
    statuses = {r["id"]: r["status"] for r in report["results"]}
    not_passing = {i: statuses.get(i) for i in MUST_PASS if statuses.get(i) != "pass"}
    assert not not_passing, f"ids not proven: {not_passing}\n{why}"
    covered = {i: statuses.get(i) for i in sorted(_covered_ids()) if statuses.get(i) != "pass"}
    assert not covered, f"ids covered by a check but not passing: {covered}\n{why}"
    for row in report["results"]:
        if not row["checks"]:
            assert row["status"] == "not_covered", f"{row['id']} is {row['status']!r} with no counted check"
        if row["status"] == "pass":
            assert row["checks"], f"{row['id']} passes without a check"


@pytest.mark.req("CONF-04", "CONF-01")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_suite_passes_against_the_source_tree(tmp_path: Path) -> None:
    report, done = _run_suite(shlex.join([sys.executable, "-m", "shadowcode"]), tmp_path / "source")
    _assert_conformant(report, done)
    assert report["target"] == [sys.executable, "-m", "shadowcode"]
    assert report["engine"] == "temporary"


@pytest.mark.req("CONF-04", "PKG-01")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_suite_passes_against_the_packaged_zipapp(tmp_path: Path) -> None:
    if not ZIPAPP.is_file():
        pytest.fail("build it first: bash ci/build")
    report, done = _run_suite("python3 dist/shadowcode.pyz", tmp_path / "zipapp")
    _assert_conformant(report, done)
    assert report["target"] == ["python3", "dist/shadowcode.pyz"]
    assert report["engine"] == "temporary"


@pytest.mark.req("CONF-04", "CONF-03", "ENG-03")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)
def test_suite_passes_the_same_ids_through_a_running_headless_engine(tmp_path: Path) -> None:
    if not ZIPAPP.is_file():
        pytest.fail("build it first: bash ci/build")
    report, done = _run_suite("python3 dist/shadowcode.pyz", tmp_path / "attached", "--attached")
    _assert_conformant(report, done)
    assert report["target"] == ["python3", "dist/shadowcode.pyz"]
    assert report["engine"] == "attached"
    checks = {c["name"]: c for c in report["checks"]}
    assert "engine attached" in checks["python_client:auto"]["detail"], checks["python_client:auto"]
    assert "relay into the headless engine" in checks["delegation:sigkill_cancels_task"]["detail"]


@pytest.mark.req("CONF-04", "PKG-01")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(PER_INTERPRETER_TIMEOUT_SECONDS * (len(ARCHIVE_PYTHONS) - 1) + 60)
def test_the_zipapp_passes_start_up_and_sdk_checks_under_each_other_interpreter(tmp_path: Path) -> None:
    """One after the other, not side by side: two suites at once on a small machine time out each other."""
    others = [v for v in ARCHIVE_PYTHONS if v != default_python_version()]
    found = {v: p for v in others if (p := find_python(v)) is not None}
    if not found:
        pytest.skip(f"no other carried CPython on this machine (looked for {', '.join(others)} on PATH and pyenv)")
    if not ZIPAPP.is_file():
        pytest.fail("build it first: bash ci/build")
    for version, python in found.items():
        target = shlex.join([python, "dist/shadowcode.pyz"])
        report, done = _run_suite(target, tmp_path / version, "--only", PER_INTERPRETER_CHECKS, "--jobs", "2")
        why = f"CPython {version}: " + _explain(report, done)
        assert done.returncode == 0, why
        assert report["checks"] and all(c["status"] == "pass" for c in report["checks"]), why
        assert {r["id"]: r["status"] for r in report["results"]}.get("PKG-01") == "pass", why
