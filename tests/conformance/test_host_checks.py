"""The host checks: the scripted model endpoint, how they read hosts' requests, and real runs."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import shadowcode_conformance.scripted_model as scripted
from shadowcode_conformance.checks.hosts import _HOST_ATTEMPTS, _claude_offered, _codex_tools, _status_in, first_turn
from shadowcode_conformance.checks.python_client import EXPECTED_TOOLS
from shadowcode_conformance.host_wires import chat_offered, chat_result, gemini_offered, gemini_result, tool_named
from shadowcode_conformance.registry import CheckResult
from shadowcode_conformance.scripted_model import (
    ModelRequest,
    Reply,
    chat_reply,
    gemini_reply,
    messages_reply,
    responses_reply,
    scripted_model,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _events(body: bytes) -> list[dict[str, Any]]:
    """The ``data:`` payloads of an SSE body, checking each names its event type."""
    found = []
    for block in body.decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        event, data = block.split("\n")
        payload = json.loads(data.removeprefix("data: "))
        assert event == f"event: {payload['type']}"
        found.append(payload)
    return found


def _post(port: int, paths: list[tuple[str, bytes]]) -> list[tuple[int, bytes]]:
    """POST each body on ONE keep-alive connection; the statuses and bodies."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        answers = []
        for path, body in paths:
            conn.request("POST", path, body=body, headers={"content-type": "application/json"})
            reply = conn.getresponse()
            answers.append((reply.status, reply.read()))
        return answers
    finally:
        conn.close()


def _serve_and_post(answer: Any, paths: list[tuple[str, bytes]]) -> tuple[list[tuple[int, bytes]], list[ModelRequest]]:
    async def go() -> tuple[list[tuple[int, bytes]], list[ModelRequest]]:
        with anyio.fail_after(30):
            async with scripted_model(answer) as model:
                got = await anyio.to_thread.run_sync(_post, model.port, paths)
                return got, list(model.requests)

    return anyio.run(go)


@pytest.mark.req("REG-08")
def test_the_endpoint_records_each_request_and_answers_from_the_script() -> None:
    def answer(request: ModelRequest, index: int) -> Reply:
        return responses_reply(f"resp_{index}", [{"type": "message", "role": "assistant", "id": "m", "content": []}])

    got, requests = _serve_and_post(answer, [("/v1/responses", b'{"a": 1}'), ("/v1/responses?x=1", b"not json")])
    assert [status for status, _ in got] == [200, 200]
    assert [e["type"] for e in _events(got[1][1])] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    assert _events(got[1][1])[0]["response"]["id"] == "resp_1"
    assert [(r.method, r.path, r.body) for r in requests] == [
        ("POST", "/v1/responses", {"a": 1}),
        ("POST", "/v1/responses?x=1", None),
    ]
    assert requests[0].headers["content-type"] == "application/json"


@pytest.mark.req("REG-08")
def test_a_failing_script_a_body_too_large_and_requests_past_the_cap_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scripted, "REQUEST_BODY_MAX_BYTES", 8)
    monkeypatch.setattr(scripted, "REQUESTS_MAX", 2)

    def answer(request: ModelRequest, index: int) -> Reply:
        if index == 1:
            raise RuntimeError("script broke")
        return Reply(200, "application/json", b"{}")

    got, requests = _serve_and_post(answer, [("/a", b"12345678"), ("/b", b"{}"), ("/c", b"123456789"), ("/d", b"{}")])
    assert [status for status, _ in got] == [200, 500, 413, 503]
    assert b"script broke" in got[1][1]
    assert [r.path for r in requests] == ["/a", "/b"]


@pytest.mark.req("REG-08")
def test_an_idle_connection_is_closed_and_the_endpoint_keeps_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scripted, "CONNECTION_IDLE_SECONDS", 0.2)

    def idle_then_post(port: int) -> tuple[bytes, list[tuple[int, bytes]]]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
            closed = idle.recv(1)  # b"" once the endpoint gives up on the silent connection
        return closed, _post(port, [("/after", b"{}")])

    async def go() -> tuple[bytes, list[tuple[int, bytes]]]:
        with anyio.fail_after(30):
            async with scripted_model(lambda request, index: Reply(200, "application/json", b"{}")) as model:
                return await anyio.to_thread.run_sync(idle_then_post, model.port)

    closed, got = anyio.run(go)
    assert closed == b""
    assert got == [(200, b"{}")]


def test_messages_replies_stream_only_when_asked() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "mcp__shadowcode__shadow_status", "input": {"a": 1}}
    streamed = messages_reply(ModelRequest("POST", "/v1/messages", {}, {"stream": True, "model": "m"}, 0.0), "x", [use])
    events = _events(streamed.body)
    assert streamed.content_type == "text/event-stream"
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert json.loads(events[2]["delta"]["partial_json"]) == {"a": 1}
    assert events[4]["delta"]["stop_reason"] == "tool_use"
    whole = messages_reply(
        ModelRequest("POST", "/v1/messages", {}, {"model": "m"}, 0.0), "x", [{"type": "text", "text": "hi"}]
    )
    assert json.loads(whole.body)["stop_reason"] == "end_turn"
    assert json.loads(whole.body)["content"] == [{"type": "text", "text": "hi"}]


@pytest.mark.req("REG-08")
def test_codex_tools_are_read_in_the_namespace_and_the_flat_form() -> None:
    namespaced = {
        "tools": [
            {"type": "function", "name": "exec_command"},
            {
                "type": "namespace",
                "name": "mcp__shadowcode",
                "tools": [{"name": "shadow_status"}, {"name": "shadow_why"}],
            },
            {"type": "namespace", "name": "mcp__other", "tools": [{"name": "shadow_run"}]},
        ]
    }
    assert _codex_tools(namespaced) == {
        "shadow_status": {"namespace": "mcp__shadowcode", "name": "shadow_status"},
        "shadow_why": {"namespace": "mcp__shadowcode", "name": "shadow_why"},
    }
    flat = {"tools": [{"type": "function", "name": "mcp__shadowcode__shadow_status"}]}
    assert _codex_tools(flat) == {"shadow_status": {"name": "mcp__shadowcode__shadow_status"}}
    assert _codex_tools({"tools": "nonsense"}) == {} and _codex_tools(None) == {}


@pytest.mark.req("REG-08")
def test_claude_tools_count_as_definitions_or_as_deferred_names() -> None:
    defined = {"tools": [{"name": "Bash"}, *({"name": f"mcp__shadowcode__{t}"} for t in EXPECTED_TOOLS)]}
    assert _claude_offered(defined) == (set(EXPECTED_TOOLS), "as tool definitions")
    listing = "\n".join(f"mcp__shadowcode__{t}" for t in sorted(EXPECTED_TOOLS)[:3])
    deferred = {"tools": [{"name": "ToolSearch"}], "messages": [{"role": "user", "content": listing}]}
    offered, how = _claude_offered(deferred)
    assert offered == set(sorted(EXPECTED_TOOLS)[:3]) and "deferred" in how


@pytest.mark.req("REG-01")
def test_the_status_is_found_behind_a_hosts_header() -> None:
    status = {"profile": "default", "project": {"trusted": True, "path": "/p"}}
    assert _status_in("Wall time: 0.1 seconds\nOutput:\n" + json.dumps(status)) == status
    assert _status_in('{"not": "it"} then ' + json.dumps(status)) == status
    assert _status_in("no status {here") is None


@pytest.mark.req("REG-01", "SRV-04")
def test_the_status_summary_a_host_shows_the_model_is_read_like_the_json() -> None:
    from shadowcode.mcp.server.outputs import summary

    status = {
        "version": "0.1.0",
        "profile": "pinned",
        "engine": {"mode": "attached"},
        "project": {"path": "/a project/p", "trusted": True, "level": "read_only"},
        "server": {"allow_write": False, "allow_approvals": False},
        "models": {"configured": 0, "default": None},
    }
    seen = _status_in("Output:\n" + summary("shadow_status", status))
    assert seen == {
        "project": {"path": "/a project/p", "trusted": True, "level": "read_only"},
        "profile": "pinned",
        "engine": {"mode": "attached"},
    }
    untrusted = {**status, "project": {"path": "/p", "trusted": False, "level": None}}
    assert _status_in(summary("shadow_status", untrusted))["project"]["trusted"] is False  # type: ignore[index]


class _Ctx:
    def __init__(self, remaining: float = 300.0) -> None:
        self.left = remaining

    def remaining(self) -> float:
        return self.left


def _runs(results: list[CheckResult], ctx: _Ctx | None = None) -> tuple[CheckResult, int]:
    calls = 0

    async def attempt() -> CheckResult:
        nonlocal calls
        calls += 1
        return results[calls - 1]

    return anyio.run(first_turn, ctx or _Ctx(), attempt), calls  # type: ignore[arg-type]


def _late(offered: set[str]) -> CheckResult:
    return CheckResult(False, "late", {"offered": sorted(offered), "first_request_after_seconds": 0.9})


def test_a_first_request_without_the_tools_is_tried_again_and_the_detail_says_so() -> None:
    passed = CheckResult(True, "all offered", {"offered": sorted(EXPECTED_TOOLS)})
    result, calls = _runs([_late(set()), _late({"shadow_status"}), passed])
    assert (result.ok, calls) == (True, 3)
    assert "on run 3" in result.detail and result.data["runs_without_the_tools"] == [0.9, 0.9]


def test_a_server_late_on_every_run_fails_after_the_last_attempt() -> None:
    result, calls = _runs([_late(set())] * (_HOST_ATTEMPTS + 1))
    assert (result.ok, calls) == (False, _HOST_ATTEMPTS)
    assert result.data["runs_without_the_tools"] == [0.9] * _HOST_ATTEMPTS


def test_any_other_failure_and_too_little_time_end_the_runs_at_once() -> None:
    wrong_profile = CheckResult(False, "lost its profile", {"offered": sorted(EXPECTED_TOOLS)})
    assert _runs([wrong_profile, wrong_profile]) == (wrong_profile, 1)
    no_model = CheckResult(False, "Codex never asked the model")
    assert _runs([no_model, no_model]) == (no_model, 1)
    result, calls = _runs([_late(set()), _late(set())], _Ctx(remaining=10.0))
    assert (result.ok, calls) == (False, 1)


@pytest.mark.req("REG-08", "REG-01")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(420)
def test_the_host_checks_pass_against_the_source_tree(tmp_path: Path) -> None:
    out, temporary = tmp_path / "out", tmp_path / "tmp"
    temporary.mkdir(mode=0o700)
    target = shlex.join([sys.executable, "-m", "shadowcode"])
    argv = [sys.executable, "-m", "shadowcode_conformance", "--target", target, "--only", "hosts:*", "--out", str(out)]
    env = {**os.environ, "TMPDIR": str(temporary)}
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=400, check=False
    )
    # Nothing is left in the temporary folder the run was given: not the checks' folders, not
    # what the hosts keep there (Claude Code's claude-<uid> folder per working directory).
    assert sorted(p.name for p in temporary.iterdir()) == []
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) == {"hosts:codex_first_turn", "hosts:claude_first_turn"}, done.stderr[-2000:]
    assert all(c["status"] == "pass" for c in checks.values()), checks
    assert "offered all 17 ShadowCode tools" in checks["hosts:codex_first_turn"]["detail"]
    assert done.returncode == 0


# --- the other hosts' wires (shadowcode_conformance/host_wires.py, hosts_headless) ------------------------------------


def _data_events(body: bytes) -> list[Any]:
    """The ``data:`` payloads of an SSE body without event names (Chat Completions, Gemini)."""
    found: list[Any] = []
    for block in body.decode("utf-8").split("\n\n"):
        if block.strip():
            data = block.removeprefix("data: ")
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


@pytest.mark.req("REG-08")
def test_chat_replies_stream_chunks_then_done_only_when_asked() -> None:
    call = {"id": "c1", "name": "shadowcode_shadow_status", "arguments": "{}"}
    asked = ModelRequest("POST", "/v1/chat/completions", {}, {"stream": True, "model": "m"}, 0.0)
    events = _data_events(chat_reply(asked, "x", calls=[call]).body)
    assert events[-1] == "[DONE]"
    assert events[0]["object"] == "chat.completion.chunk" and events[0]["model"] == "m"
    assert events[0]["choices"][0]["delta"]["tool_calls"] == [
        {
            "index": 0,
            "id": "c1",
            "type": "function",
            "function": {"name": "shadowcode_shadow_status", "arguments": "{}"},
        }
    ]
    assert events[1]["choices"][0]["finish_reason"] == "tool_calls"
    plain = ModelRequest("POST", "/v1/chat/completions", {}, {"model": "m"}, 0.0)
    whole = json.loads(chat_reply(plain, "x", text="done").body)
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"] == {"role": "assistant", "content": "done"}
    assert whole["choices"][0]["finish_reason"] == "stop"
    called = json.loads(chat_reply(plain, "x", calls=[call]).body)["choices"][0]
    assert called["finish_reason"] == "tool_calls" and called["message"]["tool_calls"][0]["id"] == "c1"


@pytest.mark.req("REG-08")
def test_gemini_replies_are_one_event_when_streamed_and_json_otherwise() -> None:
    part = {"functionCall": {"name": "mcp_shadowcode_shadow_status", "args": {}}}
    streamed = gemini_reply(ModelRequest("POST", "/v1beta/models/m:streamGenerateContent?alt=sse", {}, {}, 0.0), [part])
    (event,) = _data_events(streamed.body)
    assert streamed.content_type == "text/event-stream"
    assert event["candidates"][0]["content"] == {"role": "model", "parts": [part]}
    whole = gemini_reply(ModelRequest("POST", "/v1beta/models/m:generateContent", {}, {}, 0.0), [{"text": "hi"}])
    assert json.loads(whole.body)["candidates"][0]["content"]["parts"] == [{"text": "hi"}]


@pytest.mark.req("REG-08")
def test_each_hosts_name_for_a_tool_is_read_and_others_are_not() -> None:
    for name in (
        "shadow_status",
        "mcp__shadowcode__shadow_status",
        "shadowcode_shadow_status",
        "mcp_shadowcode_shadow_status",
        "shadowcode__shadow_status",
    ):
        assert tool_named(name) == "shadow_status", name
    for name in ("other_shadow_status", "shadow_statusx", "mcp__other__shadow_status", "read_file"):
        assert tool_named(name) is None, name
    chat = {"tools": [{"type": "function", "function": {"name": f"shadowcode_{t}"}} for t in EXPECTED_TOOLS]}
    assert set(chat_offered(chat)) == set(EXPECTED_TOOLS)
    assert chat_offered({"tools": [{"type": "function"}, "x"]}) == {} and chat_offered(None) == {}
    gemini = {"tools": [{"functionDeclarations": [{"name": "mcp_shadowcode_shadow_why"}, {"name": "read_file"}]}]}
    assert gemini_offered(gemini) == {"shadow_why": "mcp_shadowcode_shadow_why"}
    assert gemini_offered({"tools": [{"googleSearch": {}}]}) == {}


@pytest.mark.req("REG-01")
def test_a_result_is_found_in_either_wire_and_its_status_read() -> None:
    status = {"profile": "pinned", "project": {"trusted": True, "path": "/p"}}
    chat = ModelRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "c1"}]},
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": json.dumps(status)}]},
            ]
        },
        0.0,
    )
    assert _status_in(chat_result([chat], "c1") or "") == status
    assert chat_result([chat], "c2") is None
    wrapped = {"output": "Project /p (trusted at workspace); profile pinned; engine temporary; tools 17"}
    gemini = ModelRequest(
        "POST",
        "/v1beta/models/m:streamGenerateContent",
        {},
        {
            "contents": [
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "mcp_shadowcode_shadow_status", "response": wrapped}}],
                }
            ]
        },
        0.0,
    )
    seen = _status_in(gemini_result([gemini], "mcp_shadowcode_shadow_status") or "")
    assert seen is not None and seen["profile"] == "pinned" and seen["project"]["level"] == "workspace"
    assert gemini_result([gemini], "shadow_status") is None
    as_string = ModelRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": json.dumps([{"type": "text", "text": wrapped["output"]}]),
                },
            ]
        },
        0.0,
    )
    assert (_status_in(chat_result([as_string], "c1") or "") or {}).get("profile") == "pinned"


@pytest.mark.req("REG-08", "REG-01")
@pytest.mark.slow
@pytest.mark.node
@pytest.mark.timeout(900)
def test_the_other_hosts_pass_against_the_archive(tmp_path: Path) -> None:
    """Gemini CLI, Qwen Code, Cline, opencode, Kilo and Continue CLI, side by side, against dist/shadowcode.pyz."""
    if not (REPO_ROOT / "dist" / "shadowcode.pyz").is_file():
        pytest.fail("build it first: bash ci/build")
    out, temporary = tmp_path / "out", tmp_path / "tmp"
    temporary.mkdir(mode=0o700)
    argv = [
        sys.executable,
        "-m",
        "shadowcode_conformance",
        "--target",
        "python3 dist/shadowcode.pyz",
        "--only",
        "hosts_headless",
        "--out",
        str(out),
        "--jobs",
        "3",
    ]
    env = {**os.environ, "TMPDIR": str(temporary), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=880, check=False
    )
    assert sorted(p.name for p in temporary.iterdir()) == []
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    checks = {c["name"]: c for c in report["checks"]}
    hosts = ("gemini", "qwen", "cline", "opencode", "kilo", "continue")
    assert set(checks) == {f"hosts_headless:{h}_first_turn" for h in hosts}, done.stderr[-2000:]
    assert all(c["status"] == "pass" for c in checks.values()), checks
    assert all("offered all 17 ShadowCode tools" in c["detail"] for c in checks.values())
    assert done.returncode == 0


@pytest.mark.req("REG-08")
def test_the_other_hosts_are_not_run_against_a_target_that_is_no_archive(tmp_path: Path) -> None:
    target = shlex.join([sys.executable, "-m", "shadowcode"])
    argv = [
        sys.executable,
        "-m",
        "shadowcode_conformance",
        "--target",
        target,
        "--only",
        "hosts_headless:kilo*",
        "--out",
        str(tmp_path),
    ]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, capture_output=True, text=True, encoding="utf-8", timeout=120, check=False
    )
    (kilo,) = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["checks"]
    assert kilo["status"] == "not_run" and "packaged archive" in kilo["detail"], kilo
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.req("REG-08")
def test_the_sweep_finds_a_process_that_left_the_hosts_group_and_spares_none_that_ended(tmp_path: Path) -> None:
    from shadowcode_conformance.checks.hosts_headless import _outliving

    marker = f"HOME={tmp_path / 'host home'}"
    env = {**os.environ, "HOME": str(tmp_path / "host home")}
    ended = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    ended.wait(timeout=30)
    assert anyio.run(_outliving, marker) == []
    escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)
    try:
        assert anyio.run(_outliving, marker) == [escaped.pid]
        assert escaped.wait(timeout=30) == -9
    finally:
        escaped.kill()
        escaped.wait(timeout=30)
