"""Hostile stdin against a live ``mcp serve``: property tests over JSON-RPC frames (SRV-01, SRV-25).

Each example is a batch of frames (valid requests and notifications, truncated JSON, invalid
UTF-8, deep nesting, huge numbers, duplicate ids, notifications with ids, batches, wrong
types) sent to a fresh server process, followed by a probe ping. Whatever the batch, the
server must answer the probe, write nothing but JSON-RPC messages to stdout, print no
traceback, stay under the memory bound, start no child, and exit cleanly at EOF.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shadowcode.limits import STDIO_FRAMES_PER_SECOND_MAX
from tests.support.process import INIT, ServerProcess

RSS_BOUND_KIB = 200 * 1024
PROBE_ID = "probe:end-of-batch"
FRAMES_PER_BATCH_MAX = 40

ids = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63),
    st.text(alphabet="abc123-", min_size=0, max_size=6),
)
bad_ids = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2))
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**300), max_value=10**300),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
methods = st.sampled_from(
    [
        "ping",
        "tools/list",
        "resources/list",
        "prompts/list",
        "resources/templates/list",
        "initialize",
        "server/discover",
        "no/such/method",
        "",
    ]
)
quick_calls = st.sampled_from(
    [
        ("tools/call", {"name": "shadow_status", "arguments": {}}),
        ("tools/call", {"name": "shadow_tools", "arguments": {}}),
        ("tools/call", {"name": "shadow_memory", "arguments": {"action": "read"}}),
        ("tools/call", {"name": "no_such_tool", "arguments": {}}),
        ("tools/call", {"name": "shadow_status", "arguments": "not an object"}),
        ("resources/read", {"uri": "shadow://memory"}),
        ("resources/read", {"uri": "shadow://nowhere"}),
        ("prompts/get", {"name": "understand"}),
    ]
)


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        method, params = draw(quick_calls)
    else:
        method, params = draw(methods), draw(st.one_of(st.just({}), st.dictionaries(st.text(max_size=6), json_values)))
    return _dump({"jsonrpc": "2.0", "id": draw(ids), "method": method, "params": params})


@st.composite
def notifications(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from(["notifications/initialized", "notifications/cancelled", "notifications/nonsense"]))
    params = {"requestId": draw(ids), "reason": "fuzz"} if method.endswith("cancelled") else {}
    return _dump({"jsonrpc": "2.0", "method": method, "params": params})


@st.composite
def notifications_with_ids(draw: st.DrawFn) -> bytes:
    return _dump({"jsonrpc": "2.0", "id": draw(st.one_of(ids, bad_ids)), "method": "notifications/initialized"})


@st.composite
def truncated(draw: st.DrawFn) -> bytes:
    whole = draw(requests())
    return whole[: draw(st.integers(min_value=1, max_value=max(1, len(whole) - 1)))]


@st.composite
def invalid_utf8(draw: st.DrawFn) -> bytes:
    whole = draw(requests())
    cut = draw(st.integers(min_value=0, max_value=len(whole)))
    junk = draw(st.sampled_from([b"\xff", b"\xfe\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]))
    return whole[:cut] + junk + whole[cut:]


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    depth = draw(st.sampled_from([100, 300, 1_000, 10_000]))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    nested = opener * depth + b"1" + closer * depth
    if draw(st.booleans()):
        return nested
    return b'{"jsonrpc":"2.0","id":' + _dump(draw(ids)) + b',"method":"ping","params":{"_meta":{"n":' + nested + b"}}}"


@st.composite
def huge_numbers(draw: st.DrawFn) -> bytes:
    digits = draw(st.sampled_from([20, 400, 4_301, 50_000]))
    number = b"9" * digits + draw(st.sampled_from([b"", b".5", b"e999", b"e-999"]))
    where = draw(st.sampled_from(["id", "param"]))
    if where == "id":
        return b'{"jsonrpc":"2.0","id":' + number + b',"method":"ping"}'
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"n":' + number + b"}}}"


@st.composite
def wrong_types(draw: st.DrawFn) -> bytes:
    doc: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "1.0", 2, None])), "id": draw(ids)}
    doc["method"] = draw(st.one_of(methods, st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2)))
    doc["params"] = draw(json_values)
    if draw(st.booleans()):
        doc["result"] = draw(json_values)
    return _dump(draw(st.one_of(st.just(doc), json_values)))


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    return b"[" + b",".join(draw(st.lists(requests(), max_size=3))) + b"]"


frames = st.one_of(
    requests(),
    notifications(),
    notifications_with_ids(),
    truncated(),
    invalid_utf8(),
    deep(),
    huge_numbers(),
    wrong_types(),
    batches(),
    st.just(b""),
    st.binary(max_size=64).filter(lambda b: b"\n" not in b),
)


def _is_jsonrpc(line: bytes) -> bool:
    doc = json.loads(line.decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("jsonrpc") != "2.0":
        return False
    if isinstance(doc.get("method"), str):
        return True
    return "id" in doc and (("result" in doc) != ("error" in doc))


def _run_batch(workspace: Path, home: Path, handshake: bool, batch: list[bytes]) -> None:
    assert len(batch) + 3 < STDIO_FRAMES_PER_SECOND_MAX  # the batch itself crosses no transport limit
    server = ServerProcess(workspace, home)
    try:
        if handshake:
            server.send(INIT)
        server.send_raw(b"".join(frame + b"\n" for frame in batch))
        server.send({"jsonrpc": "2.0", "id": PROBE_ID, "method": "ping"})
        while True:
            line = server.read_line(timeout=30)
            assert line is not None, "the server closed the connection instead of answering"
            assert b"Traceback" not in line
            assert _is_jsonrpc(line), line[:300]
            if json.loads(line).get("id") == PROBE_ID:
                break
        assert server.peak_rss_kib() < RSS_BOUND_KIB
        assert server.child_pids() == []
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        rest = server.read_line(timeout=15)
        while rest is not None:  # late answers to the batch are still protocol only
            assert _is_jsonrpc(rest), rest[:300]
            rest = server.read_line(timeout=15)
        assert server.wait_exit(timeout=15) == 0
        stderr = server.stderr_text()
        assert "Traceback" not in stderr, stderr[-3000:]
    finally:
        server.close()


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "project").mkdir()
    return root / "project", root / "home"


@pytest.mark.req("SRV-01", "SRV-25")
@pytest.mark.timeout(300)  # about 30 s alone; room for a loaded machine
@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(handshake=st.booleans(), batch=st.lists(frames, min_size=1, max_size=FRAMES_PER_BATCH_MAX))
@example(handshake=True, batch=[b"[" * 10_000 + b"]" * 10_000, b'{"jsonrpc":"2.0","id":null,"method":"ping"}'])
@example(handshake=True, batch=[b'{"jsonrpc":"2.0","id":1,"method":"ping"}'] * 3 + [b"\xff\xfe{"])
@example(handshake=False, batch=[b'{"jsonrpc":"2.0","id":' + b"9" * 50_000 + b',"method":"ping"}', b"[]"])
def test_hostile_frames_are_answered_or_closed_never_crash(
    places: tuple[Path, Path], handshake: bool, batch: list[bytes]
) -> None:
    workspace, home = places
    _run_batch(workspace, home, handshake, batch)
