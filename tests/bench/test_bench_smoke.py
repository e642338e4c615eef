"""The benchmark's code runs (issue 7): statistics, the floor server, the report, and tiny runs.

The ``slow`` tests spawn the real servers through the Node driver with tiny repetition
counts; they check the shape of ``latest.json``, that the attached rows really went through
the headless engine, that the pacing keeps ShadowCode under its frame-rate (SRV-25) and
request-rate (GW-07) bounds, and that every process the run starts is stopped, never a
timing figure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
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
        modules = REPO_ROOT / "conformance" / "shadowcode_conformance" / "node_probes" / "node_modules"
        if not (modules / "@modelcontextprotocol" / pkg / "package.json").is_file():
            return f"{modules} lacks @modelcontextprotocol/{pkg}; run `npm ci` in {modules.parent}"
    return None


_NODE_REASON = _node_skip_reason()
needs_node = pytest.mark.skipif(_NODE_REASON is not None, reason=_NODE_REASON or "")


def _gone(pid: int, marker: bytes = b"shadowcode") -> bool:
    """True when ``pid`` names no live process (a zombie, or an unrelated one that reused it, count as gone).

    ``marker`` is a part of the expected process's command line.
    """
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z" or marker not in cmdline


def _wait(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


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
    from bench.gateway import pending_gateway_figures
    from bench.report import REQUIRED_RATIOS, compute_ratios

    def entry(spawn_ms: float | None, p50: float | None) -> dict[str, Any]:
        startup = {"spawn_to_tools_list_ms": {"median": spawn_ms}} if spawn_ms is not None else None
        calls = {"p50_ms": {"median": p50}, "rss_hwm_kib": {"median": 1000.0}} if p50 is not None else None
        return {"unavailable": None, "errors": [], "startup": startup, "calls": calls}

    targets = {"shadowcode_pyz_warm": entry(600.0, 0.6), "bare": entry(500.0, 0.8), "everything": entry(300.0, 0.3)}
    targets["shadowcode_pyz_attached"] = {**entry(None, None), "unavailable": "pending"}
    ratios, reasons = compute_ratios(targets, pending_gateway_figures("the gateway was left out"))
    assert set(REQUIRED_RATIOS) <= set(ratios)
    assert ratios["startup_ratio_vs_bare"] == pytest.approx(1.2)
    assert ratios["call_p50_ratio_vs_bare"] == pytest.approx(0.75)
    assert ratios["rss_ratio_vs_bare"] == pytest.approx(1.0)
    assert ratios["startup_attached_ratio_vs_ts"] is None
    assert "pending" in reasons["startup_attached_ratio_vs_ts"]
    assert ratios["rss_attached_ratio_vs_bare"] is None
    assert "pending" in reasons["rss_attached_ratio_vs_bare"]
    assert ratios["gateway_rps_ratio_vs_bare"] is None
    assert "gateway" in reasons["gateway_rps_ratio_vs_bare"]
    assert "not run" in reasons["startup_ratio_vs_bare_source"]
    assert set(reasons) == {k for k, v in ratios.items() if v is None}


def _figures(
    spawn_ms: float | None,
    *,
    own_kib: float | None = None,
    tree_kib: float | None = None,
    child_kib: float | None = None,
) -> dict[str, Any]:
    """A results entry with a start-up median and (when ``own_kib`` is given) call-round memory."""

    def one(value: float) -> dict[str, Any]:
        return {"median": value, "min": value, "max": value, "n": 1}

    startup = {"spawn_to_tools_list_ms": one(spawn_ms)} if spawn_ms is not None else None
    calls = None
    if own_kib is not None:
        calls = {
            "p50_ms": one(1.0),
            "p99_ms": one(2.0),
            "calls_per_second": one(500.0),
            "rss_hwm_kib": one(own_kib),
            "tree_rss_hwm_kib": one(tree_kib if tree_kib is not None else own_kib),
            "children_rss_hwm_kib": one(child_kib) if child_kib is not None else None,
        }
    return {"label": "row", "unavailable": None, "errors": [], "startup": startup, "calls": calls}


def test_floor_and_front_ratios_come_from_the_floor_the_front_and_bare_issue15(bench_modules: None) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.report import REQUIRED_RATIOS, compute_ratios, temporary_engine_figure

    targets = {
        "shadowcode_pyz_warm": _figures(90.0, own_kib=16_000.0, tree_kib=96_000.0, child_kib=80_000.0),
        "shadowcode_pyz_cold": _figures(135.0),
        "shadowcode_pyz_attached": _figures(60.0, own_kib=15_000.0),
        "bare": _figures(600.0, own_kib=64_000.0),
        "floor": _figures(45.0, own_kib=11_000.0),
    }
    ratios, reasons = compute_ratios(targets, pending_gateway_figures("the gateway was left out"))
    for key in (
        "startup_ratio_vs_floor", "startup_cold_ratio_vs_floor", "startup_attached_ratio_vs_floor",
        "rss_front_ratio_vs_bare", "rss_front_attached_ratio_vs_bare",
    ):  # fmt: skip
        assert key in REQUIRED_RATIOS
    assert ratios["startup_ratio_vs_floor"] == pytest.approx(2.0)
    assert ratios["startup_cold_ratio_vs_floor"] == pytest.approx(3.0)
    assert ratios["startup_attached_ratio_vs_floor"] == pytest.approx(60.0 / 45.0)
    # The front alone against bare, and the whole session (front and its temporary engine).
    assert ratios["rss_front_ratio_vs_bare"] == pytest.approx(0.25)
    assert ratios["rss_ratio_vs_bare"] == pytest.approx(1.5)
    assert ratios["rss_front_attached_ratio_vs_bare"] == pytest.approx(15_000 / 64_000)
    assert ratios["rss_attached_ratio_vs_bare"] == ratios["rss_front_attached_ratio_vs_bare"]
    assert set(reasons) == {k for k, v in ratios.items() if v is None}

    engine = temporary_engine_figure(targets)
    assert engine["rss_hwm_kib"]["median"] == 80_000.0 and engine["reason"] is None
    assert engine["front_rss_hwm_kib"]["median"] == 16_000.0


def test_front_rss_falls_back_to_start_up_memory_for_a_row_without_calls_issue15(bench_modules: None) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.report import compute_ratios

    attached = _figures(60.0)
    attached["startup"]["rss_hwm_kib"] = {"median": 16_000.0}
    targets = {"shadowcode_pyz_attached": attached, "bare": _figures(600.0, own_kib=64_000.0)}
    ratios, _ = compute_ratios(targets, pending_gateway_figures("left out"))
    assert ratios["rss_front_attached_ratio_vs_bare"] == pytest.approx(0.25)
    assert ratios["rss_attached_ratio_vs_bare"] is None  # that one reads the call rounds only


def test_the_floor_runs_on_the_interpreter_the_archive_runs_on_issue15(bench_modules: None, tmp_path: Path) -> None:
    # A ratio to the floor must not count the interpreter's own start-up (site, .pth files)
    # against the archive: both start the same interpreter.
    from bench.targets import Layout, build_targets

    layout = Layout(
        repo=tmp_path, workspace=tmp_path / "ws", home=tmp_path / "h", attached_home=tmp_path / "a",
        shiv_warm=tmp_path / "s", pyz=tmp_path / "x.pyz", venv_python=tmp_path / "venv-python",
        pyz_python=tmp_path / "base-python", node="node",
    )  # fmt: skip
    argv = {t.name: t.argv for t in build_targets(layout)}
    assert argv["floor"][0] == argv["shadowcode_pyz_warm"][0] == str(tmp_path / "base-python")
    assert argv["bare"][0] == str(tmp_path / "venv-python")  # it needs the SDK


def test_floor_ratios_are_null_with_the_missing_side_named_issue15(bench_modules: None) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.report import compute_ratios, temporary_engine_figure

    targets = {
        "shadowcode_pyz_warm": _figures(90.0, own_kib=16_000.0),
        "shadowcode_pyz_cold": {**_figures(None), "errors": ["shadowcode_pyz_cold: the driver timed out"]},
        "bare": {**_figures(None), "unavailable": "no SDK"},
    }
    ratios, reasons = compute_ratios(targets, pending_gateway_figures("left out"))
    assert ratios["startup_ratio_vs_floor"] is None
    assert reasons["startup_ratio_vs_floor"] == "floor was not run (left out with --targets)"
    assert "timed out" in reasons["startup_cold_ratio_vs_floor"]
    assert "not run" in reasons["startup_attached_ratio_vs_floor"]
    assert reasons["rss_front_ratio_vs_bare"] == "bare: no SDK"
    assert "not run" in reasons["rss_front_attached_ratio_vs_bare"]
    # A warm row whose process had no child was not served by the front: no engine figure.
    engine = temporary_engine_figure(targets)
    assert engine["rss_hwm_kib"] is None and "no child" in engine["reason"]
    assert "not run" in temporary_engine_figure({})["reason"]


def test_the_table_prints_the_temporary_engine_on_its_own_line_issue15(bench_modules: None) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.report import compute_ratios, render_table, temporary_engine_figure

    targets = {"shadowcode_pyz_warm": _figures(90.0, own_kib=16_384.0, tree_kib=98_304.0, child_kib=81_920.0)}
    gateway = pending_gateway_figures("left out")
    ratios, reasons = compute_ratios(targets, gateway)
    results = {
        "targets": targets, "engine": None, "temporary_engine": temporary_engine_figure(targets),
        "pyz": {"size_bytes": None}, "gateway": gateway, "ratios": ratios, "ratio_reasons": reasons,
    }  # fmt: skip
    table = render_table(results)
    line = next(ln for ln in table.splitlines() if ln.startswith("temporary engine"))
    assert "80.0" in line and "16.0" in line
    assert "rss_front_ratio_vs_bare" in table and "startup_ratio_vs_floor" in table


def test_the_cold_first_call_and_the_first_call_ratio_come_from_a_new_home_and_the_call_rounds_issue32(
    bench_modules: None,
) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.report import REQUIRED_RATIOS, cold_first_call_figure, compute_ratios, render_table
    from bench.targets import COLD_DIR_ENV, Layout, build_targets

    cold = _figures(135.0)
    cold["startup"]["spawn_to_first_call_ms"] = {"median": 1800.0, "min": 1700.0, "max": 1900.0, "n": 3}
    warm, everything = _figures(90.0, own_kib=16_000.0), _figures(300.0, own_kib=70_000.0)
    warm["calls"]["spawn_to_first_call_ms"] = {"median": 450.0, "min": 440.0, "max": 470.0, "n": 1}
    everything["calls"]["spawn_to_first_call_ms"] = {"median": 360.0, "min": 350.0, "max": 380.0, "n": 1}
    targets = {"shadowcode_pyz_cold": cold, "shadowcode_pyz_warm": warm, "everything": everything}
    gateway = pending_gateway_figures("left out")
    ratios, reasons = compute_ratios(targets, gateway)

    assert "first_call_ratio_vs_ts" in REQUIRED_RATIOS
    assert ratios["first_call_ratio_vs_ts"] == pytest.approx(450.0 / 360.0)
    assert ratios["cold_first_call_ratio_vs_ts"] == pytest.approx(1800.0 / 360.0)
    figure = cold_first_call_figure(targets)
    assert figure["spawn_to_first_call_ms"]["median"] == 1800.0 and figure["reason"] is None
    results = {
        "targets": targets, "engine": None, "temporary_engine": None, "cold_first_call": figure,
        "pyz": {"size_bytes": None}, "gateway": gateway, "ratios": ratios, "ratio_reasons": reasons,
    }  # fmt: skip
    line = next(ln for ln in render_table(results).splitlines() if ln.startswith("cold first call, new HOME"))
    assert "1800 (1700-1900)" in line and "2000 ms" in line
    # Without a timed cold spawn the figure is null and says why.
    missing = cold_first_call_figure({"shadowcode_pyz_cold": _figures(135.0)})
    assert missing["spawn_to_first_call_ms"] is None and "--cold-rounds" in missing["reason"]
    # The cold row runs under a new HOME and a new profile root, never a shared shiv cache.
    layout = Layout(
        repo=Path("/r"), workspace=Path("/w"), home=Path("/h"), attached_home=Path("/a"), shiv_warm=Path("/s"),
        pyz=Path("/x.pyz"), venv_python=Path("/v"), pyz_python=Path("/p"), node="node",
    )  # fmt: skip
    row = next(t for t in build_targets(layout) if t.name == "shadowcode_pyz_cold")
    assert row.fresh_dir_env == COLD_DIR_ENV == ("HOME", "SHADOWCODE_HOME")
    assert "SHIV_ROOT" not in row.env


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
@pytest.mark.timeout(RUN_TIMEOUT_SECONDS + 60)  # the run's own bound, plus reading its results
def test_tiny_bench_run_measures_the_peers_and_writes_every_ratio_key_issue7(tmp_path: Path) -> None:
    code, results, output = _bench(
        tmp_path,
        "--targets", "floor,bare,everything",
        "--rounds", "2", "--cold-rounds", "0", "--call-rounds", "1", "--calls", "5", "--burst-calls", "8",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None, output
    for key in ("startup_ratio_vs_bare", "startup_attached_ratio_vs_ts", "call_p50_ratio_vs_bare",
                "rss_ratio_vs_bare", "rss_attached_ratio_vs_bare", "gateway_rps_ratio_vs_bare",
                "startup_ratio_vs_floor", "startup_cold_ratio_vs_floor", "startup_attached_ratio_vs_floor",
                "rss_front_ratio_vs_bare", "rss_front_attached_ratio_vs_bare"):  # fmt: skip
        assert key in results["ratios"]
    assert results["temporary_engine"]["rss_hwm_kib"] is None and results["temporary_engine"]["reason"]
    assert results["ratios"]["startup_ratio_vs_bare"] is None  # ShadowCode was left out of this run
    assert "not run" in results["ratio_reasons"]["startup_attached_ratio_vs_ts"]
    assert results["engine"]["started"] is False  # no attached target: no engine
    for name in ("floor", "bare", "everything"):
        entry = results["targets"][name]
        assert entry["errors"] == [], entry["errors"]
        assert entry["startup"]["spawn_to_tools_list_ms"]["n"] == 2
        assert entry["startup"]["rss_hwm_kib"]["median"] > 0
        run = entry["calls"]["runs"][0]
        assert run["calls"] == 5 and len(run["latencies_ms"]) == 5
        assert run["burst_calls"] == 8 and run["calls_per_second"] > 0
    assert results["gateway"]["shadowcode_rps"] is None and results["gateway"]["reason"]
    assert "ratios (ShadowCode / peer" in output


@pytest.mark.req("SRV-25")
@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_paced_calls_keep_a_shadowcode_connection_under_the_frame_rate(tmp_path: Path) -> None:
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


@pytest.mark.req("SRV-25")
@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_unpaced_calls_past_the_frame_rate_are_reported_as_a_failed_figure(tmp_path: Path) -> None:
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


def test_server_process_stops_its_whole_group_and_refuses_one_that_never_gets_ready_issue7(
    bench_modules: None, tmp_path: Path
) -> None:
    from bench.driver import BenchError
    from bench.process import ServerProcess

    # The leader starts a child in its own process group, then says it is ready.
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "sys.stderr.write(f'up child {child.pid}\\n'); sys.stderr.flush()\n"
        "time.sleep(600)\n"
    )
    server = ServerProcess(
        "fake", [sys.executable, "-c", script], env=dict(os.environ), cwd=tmp_path,
        stderr_path=tmp_path / "fake.stderr", ready=r"up child (\d+)", ready_timeout_seconds=60,
    )  # fmt: skip
    with server:
        child = int(server.ready_value or 0)
        leader = server.pid
        assert server.alive() and not _gone(child, b"sleep(600)") and not _gone(leader, b"sleep(600)")
        assert (server.memory()["rss_hwm_kib"] or 0) > 0
    assert _wait(
        lambda: _gone(child, b"sleep(600)") and _gone(leader, b"sleep(600)"), timeout=30, what="the group to be gone"
    )

    silent = ServerProcess(
        "silent", [sys.executable, "-c", "import time; time.sleep(600)"], env=dict(os.environ), cwd=tmp_path,
        stderr_path=tmp_path / "silent.stderr", ready="never", ready_timeout_seconds=0.5,
    )  # fmt: skip
    with pytest.raises(BenchError, match="not ready within"), silent:
        pass
    assert silent.proc is not None and silent.proc.returncode is not None

    early = ServerProcess(
        "early", [sys.executable, "-c", "import sys; sys.exit(3)"], env=dict(os.environ), cwd=tmp_path,
        stderr_path=tmp_path / "early.stderr", ready="never", ready_timeout_seconds=60,
    )  # fmt: skip
    with pytest.raises(BenchError, match="exited 3"), early:
        pass


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_a_figure_fails_when_the_server_that_answered_is_not_the_expected_one_issue7(
    bench_modules: None, tmp_path: Path
) -> None:
    from bench.driver import BenchError, run_startup
    from bench.targets import ATTACHED_EXPECT_TEXT, RELAY_FORBIDDEN_MAPPING, STATUS_TOOL, Target

    sys.path.insert(0, str(REPO_ROOT / "conformance/shadowcode_conformance/fixtures"))
    from sample_project import make_sample_project

    workspace = make_sample_project(tmp_path / "project")
    # No headless engine runs under this profile root, so `mcp serve` serves in-process and
    # its status reports a temporary engine: a row that expects the relay must fail.
    target = Target(
        name="relay_expected",
        label="relay expected",
        argv=(sys.executable, "-m", "shadowcode", "--workspace", str(workspace), "mcp", "serve"),
        tool=STATUS_TOOL,
        tool_args={},
        expect_text=ATTACHED_EXPECT_TEXT,
    )
    env = {**os.environ, "SHADOWCODE_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    with pytest.raises(BenchError, match="answered without"):
        run_startup(REPO_ROOT, NODE or "node", target, env, runs=1, warmup=0, timeout=RUN_TIMEOUT_SECONDS)
    # A server that loaded the SDK in the measured process (one without the stdio front, as an
    # in-process one attached to the engine would) maps pydantic's core; a relay row refuses it
    # whatever the status says.
    loaded = replace(target, expect_text=None, forbid_mapped=RELAY_FORBIDDEN_MAPPING)
    in_process = {**env, "SHADOWCODE_STDIO_FRONT": "0"}
    with pytest.raises(BenchError, match="maps"):
        run_startup(REPO_ROOT, NODE or "node", loaded, in_process, runs=1, warmup=0, timeout=RUN_TIMEOUT_SECONDS)


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_attached_rows_relay_into_a_headless_engine_that_the_run_stops_issue7(tmp_path: Path) -> None:
    code, results, output = _bench(
        tmp_path, "--targets", "shadowcode_source_attached,shadowcode_pyz_attached,shadowcode_source",
        "--rounds", "1", "--cold-rounds", "0", "--call-rounds", "1", "--calls", "5", "--burst-calls", "8",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None, output
    engine = results["engine"]
    assert engine["started"] and engine["alive_after_rounds"], engine
    assert engine["after"]["rss_hwm_kib"] > 0
    assert _gone(engine["pid"]), "the headless engine outlived the run"
    # Each row checked which engine served it: the relay rows the headless one, the
    # in-process row its own temporary one; a wrong answer would be an error here.
    names = ["shadowcode_source_attached", "shadowcode_source"]
    if results["pyz"]["size_bytes"]:
        names.append("shadowcode_pyz_attached")
        calls = results["targets"]["shadowcode_pyz_attached"]["calls"]
        assert len(calls["runs"][0]["latencies_ms"]) == 5
        assert calls["rss_hwm_kib"]["median"] > 0
        assert "<workspace>" in " ".join(results["targets"]["shadowcode_pyz_attached"]["command"])
    for name in names:
        entry = results["targets"][name]
        assert entry["errors"] == [], entry["errors"]
        assert entry["startup"]["spawn_to_tools_list_ms"]["n"] == 1
    assert results["targets"]["shadowcode_source_attached"]["calls"] is None  # start-up only
    assert "headless engine (attached rows" in output


@pytest.mark.req("GW-07")
@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_paced_gateway_load_stays_under_the_request_rate_and_fills_the_gateway_ratio_issue7(
    tmp_path: Path,
) -> None:
    # 140 timed requests and 2 warm-up ones exceed the gateway's 128 requests per second
    # when sent back to back; the default pacing spreads them and every one is answered.
    code, results, output = _bench(
        tmp_path, "--targets", "gateway",
        "--gateway-rounds", "1", "--gateway-requests", "140", "--gateway-warmup", "2",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None, output
    gateway = results["gateway"]
    assert gateway["reason"] is None, gateway["reason"]
    assert gateway["callers"] == 8
    for side in ("shadowcode", "bare"):
        doc = gateway["servers"][side]
        assert doc["errors"] == [], doc["errors"]
        (run,) = doc["runs"]
        assert run["requests"] == 140 and len(run["latencies_ms"]) == 140
        assert run["requests_per_second"] > 0 and run["p99_ms"] >= run["p50_ms"] > 0
        assert doc["rss_hwm_kib"] > 0
    assert results["ratios"]["gateway_rps_ratio_vs_bare"] is not None
    assert "--token-env" in gateway["servers"]["shadowcode"]["command"]
    assert "HTTP gateway, 8 callers" in output


def test_http_client_ratios_come_from_both_clients_or_say_why_not(bench_modules: None) -> None:
    from bench.gateway import pending_gateway_figures
    from bench.http_client import pending_http_client_figures
    from bench.report import compute_ratios

    gateway = pending_gateway_figures("left out")
    measured = {"shadowcode_p50_ms": 3.0, "shadowcode_p99_ms": 9.0, "ts_p50_ms": 2.0, "ts_p99_ms": 6.0}
    ratios, reasons = compute_ratios({}, gateway, {**pending_http_client_figures("x"), **measured, "reason": None})
    assert ratios["http_client_p50_ratio_vs_ts"] == pytest.approx(1.5)
    assert ratios["http_client_p99_ratio_vs_ts"] == pytest.approx(1.5)
    assert "http_client_p50_ratio_vs_ts" not in reasons
    ratios, reasons = compute_ratios({}, gateway, pending_http_client_figures("the client figure was left out"))
    assert ratios["http_client_p99_ratio_vs_ts"] is None
    assert reasons["http_client_p99_ratio_vs_ts"] == "the client figure was left out"


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_http_client_figure_times_both_clients_against_server_everything_over_http(tmp_path: Path) -> None:
    code, results, output = _bench(
        tmp_path, "--targets", "http_client", "--client-rounds", "1", "--client-calls", "5", "--client-warmup", "1",
    )  # fmt: skip
    assert code == 0, output
    assert results is not None, output
    doc = results["http_client"]
    assert doc["reason"] is None, doc["reason"]
    for side in ("shadowcode", "ts"):
        entry = doc["clients"][side]
        assert entry["errors"] == [], entry["errors"]
        (run,) = entry["runs"]
        assert run["calls"] == 5 and len(run["latencies_ms"]) == 5
        assert run["p99_ms"] >= run["p50_ms"] > 0 and run["protocol_version"]
    assert "streamableHttp" in doc["server"]["command"]
    assert "bench.http_client_driver" in doc["clients"]["shadowcode"]["command"]
    assert results["ratios"]["http_client_p50_ratio_vs_ts"] is not None
    assert results["ratios"]["http_client_p99_ratio_vs_ts"] is not None
    assert "HTTP client, sequential tools/call" in output


@pytest.mark.slow
@pytest.mark.node
@needs_node
def test_sigterm_to_the_bench_stops_the_headless_engine_it_started_issue7(tmp_path: Path) -> None:
    # The bench's folder goes under TMPDIR, so the test can read the engine's ready line;
    # a short one, since the engine's socket path must fit a unix socket address.
    short = Path(tempfile.mkdtemp(prefix="sb-"))
    try:
        _sigterm_run(tmp_path, short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _sigterm_run(tmp_path: Path, tmpdir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "--quiet", "--output", str(tmp_path / "latest.json"),
         "--targets", "shadowcode_source_attached", "--rounds", "500", "--cold-rounds", "0", "--call-rounds", "0",
         "--gateway-rounds", "0"],
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:

        def engine_pid() -> int | None:
            for path in tmpdir.glob("shadowcode-bench-*/engine.stderr"):
                text = path.read_text(encoding="utf-8", errors="replace")
                if "engine ready" in text:
                    return int(text.split(" pid ", 1)[1].split(",", 1)[0])
            assert proc.poll() is None, "the bench ended before its engine was ready"
            return None

        pid = _wait(engine_pid, timeout=90, what="the bench's headless engine")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode != 0, stderr
    assert _gone(pid), "the headless engine outlived a SIGTERM to the bench"
    assert list(tmpdir.glob("shadowcode-bench-*")) == []
