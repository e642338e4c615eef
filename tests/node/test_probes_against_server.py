"""The official TypeScript SDK probes (shadowcode_conformance/node_probes/) against the server from source (CONF-02).

Each probe spawns ``python -m shadowcode --workspace P mcp serve --allow-write`` on a
trusted copy of the sample project and prints one JSON report; these tests assert every
check in it passed and show the failed ones otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.node, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
PROBES_DIR = REPO_ROOT / "conformance/shadowcode_conformance/node_probes"
NODE = shutil.which("node")
PROBE_TIMEOUT_MS = 60_000
PROCESS_TIMEOUT_SECONDS = 90


def _skip_reason() -> str | None:
    if NODE is None:
        return "node is not on PATH"
    for pkg in ("@modelcontextprotocol/sdk", "@modelcontextprotocol/client"):
        if not (PROBES_DIR / "node_modules" / pkg / "package.json").is_file():
            return f"{PROBES_DIR}/node_modules lacks {pkg}; run `npm ci` in {PROBES_DIR}"
    return None


_REASON = _skip_reason()
needs_node = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


def _load_sample_module() -> Any:
    path = REPO_ROOT / "conformance/shadowcode_conformance/fixtures" / "sample_project.py"
    spec = importlib.util.spec_from_file_location("shadowcode_fixture_sample_project", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(
    cmd: list[str], env: dict[str, str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in its own session; on timeout kill the whole group (the server included)."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
        pytest.fail(f"{cmd[:3]} did not finish within {timeout} s\nstdout:\n{out}\nstderr:\n{err[-4000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _failed_checks(report: dict[str, Any]) -> str:
    lines = [f"- {c['name']} {c['covers']}: {c['detail']}" for c in report.get("checks", []) if not c.get("ok")]
    tail = report.get("server_stderr_tail")
    if tail:
        lines.append(f"server stderr (tail):\n{tail}")
    return "\n".join(lines)


@pytest.fixture
def trusted_project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A sample project trusted at level workspace in a private SHADOWCODE_HOME."""
    project = _load_sample_module().make_sample_project(tmp_path / "project")
    env = dict(os.environ)
    env["SHADOWCODE_HOME"] = str(tmp_path / "home")
    env["PYTHONWARNDEFAULTENCODING"] = "1"
    done = _run(
        [
            sys.executable,
            "-m",
            "shadowcode",
            "--workspace",
            str(project),
            "trust",
            "--level",
            "workspace",
            str(project),
        ],
        env,
        timeout=60,
    )
    assert done.returncode == 0, f"trust failed ({done.returncode}): {done.stderr}"
    yield project, env


def _probe(script: str, extra: list[str], server: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    cmd = [
        NODE or "node",
        str(PROBES_DIR / "probes" / script),
        "--timeout-ms",
        str(PROBE_TIMEOUT_MS),
        *extra,
        "--",
        *server,
    ]
    done = _run(cmd, env, timeout=PROCESS_TIMEOUT_SECONDS, cwd=PROBES_DIR)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"{script} printed no JSON report (exit {done.returncode})\nstdout:\n{done.stdout}\n"
            f"stderr:\n{done.stderr[-4000:]}"
        )
    return done.returncode, report, done.stderr


@pytest.mark.req(
    "SRV-01", "SRV-03", "SRV-04", "SRV-05", "SRV-06", "SRV-12", "SRV-13", "SRV-14", "SRV-19", "SRV-20", "CONF-02"
)
@needs_node
@pytest.mark.parametrize(
    ("script", "extra", "expected_protocol"),
    [
        ("stdio_sdk1.mjs", [], "2025-11-25"),
        ("stdio_sdk2.mjs", ["--mode", "auto"], "2026-07-28"),
        ("stdio_sdk2.mjs", ["--mode", "legacy"], "2025-11-25"),
    ],
    ids=["sdk1", "sdk2-auto", "sdk2-legacy"],
)
def test_ts_sdk_probe_passes_against_source_server(
    trusted_project: tuple[Path, dict[str, str]], script: str, extra: list[str], expected_protocol: str
) -> None:
    project, env = trusted_project
    server = [sys.executable, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", "--allow-write"]
    code, report, stderr = _probe(script, extra, server, env)
    assert report["ok"] is True and code == 0, (
        f"{script} {extra} exit {code}, failed checks:\n{_failed_checks(report)}\nprobe stderr:\n{stderr[-2000:]}"
    )
    assert report["protocol_version"] == expected_protocol
    names = {c["name"] for c in report["checks"]}
    assert {"tools_list_seventeen", "tool_sqlite_query_bound_param_sees_wal", "tool_memory_append_read"} <= names
    covered = {rid for c in report["checks"] for rid in c["covers"]}
    assert {
        "SRV-01",
        "SRV-03",
        "SRV-04",
        "SRV-05",
        "SRV-06",
        "SRV-12",
        "SRV-13",
        "SRV-14",
        "SRV-19",
        "SRV-20",
    } <= covered


@pytest.mark.req("CONF-02")
@needs_node
@pytest.mark.parametrize("script", ["stdio_sdk1.mjs", "stdio_sdk2.mjs"])
def test_probe_reports_failure_as_json_when_the_server_exits_at_once(script: str) -> None:
    server = [sys.executable, "-c", "import sys; sys.exit(3)"]
    code, report, _ = _probe(script, [], server, dict(os.environ))
    assert code == 1
    assert report["ok"] is False
    assert report["checks"][0]["name"] == "connect" and report["checks"][0]["ok"] is False


@pytest.mark.req("CONF-02")
@needs_node
@pytest.mark.parametrize("script", ["stdio_sdk1.mjs", "stdio_sdk2.mjs"])
def test_probe_refuses_bad_usage_with_exit_2(script: str) -> None:
    done = _run(
        [NODE or "node", str(PROBES_DIR / "probes" / script), "--timeout-ms", "-5"], dict(os.environ), timeout=60
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "usage" in done.stderr
