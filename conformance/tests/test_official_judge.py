"""The judge of the official client scenarios, :mod:`shadowcode_conformance.official_judge`.

Covers CLI-18 (``sse-retry`` must fail, and fail without any resumption or repeat).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shadowcode_conformance.official_judge import judge, main, never_resumed

pytestmark = pytest.mark.req("CLI-18")


def _request(method: str, rpc: str | None = None, **headers: str) -> dict[str, Any]:
    details: dict[str, Any] = {"method": method, "headers": headers}
    if rpc:
        details["jsonrpcMethod"] = rpc
    return {"id": "incoming-request", "status": "INFO", "details": details}


CLOSED = {"id": "outgoing-stream-close", "status": "INFO", "details": {}}
TIMING = {"id": "client-sse-retry-timing", "status": "FAILURE", "details": {}, "errorMessage": "too early"}


def _write(root: Path, scenario: str, checks: list[dict[str, Any]], stdout: str = "") -> None:
    folder = root / scenario / f"{scenario}-2026-01-01T00-00-00-000Z"
    folder.mkdir(parents=True)
    (folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    (folder / "stdout.txt").write_text(stdout, encoding="utf-8")


def test_a_standing_get_before_the_call_and_one_call_is_no_resumption() -> None:
    checks = [_request("POST", "initialize"), _request("GET"), _request("POST", "tools/call"), CLOSED, TIMING]
    assert never_resumed(checks) == []


@pytest.mark.parametrize(
    ("checks", "problem"),
    [
        ([_request("POST", "tools/call"), CLOSED, _request("GET")], "after the call's stream closed"),
        ([_request("GET", **{"last-event-id": "event-1"}), _request("POST", "tools/call")], "Last-Event-ID"),
        ([_request("POST", "tools/call"), CLOSED, _request("POST", "tools/call")], "sent 2 times"),
        ([CLOSED], "sent 0 times"),
    ],
)
def test_a_reconnection_a_resumption_or_a_repeat_is_found(checks: list[dict[str, Any]], problem: str) -> None:
    assert any(problem in p for p in never_resumed(checks)), never_resumed(checks)


def test_every_scenario_judged_and_the_client_line_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = {"id": "mcp-client-initialization", "status": "SUCCESS"}
    _write(tmp_path, "initialize", [ok, {"id": "server-info", "status": "INFO"}], "initialize: connected\n")
    _write(tmp_path, "tools_call", [{"id": "tool-add-numbers", "status": "SUCCESS"}], "tools_call: answered\n")
    _write(tmp_path, "sse-retry", [_request("POST", "tools/call"), CLOSED, TIMING])
    assert main([str(tmp_path), "initialize", "tools_call", "sse-retry"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[-1]
        == "client: 2 passed, 0 failed, 1 expected failure (sse-retry: expects SSE resumption, which CLI-18 forbids)"
    )
    assert any(line.startswith("xfail sse-retry") for line in out)


def test_a_failed_check_a_crashed_adapter_or_missing_results_fail(tmp_path: Path) -> None:
    _write(tmp_path, "initialize", [{"id": "mcp-client-initialization", "status": "FAILURE", "errorMessage": "v"}])
    _write(tmp_path, "tools_call", [{"id": "tool-add-numbers", "status": "SUCCESS"}], "")
    lines, passed, failed, expected = judge(tmp_path, ["initialize", "tools_call", "sse-retry"])
    assert (passed, failed, expected) == (1, 4, [])  # a FAILURE and no summary line count apart
    assert any("adapter did not finish" in line for line in lines)
    assert any("FAIL sse-retry: no results" in line for line in lines)


def test_sse_retry_passing_is_a_failure_since_it_would_mean_a_resumed_stream(tmp_path: Path) -> None:
    _write(tmp_path, "sse-retry", [_request("POST", "tools/call"), CLOSED, {"id": "x", "status": "SUCCESS"}])
    lines, _, failed, expected = judge(tmp_path, ["sse-retry"])
    assert failed == 1 and expected == []
    assert "must not resume" in lines[0]


def test_the_auth_suite_line_and_its_expected_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = {"id": "valid-bearer-token", "status": "SUCCESS"}
    _write(tmp_path / "auth", "metadata-default", [ok], "auth/metadata-default: signed in\n")
    # auth/NAME scenarios write into auth/NAME/auth/NAME-<time>/.
    moved = tmp_path / "auth" / "metadata-default"
    (tmp_path / "auth" / "metadata-default" / "auth").mkdir()
    inner = next(moved.glob("metadata-default-*"))
    inner.rename(moved / "auth" / inner.name)
    bad = {"id": "authorization-server-metadata", "status": "FAILURE"}
    _write(tmp_path / "auth", "2025-03-26-oauth-endpoint-fallback", [bad])
    scenarios = ["auth/metadata-default", "auth/2025-03-26-oauth-endpoint-fallback"]
    assert main(["--label", "auth", str(tmp_path), *scenarios]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "client auth: 1 passed, 0 failed, 1 expected failure"
    assert any(line.startswith("xfail auth/2025-03-26-oauth-endpoint-fallback: [2025-03-26]") for line in out)


def test_an_expected_auth_failure_that_passes_fails_the_run(tmp_path: Path) -> None:
    ok = {"id": "authorization-server-metadata", "status": "SUCCESS"}
    name = "2025-03-26-oauth-endpoint-fallback"
    _write(tmp_path / "auth", name, [ok], f"auth/{name}: signed in\n")
    assert main(["--label", "auth", str(tmp_path), f"auth/{name}"]) == 1


@pytest.mark.req("CONF-01")
def test_a_warning_is_reported_as_warn_and_fails_nothing(tmp_path: Path) -> None:
    warned = {"id": "client-should", "status": "WARNING", "errorMessage": "SHOULD do it"}
    _write(tmp_path, "initialize", [{"id": "client-init", "status": "SUCCESS"}, warned], "initialize: done\n")
    lines, passed, failed, _ = judge(tmp_path, ["initialize"])
    assert (passed, failed) == (1, 0)
    assert "warn initialize / client-should: WARNING (SHOULD do it)" in lines
