"""One report for everything: ``--official`` scenarios and the generic profile over HTTP (``--url``).

Covers CONF-01 (official checks folded into report.json, report.md and the JUnit file, each with
its own name and ids; "not run" when Node 22 or the package is missing, or when the run was not
given --url / --target), GW-04 and GW-05 as the generic HTTP checks prove them against the bare
Python SDK server (bench/bare_http_server.py) with its baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from conformance.cli import main
from conformance.official import installed
from conformance.registry import CHECKS, load_checks
from conformance.report import NOT_ASKED, UNAVAILABLE, CheckRecord, build_report, report_failed
from conformance.runner import run_one
from tests.support.process import stop_process

REPO_ROOT = Path(__file__).resolve().parents[2]
TARGET = f"{sys.executable} -m shadowcode"
READY_SECONDS = 60.0


def _project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "app.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    return dest.resolve()


@pytest.mark.req("CONF-01")
def test_not_run_checks_prove_nothing_and_only_unavailable_ones_fail_the_run() -> None:
    records = [
        CheckRecord("generic:http_foreign_origin", ("GW-04",), True, "403", 0.1),
        CheckRecord("generic:stdout_purity", ("SRV-01",), False, "not run: needs --target", 0.0, not_run=NOT_ASKED),
    ]
    report = build_report([], records, {}, 1, url="http://127.0.0.1:1/mcp")
    rows = {r["id"]: r["status"] for r in report["results"]}
    assert rows["GW-04"] == "pass" and rows["SRV-01"] == "not_covered"
    assert [c["status"] for c in report["checks"]] == ["pass", "not_run"]
    assert report["url"] == "http://127.0.0.1:1/mcp" and not report_failed(report)
    missing = CheckRecord("official:server:ping", ("GW-05",), False, "not run: bash ci/setup", 0.0, not_run=UNAVAILABLE)
    assert report_failed(build_report([], [*records, missing], {}, 1))


@pytest.mark.req("CONF-01")
def test_official_checks_without_the_package_are_not_run_naming_the_install_command(tmp_path: Path) -> None:
    # An installed package's root (no ci/setup) names npm ci in its node_probes; a checkout names ci/setup.
    assert "npm ci" in str(installed(tmp_path))
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "setup").write_text("", encoding="utf-8")
    assert isinstance(installed(tmp_path), str)
    load_checks()
    chk = CHECKS["official:server:ping"]

    async def go() -> list[CheckRecord]:
        with anyio.fail_after(60):
            records, _ = await run_one(
                chk, target=TARGET.split(), cwd=REPO_ROOT, repo_root=tmp_path, project_factory=_project
            )
            return records

    record = anyio.run(go)[0]
    assert record.not_run == UNAVAILABLE and "bash ci/setup" in record.detail, record


@pytest.mark.req("CONF-01")
def test_official_checks_are_selected_only_with_official(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    assert "official:" not in capsys.readouterr().out
    assert main(["--list", "--official", "--only", "official:*"]) == 0
    names = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert {"official:server:tools-list", "official:client:initialize", "official:auth:metadata-default"} <= set(names)
    assert main(["--target", "true", "--url", "http://127.0.0.1:1/mcp"]) == 2
    assert "--profile generic" in capsys.readouterr().err


@pytest.mark.req("CONF-01", "GW-05", "CLI-16")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(600)
def test_official_scenarios_fold_into_one_report_and_junit(tmp_path: Path) -> None:
    if isinstance(found := installed(REPO_ROOT), str):
        pytest.fail(found)
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    only = "official:server:ping,official:client:initialize"
    argv = ["--official", "--only", only, "--target", TARGET, "--out", str(out), "--junit", str(junit), "--jobs", "2"]
    code = main(argv)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) == {"official:server:ping", "official:client:initialize"}, checks
    assert all(c["status"] == "pass" for c in checks.values()), checks
    assert checks["official:server:ping"]["covers"] == ["GW-05"]
    assert checks["official:client:initialize"]["covers"] == ["CLI-16"]
    assert report["expected_failures"] == [] and code == 0
    assert "`official:client:initialize` | ok" in (out / "report.md").read_text(encoding="utf-8")
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert {"official:server:ping", "official:client:initialize"} <= set(cases)
    assert cases["official:server:ping"].get("classname") == "official"
    assert cases["official:server:ping"].find("failure") is None


@pytest.fixture
def bare_http_server() -> Iterator[str]:
    """``python -m bench.bare_http_server`` on 127.0.0.1 and a free port; its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.bare_http_server", "--port", "0"],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        url = ""
        assert proc.stderr is not None
        with _Bounded(READY_SECONDS, proc):
            while not url:
                line = proc.stderr.readline().decode("utf-8", "replace")
                if not line:
                    break
                if "bare http ready: " in line:
                    url = line.split("bare http ready: ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:"), "the bare SDK HTTP server did not get ready"
        yield url
    finally:
        stop_process(proc, grace_seconds=15)


class _Bounded:
    """Kill ``proc`` if the block takes longer than ``seconds`` (so a blocked readline returns)."""

    def __init__(self, seconds: float, proc: subprocess.Popen[bytes]) -> None:
        self._timer = threading.Timer(seconds, proc.kill)

    def __enter__(self) -> None:
        self._timer.start()

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


@pytest.mark.req("GW-04", "GW-05", "CONF-01")
@pytest.mark.slow
def test_generic_http_checks_against_the_bare_sdk_server_match_its_baseline(
    bare_http_server: str, tmp_path: Path
) -> None:
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    baseline = REPO_ROOT / "conformance/baselines/python-sdk-http-server.yml"
    argv = ["--profile", "generic", "--url", bare_http_server, "--expected-failures", str(baseline)]
    code = main([*argv, "--out", str(out), "--junit", str(junit), "--jobs", "2"])
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    by_status: dict[str, set[str]] = {}
    for c in report["checks"]:
        by_status.setdefault(c["status"], set()).add(c["name"])
    assert "fail" not in by_status, [c for c in report["checks"] if c["status"] == "fail"]
    http = {n for n in by_status.get("pass", set()) if n.startswith("generic:http_")}
    assert {"generic:http_foreign_host", "generic:http_foreign_origin", "generic:http_modern_discover"} <= http
    assert "generic:stdout_purity" in by_status["not_run"] and code == 0
    assert report["expected_failures"] == []  # its entries are official:* checks, left out without --official
    assert set(report["protocol_revisions"].values()) >= {"2026-07-28", "2025-11-25"}
    skipped = [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("skipped") is not None]
    assert any(c.get("name") == "generic:stdout_purity" for c in skipped)
