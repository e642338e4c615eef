"""The shipped checks judge fake targets correctly: they pass good behaviour and catch bad."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.checks.cli_usage import bad_profile_refused, json_serve_refused, missing_workspace_refused
from shadowcode_conformance.checks.node_stdio import parse_probe_output
from shadowcode_conformance.checks.stdout_purity import frames, is_jsonrpc_message, stdout_is_protocol_only
from shadowcode_conformance.limits import PURITY_FRAMES
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.runner import run_one

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"


def stand_in_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def _run_named(fn, target: list[str]):
    load_checks()
    chk = next(c for c in CHECKS.values() if c.fn is fn)

    async def go():
        with anyio.fail_after(chk.timeout_seconds + 10):
            return await run_one(
                chk,
                target=target,
                cwd=Path.cwd(),
                repo_root=SUITE,
                project_factory=stand_in_project,
            )

    records, revisions = anyio.run(go)
    return records[0], revisions


@pytest.mark.req("SRV-01")
def test_jsonrpc_line_classifier_accepts_messages_and_rejects_anything_else() -> None:
    assert is_jsonrpc_message(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert is_jsonrpc_message(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
    assert is_jsonrpc_message(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}')
    assert not is_jsonrpc_message(b"")
    assert not is_jsonrpc_message(b"Starting server...")
    assert not is_jsonrpc_message(b'{"id":1,"result":{}}')
    assert not is_jsonrpc_message(b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}')
    assert not is_jsonrpc_message(b"[1, 2]")
    assert is_jsonrpc_message(b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":null,"error":{}}]')
    assert not is_jsonrpc_message(b"[]")
    assert not is_jsonrpc_message(b'[{"jsonrpc":"2.0","method":"ping","id":1}]')  # a batch's answer holds no request
    assert not is_jsonrpc_message(b"\xff\xfe")


@pytest.mark.req("SRV-01")
def test_purity_session_is_500_frames_with_pings_and_invalid_requests() -> None:
    plan = frames()
    assert len(plan) + 1 == PURITY_FRAMES == 500
    ids = [i for i, _ in plan if i is not None]
    assert len(ids) == len(set(ids)) and 0 not in ids
    body = b"".join(line for _, line in plan)
    for needle in (b'"ping"', b'"tools/list"', b"shadow_status", b"shadow://project", b"shadow/no_such_method"):
        assert needle in body
    assert plan[-1][0] is None and not is_jsonrpc_message(plan[-1][1].rstrip(b"\n"))


@pytest.mark.req("SRV-02")
def test_cli_usage_checks_pass_a_target_that_refuses_with_exit_2(fake_target) -> None:
    target = fake_target("--exit-right")
    for fn in (json_serve_refused, bad_profile_refused):
        record, _ = _run_named(fn, target)
        assert record.ok, record.detail


@pytest.mark.req("SRV-02")
def test_cli_usage_checks_fail_a_target_that_accepts_bad_usage(fake_target) -> None:
    target = fake_target()
    record, _ = _run_named(json_serve_refused, target)
    assert not record.ok and "exit status 0, expected 2" in record.detail
    record, _ = _run_named(missing_workspace_refused, fake_target("--exit-right"))
    assert not record.ok and "expected 2" in record.detail


@pytest.mark.req("SRV-01")
@pytest.mark.slow
def test_purity_check_passes_a_clean_server_and_records_its_revision(fake_target) -> None:
    record, revisions = _run_named(stdout_is_protocol_only, fake_target())
    assert record.ok, record.detail
    assert revisions == {"stdout_purity:500_frames": "2025-11-25"}


@pytest.mark.req("SRV-01")
@pytest.mark.slow
def test_purity_check_fails_a_server_that_prints_a_banner_on_stdout(fake_target) -> None:
    record, _ = _run_named(stdout_is_protocol_only, fake_target("--banner"))
    assert not record.ok and "starting up" in record.detail


@pytest.mark.req("CONF-02")
def test_probe_output_becomes_named_sub_results() -> None:
    out = (
        b'{"probe":"stdio_sdk1","ok":false,"protocol_version":"2025-11-25","checks":['
        b'{"name":"tools_list_seventeen","covers":["SRV-04"],"ok":true,"detail":"17"},'
        b'{"name":"tool_run","covers":["SRV-15"],"ok":false,"detail":"no"}]}'
    )
    doc, subs, problem = parse_probe_output(out, "fallback")
    assert doc is not None and problem == ""
    assert [(s.name, s.covers, s.ok) for s in subs] == [
        ("stdio_sdk1:tools_list_seventeen", ("SRV-04",), True),
        ("stdio_sdk1:tool_run", ("SRV-15",), False),
    ]
    doc, subs, problem = parse_probe_output(b"Error: cannot find module", "stdio_sdk2")
    assert doc is None and subs == [] and "not one JSON document" in problem


DOT_PROFILE_TARGET = """
import sys
args = sys.argv[1:]
name = args[args.index("--profile") + 1] if "--profile" in args else "default"
if "/" in name:
    sys.stderr.write("invalid profile name\\n")
    sys.exit(2)
sys.exit(0)
"""


@pytest.mark.req("ENG-01")
def test_bad_profile_check_fails_a_target_that_takes_a_dot_name(tmp_path: Path) -> None:
    script = tmp_path / "target.py"
    script.write_text(DOT_PROFILE_TARGET, encoding="utf-8")
    record, _ = _run_named(bad_profile_refused, [sys.executable, str(script)])
    assert not record.ok
    assert "--profile ..: exit status 0, expected 2" in record.detail
    assert "--profile a/b" not in record.detail
