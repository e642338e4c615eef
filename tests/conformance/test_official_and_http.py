"""One report for everything: ``--official`` scenarios and the generic profile over HTTP (``--url``).

Covers CONF-01 (official checks folded into report.json, report.md and the JUnit file, each with
its own name and ids; "not run" when Node 22 or the package is missing, or when the run was not
given --url / --target), GW-04 and GW-05 as the generic HTTP checks prove them, each server with
its baseline: the bare Python SDK server (bench/bare_http_server.py), ShadowCode's own gateway
(``mcp serve --http 127.0.0.1:0 --token-env NAME``, checked with ``--bearer-env NAME``) and
``@modelcontextprotocol/server-everything`` in streamableHttp mode (held to 127.0.0.1 by
tests/support/node_loopback.cjs).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode_conformance.cli import main
from shadowcode_conformance.official import installed
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.report import (
    NOT_ASKED,
    UNAVAILABLE,
    CheckRecord,
    build_report,
    load_expected_failures,
    report_failed,
)
from shadowcode_conformance.runner import run_one
from tests.support.engine import cli_env, wait_for_sync
from tests.support.process import stop_process

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITE = REPO_ROOT / "conformance" / "shadowcode_conformance"
TARGET = f"{sys.executable} -m shadowcode"
READY_SECONDS = 60.0
SERVER_STOP_SECONDS = 30.0
PORT_ATTEMPTS = 3
EVERYTHING = SUITE / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE_LOOPBACK = REPO_ROOT / "tests/support/node_loopback.cjs"
GATEWAY_TOKEN_ENV = "CONFORMANCE_GATEWAY_TOKEN"
GATEWAY_TOKEN = "conformance-gateway-token-7c1e9b3a5d2f4e6a8b0c"


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
    # An installed package's root (no ci/setup) names npm ci; a checkout's package folder names ci/setup.
    root = tmp_path / "conformance" / "shadowcode_conformance"
    root.mkdir(parents=True)
    assert "npm ci" in str(installed(root))
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "setup").write_text("", encoding="utf-8")
    assert isinstance(installed(root), str)
    load_checks()
    chk = CHECKS["official:server:ping"]

    async def go() -> list[CheckRecord]:
        with anyio.fail_after(60):
            records, _ = await run_one(
                chk, target=TARGET.split(), cwd=REPO_ROOT, repo_root=root, project_factory=_project
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
    if isinstance(found := installed(SUITE), str):
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
    assert "`official:client:initialize` | pass | must |" in (out / "report.md").read_text(encoding="utf-8")
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert {"official:server:ping", "official:client:initialize"} <= set(cases)
    assert cases["official:server:ping"].get("classname") == "official"
    assert cases["official:server:ping"].find("failure") is None


class _Exited(AssertionError):
    """The server process exited before it was ready; the message holds the end of its log."""


@contextmanager
def _serving(argv: list[str], ready: Callable[[str], str | None], *, log: Path, env: dict[str, str]) -> Iterator[str]:
    """Run ``argv`` from the checkout until the block ends; yields the URL ``ready`` finds.

    The process gets its own session, no stdin, and ``log`` for stdout and stderr. ``ready(text)``
    is called with the log's text until it returns a URL, for at most READY_SECONDS (an
    AssertionError then; :class:`_Exited` when the process exits first). Stopped (TERM, then
    KILL after SERVER_STOP_SECONDS) and reaped with ``stop_process``.
    """
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True
        )
    try:

        def seen() -> str | None:
            text = log.read_text(encoding="utf-8", errors="replace")
            if proc.poll() is not None:
                raise _Exited(f"{argv[1:]} exited {proc.returncode} before it was ready: {text[-2000:]}")
            return ready(text)

        yield wait_for_sync(seen, timeout=READY_SECONDS, what=f"{argv[1:]} to get ready")
    finally:
        stop_process(proc, grace_seconds=SERVER_STOP_SECONDS)


def _after(marker: str) -> Callable[[str], str | None]:
    """A ``ready`` for :func:`_serving`: the loopback URL printed after ``marker``, once printed."""
    pattern = re.compile(re.escape(marker) + r"(http://127\.0\.0\.1:\d+/mcp)\s")

    def ready(text: str) -> str | None:
        found = pattern.search(text)
        return found.group(1) if found else None

    return ready


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepting(port: int) -> Callable[[str], str | None]:
    """A ``ready`` for :func:`_serving`: the URL once 127.0.0.1:``port`` accepts a connection."""

    def ready(_: str) -> str | None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return None
        return f"http://127.0.0.1:{port}/mcp"

    return ready


@pytest.fixture
def bare_http_server(tmp_path: Path) -> Iterator[str]:
    """``python -m bench.bare_http_server`` on 127.0.0.1 and a free port; its URL."""
    argv = [sys.executable, "-m", "bench.bare_http_server", "--port", "0"]
    with _serving(argv, _after("bare http ready: "), log=tmp_path / "bare.log", env=dict(os.environ)) as url:
        yield url


@pytest.fixture
def gateway_http_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """ShadowCode's gateway (``mcp serve --http 127.0.0.1:0 --token-env``) under a private
    SHADOWCODE_HOME; its URL. Its token is in ``GATEWAY_TOKEN_ENV`` here too, for ``--bearer-env``."""
    project = _project(tmp_path / "served")
    argv = [sys.executable, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", "--http", "127.0.0.1:0"]
    argv += ["--token-env", GATEWAY_TOKEN_ENV]
    env = cli_env(tmp_path / "home") | {GATEWAY_TOKEN_ENV: GATEWAY_TOKEN}
    monkeypatch.setenv(GATEWAY_TOKEN_ENV, GATEWAY_TOKEN)
    with _serving(argv, _after("shadowcode gateway ready: "), log=tmp_path / "gateway.log", env=env) as url:
        yield url


@pytest.fixture
def everything_http_server(tmp_path: Path) -> Iterator[str]:
    """``@modelcontextprotocol/server-everything`` in streamableHttp mode, held to 127.0.0.1 by
    ``tests/support/node_loopback.cjs``, on a free port (picked again if taken meanwhile); its URL."""
    node = shutil.which("node")
    if node is None or not EVERYTHING.is_file():
        pytest.fail("needs node and server-everything: (cd conformance/shadowcode_conformance/node_probes && npm ci)")
    for attempt in range(PORT_ATTEMPTS):
        port = _free_port()
        argv = [node, "--require", str(NODE_LOOPBACK), str(EVERYTHING), "streamableHttp"]
        env = dict(os.environ, PORT=str(port))
        try:
            with _serving(argv, _accepting(port), log=tmp_path / f"everything-{attempt}.log", env=env) as url:
                yield url
            return
        except _Exited as exc:
            if "EADDRINUSE" not in str(exc) or attempt == PORT_ATTEMPTS - 1:
                raise


@dataclass(frozen=True)
class _HttpRun:
    """One ``--profile generic --url`` run: exit code, each check's status, each baseline entry's outcome."""

    code: int
    statuses: dict[str, str]
    outcomes: dict[str, str]
    report: dict[str, Any]


def _generic_http(url: str, baseline: Path, tmp_path: Path, *extra: str) -> _HttpRun:
    """Run the generic profile against ``url`` with ``baseline`` (report and JUnit in ``tmp_path``)."""
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    argv = ["--profile", "generic", "--url", url, "--expected-failures", str(baseline), *extra]
    code = main([*argv, "--out", str(out), "--junit", str(junit), "--jobs", "2"])
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    outcomes = {e["check"]: e["outcome"] for e in report["expected_failures"]}
    return _HttpRun(code, statuses, outcomes, report)


def _matches_baseline(run: _HttpRun, baseline: Path) -> set[str]:
    """Assert the run failed nothing but its baseline's generic entries, each failing as expected
    (the official:* ones are left out without --official), and ran every HTTP check; the passed
    HTTP checks."""
    failing = [c for c in run.report["checks"] if c["status"] == "fail"]
    assert not failing, failing
    entries = [e for e in load_expected_failures(baseline) if not e.check.startswith("official:")]
    excused = {e.check for e in entries}
    expected = {e.check: "failed_as_expected" if e.weight == "must" else "warned_as_expected" for e in entries}
    assert run.outcomes == expected, run.outcomes
    http = {n: s for n, s in run.statuses.items() if n.startswith("generic:http_")}
    assert set(http) >= {n for n in load_checks() if n.startswith("generic:http_")}, http
    assert {n for n, s in http.items() if s in ("expected_fail", "expected_warn")} == excused, http
    assert run.statuses["generic:stdout_purity"] == "not_run" and run.code == 0
    return {n for n, s in http.items() if s == "pass"}


@pytest.mark.req("GW-04", "GW-05", "CONF-01")
@pytest.mark.slow
def test_generic_http_checks_against_the_bare_sdk_server_match_its_baseline(
    bare_http_server: str, tmp_path: Path
) -> None:
    baseline = SUITE / "baselines/python-sdk-http-server.yml"
    run = _generic_http(bare_http_server, baseline, tmp_path)
    passed = _matches_baseline(run, baseline)
    assert {"generic:http_foreign_host", "generic:http_foreign_origin", "generic:http_modern_discover"} <= passed
    assert run.outcomes == {}  # its entries are official:* checks, left out without --official
    assert set(run.report["protocol_revisions"].values()) >= {"2026-07-28", "2025-11-25"}
    skipped = [c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase") if c.find("skipped") is not None]
    assert any(c.get("name") == "generic:stdout_purity" for c in skipped)


@pytest.mark.req("GW-04", "GW-05", "CONF-01")
@pytest.mark.slow
def test_generic_http_checks_against_the_gateway_match_its_baseline(gateway_http_server: str, tmp_path: Path) -> None:
    baseline = SUITE / "baselines/shadowcode-gateway-http.yml"
    run = _generic_http(gateway_http_server, baseline, tmp_path, "--bearer-env", GATEWAY_TOKEN_ENV)
    passed = _matches_baseline(run, baseline)
    assert run.statuses["generic:http_local_origin"] == "expected_warn"  # by design: any Origin gets 403
    assert {
        "generic:http_foreign_host",
        "generic:http_foreign_origin",
        "generic:http_modern_discover",
        "generic:http_legacy_handshakes",
        "generic:http_methods",
    } <= passed
    # Stateless: no session, so the session rules do not apply.
    assert run.statuses["generic:http_sessions"] == run.statuses["generic:http_session_required"] == "not_applicable"
    assert set(run.report["protocol_revisions"].values()) >= {"2026-07-28", "2025-11-25"}
    assert GATEWAY_TOKEN not in (tmp_path / "out" / "report.json").read_text(encoding="utf-8")


@pytest.mark.req("GW-04", "GW-05", "CONF-01")
@pytest.mark.slow
@pytest.mark.node
def test_generic_http_checks_against_server_everything_match_its_baseline(
    everything_http_server: str, tmp_path: Path
) -> None:
    baseline = SUITE / "baselines/server-everything-http.yml"
    run = _generic_http(everything_http_server, baseline, tmp_path)
    passed = _matches_baseline(run, baseline)
    assert {"generic:http_foreign_host", "generic:http_foreign_origin", "generic:http_sessions"} <= set(run.outcomes)
    assert {"generic:http_legacy_handshakes", "generic:http_local_origin", "generic:http_invalid_json"} <= passed
    # It speaks the initialize era only: server/discover (2026-07-28) does not apply to it.
    assert run.statuses["generic:http_modern_discover"] == "not_applicable"
