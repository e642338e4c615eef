"""The benchmark's code runs (issue 7): statistics, the floor server, the report, and a tiny run.

The ``slow`` tests spawn the real servers through the Node driver with tiny repetition
counts; they check the shape of ``latest.json`` and that the pacing keeps a ShadowCode
connection under its frame-rate bound (SRV-25), never a timing figure.
"""

from __future__ import annotations

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

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
RUN_TIMEOUT_SECONDS = 150


@pytest.fixture
def bench_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Makes the repository's ``bench`` package importable."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    yield


def _node_skip_reason() -> str | None:
    if NODE is None:
        return "node is not on PATH"
    for pkg in ("sdk", "server-everything"):
        if not (REPO_ROOT / "node_probes/node_modules/@modelcontextprotocol" / pkg / "package.json").is_file():
            return f"node_probes/node_modules lacks @modelcontextprotocol/{pkg}; run `npm ci` in node_probes"
    return None


_NODE_REASON = _node_skip_reason()
needs_node = pytest.mark.skipif(_NODE_REASON is not None, reason=_NODE_REASON or "")


def _bench(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``python -m bench`` in its own process group; the group is killed on timeout or exit."""
    out = tmp_path / "latest.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "--quiet", "--output", str(out), *args],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=10)
        pytest.fail(f"bench did not finish within {RUN_TIMEOUT_SECONDS} s\n{stdout}\n{stderr[-3000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    results = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None
    return proc.returncode, results, stdout + stderr


def test_percentile_is_nearest_rank_so_p99_of_1000_is_the_990th_issue7(bench_modules: None) -> None:
    from bench.stats import percentile, ratio, spread

    samples = [float(i) for i in range(1000, 0, -1)]
    assert percentile(samples, 99) == 990.0
    assert percentile(samples, 50) == 500.0
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert spread([]) is None
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None


def test_floor_server_answers_the_handshake_and_echo_with_canned_lines_issue7(bench_modules: None) -> None:
    from bench.floor_server import answer

    init = json.loads(
        answer(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}') or b""
    )
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert answer(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    listed = json.loads(answer(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}') or b"")
    assert [t["name"] for t in listed["result"]["tools"]] == ["echo"]
    call = b'{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
    called = json.loads(answer(call) or b"")
    assert called == {
        "jsonrpc": "2.0",
        "id": "c",
        "result": {"content": [{"type": "text", "text": "hi"}], "isError": False},
    }
    unknown = json.loads(answer(b'{"jsonrpc":"2.0","id":3,"method":"resources/list"}') or b"")
    assert unknown["error"]["code"] == -32601


def test_ratios_are_null_with_a_reason_when_a_side_is_missing_issue7(bench_modules: None) -> None:
    from bench.gateway import gateway_figures
    from bench.report import REQUIRED_RATIOS, compute_ratios

    def entry(spawn_ms: float | None, p50: float | None) -> dict[str, Any]:
        startup = {"spawn_to_tools_list_ms": {"median": spawn_ms}} if spawn_ms is not None else None
        calls = {"p50_ms": {"median": p50}, "rss_hwm_kib": {"median": 1000.0}} if p50 is not None else None
        return {"unavailable": None, "errors": [], "startup": startup, "calls": calls}

    targets = {"shadowcode_pyz_warm": entry(600.0, 0.6), "bare": entry(500.0, 0.8), "everything": entry(300.0, 0.3)}
    targets["shadowcode_pyz_attached"] = {**entry(None, None), "unavailable": "pending"}
    ratios, reasons = compute_ratios(targets, gateway_figures())
    assert set(REQUIRED_RATIOS) <= set(ratios)
    assert ratios["startup_ratio_vs_bare"] == pytest.approx(1.2)
    assert ratios["call_p50_ratio_vs_bare"] == pytest.approx(0.75)
    assert ratios["rss_ratio_vs_bare"] == pytest.approx(1.0)
    assert ratios["startup_attached_ratio_vs_ts"] is None
    assert "pending" in reasons["startup_attached_ratio_vs_ts"]
    assert ratios["gateway_rps_ratio_vs_bare"] is None
    assert "gateway" in reasons["gateway_rps_ratio_vs_bare"]
    assert "not run" in reasons["startup_ratio_vs_bare_source"]
    assert set(reasons) == {k for k, v in ratios.items() if v is None}


def test_importtime_parser_reads_self_cumulative_and_depth_issue7(bench_modules: None) -> None:
    from bench.importtime import parse_importtime, top_imports

    text = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |     mcp_types._types\n"
        "import time:        30 |        150 |   mcp_types\n"
        "import time:         5 |        400 | shadowcode.mcp.server.app\n"
        "unrelated line\n"
    )
    records = parse_importtime(text)
    assert [(r.module, r.self_us, r.cumulative_us, r.depth) for r in records] == [
        ("mcp_types._types", 120, 120, 2),
        ("mcp_types", 30, 150, 1),
        ("shadowcode.mcp.server.app", 5, 400, 0),
    ]
    assert top_imports(records, 1, by="cumulative")[0].module == "shadowcode.mcp.server.app"
    assert top_imports(records, 1, by="self")[0].module == "mcp_types._types"


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_tiny_bench_run_measures_the_peers_and_writes_every_ratio_key_issue7(tmp_path: Path) -> None:
    code, results, output = _bench(
        tmp_path,
        "--targets", "floor,bare,everything,shadowcode_pyz_attached",
        "--rounds", "2", "--cold-rounds", "0", "--call-rounds", "1", "--calls", "5", "--burst-calls", "8",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None, output
    for key in ("startup_ratio_vs_bare", "startup_attached_ratio_vs_ts", "call_p50_ratio_vs_bare",
                "rss_ratio_vs_bare", "gateway_rps_ratio_vs_bare"):  # fmt: skip
        assert key in results["ratios"]
    assert results["ratios"]["startup_ratio_vs_bare"] is None  # ShadowCode was left out of this run
    assert results["ratio_reasons"]["startup_attached_ratio_vs_ts"]
    for name in ("floor", "bare", "everything"):
        entry = results["targets"][name]
        assert entry["errors"] == [], entry["errors"]
        assert entry["startup"]["spawn_to_tools_list_ms"]["n"] == 2
        assert entry["startup"]["rss_hwm_kib"]["median"] > 0
        run = entry["calls"]["runs"][0]
        assert run["calls"] == 5 and len(run["latencies_ms"]) == 5
        assert run["burst_calls"] == 8 and run["calls_per_second"] > 0
    attached = results["targets"]["shadowcode_pyz_attached"]
    assert attached["unavailable"] and attached["startup"] is None
    assert results["gateway"]["shadowcode_rps"] is None and results["gateway"]["reason"]
    assert "<workspace>" in " ".join(results["targets"]["shadowcode_pyz_attached"]["command"])
    assert "ratios (ShadowCode / peer" in output


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_paced_calls_keep_a_shadowcode_connection_under_the_srv25_frame_rate(tmp_path: Path) -> None:
    # 140 calls plus the handshake exceed the 128 frames/s bound when sent back to back;
    # the default pacing spreads them over two windows and every call is answered.
    code, results, output = _bench(
        tmp_path, "--targets", "shadowcode_source",
        "--rounds", "1", "--cold-rounds", "0", "--call-rounds", "1", "--calls", "140", "--burst-calls", "0",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None
    entry = results["targets"]["shadowcode_source"]
    assert entry["errors"] == [], entry["errors"]
    assert entry["startup"]["spawn_to_tools_list_ms"]["n"] == 1
    assert len(entry["calls"]["runs"][0]["latencies_ms"]) == 140


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_unpaced_calls_past_the_srv25_frame_rate_are_reported_as_a_failed_figure(tmp_path: Path) -> None:
    code, results, output = _bench(
        tmp_path, "--targets", "shadowcode_source", "--window-frames", "0",
        "--rounds", "0", "--cold-rounds", "0", "--call-rounds", "1", "--calls", "1000", "--burst-calls", "0",
    )  # fmt: skip
    assert code == 1, output
    assert results is not None
    entry = results["targets"]["shadowcode_source"]
    assert entry["calls"] is None and entry["startup"] is None
    assert entry["errors"], output
    assert "null" in output
