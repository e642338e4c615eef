"""The HTTP gateway figure: requests/s and p99 with 8 callers, beside a bare SDK HTTP server.

Two servers run side by side for the whole figure, each on 127.0.0.1 with port 0:

* ``shadowcode``: the warm archive's ``mcp serve --http 127.0.0.1:0 --token-env NAME`` (the
  source entry when the archive is missing) over the in-process profile root (a temporary
  engine), with a fresh random token in ``NAME``;
* ``bare``: ``python -m bench.bare_http_server``, the ``mcp`` 2.3 SDK's stateless JSON
  Streamable HTTP app under uvicorn with one ``echo`` tool.

``conformance/shadowcode_conformance/node_probes/bench/http_load.mjs`` drives both alike: ``callers`` callers, each one
``tools/call`` POST at a time on a new connection (``shadow_status`` on ShadowCode, ``echo``
on the peer), the bearer token on both. The gateway answers 429 past 128 requests in any one
second (GW-07), so the client is paced to ``window_requests`` requests per ``window_ms``
sliding window for both servers; the pacing wait happens before a request's clock starts, and
the headline requests/s divides requests by the time during which at least one was in flight
(the paced wall-clock rate is recorded beside it). Rounds alternate which server goes first.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.driver import BenchError
from bench.process import ServerProcess
from bench.stats import percentile, spread
from bench.targets import ECHO_TOOL, IN_PROCESS_EXPECT_TEXT, STATUS_TOOL, Layout

__all__ = [
    "GATEWAY_CALLERS",
    "GATEWAY_PENDING_REASON",
    "GatewayOptions",
    "LOAD_CLIENT",
    "TOKEN_ENV",
    "gateway_figures",
    "pending_gateway_figures",
]

logger = logging.getLogger(__name__)

GATEWAY_CALLERS: Final = 8
"""Concurrent callers in the gateway figure."""

GATEWAY_PENDING_REASON: Final = "the gateway figure was not run (left out with --targets or --gateway-rounds 0)"
"""Why the gateway figures are null when the run leaves them out."""

LOAD_CLIENT: Final = Path("conformance/shadowcode_conformance/node_probes") / "bench" / "http_load.mjs"
"""The HTTP load client, relative to the repository root."""

TOKEN_ENV: Final = "SHADOWCODE_BENCH_HTTP_TOKEN"
"""The variable that carries the gateway's bearer token (to the gateway and the client only)."""

_READY_TIMEOUT_SECONDS: Final = 90.0
_KILL_WAIT_SECONDS: Final = 10.0
_ERROR_TAIL_CHARS: Final = 1500
_LATENCY_DECIMALS: Final = 4
_SIDES: Final = ("shadowcode", "bare")


@dataclass(frozen=True)
class GatewayOptions:
    """How the gateway figure is taken.

    Attributes:
        rounds: load rounds per server (each server once per round).
        requests: timed requests per round.
        warmup: untimed requests before each round's timed ones.
        callers: callers, each with one request in flight at a time.
        window_requests: requests sent per sliding window (0: no pacing, and the gateway
            then refuses requests past its per-second bound).
        window_ms: the window's length in milliseconds.
        timeout_seconds: deadline of one load run.
    """

    rounds: int
    requests: int
    warmup: int
    callers: int
    window_requests: int
    window_ms: int
    timeout_seconds: float


def pending_gateway_figures(reason: str, options: GatewayOptions | None = None) -> dict[str, Any]:
    """The gateway figures of a run that did not take them.

    Args:
        reason: why they are null.
        options: the options of the run, when known.

    Returns:
        The document of :func:`gateway_figures` with every figure null and ``reason`` set.
    """
    return {
        "callers": options.callers if options else GATEWAY_CALLERS,
        "shadowcode_rps": None,
        "shadowcode_p99_ms": None,
        "bare_rps": None,
        "bare_p99_ms": None,
        "reason": reason,
        "options": _options_doc(options),
        "servers": {},
    }


def _options_doc(options: GatewayOptions | None) -> dict[str, Any] | None:
    if options is None:
        return None
    return {
        "rounds": options.rounds,
        "requests": options.requests,
        "warmup": options.warmup,
        "callers": options.callers,
        "window_requests": options.window_requests,
        "window_ms": options.window_ms,
    }


def _load(
    repo: Path, node: str, url: str, tool: str, tool_args: dict[str, Any], expect: str | None,
    env: dict[str, str], options: GatewayOptions, side: str,
) -> dict[str, Any]:  # fmt: skip
    argv = [
        node, str(repo / LOAD_CLIENT), "--url", url, "--token-env", TOKEN_ENV,
        "--tool", tool, "--args", json.dumps(tool_args),
        "--requests", str(options.requests), "--warmup", str(options.warmup), "--callers", str(options.callers),
        "--window-requests", str(options.window_requests), "--window-ms", str(options.window_ms),
    ]  # fmt: skip
    if expect is not None:
        argv += ["--expect-text", expect]
    proc = subprocess.Popen(
        argv,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=options.timeout_seconds)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=_KILL_WAIT_SECONDS)
        raise BenchError(
            f"gateway {side}: the load client did not finish within {options.timeout_seconds:g} s", target=side
        ) from exc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=_KILL_WAIT_SECONDS)
    try:
        report = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict):
        detail = (err or out)[-_ERROR_TAIL_CHARS:]
        raise BenchError(f"gateway {side}: the load client exited {proc.returncode}: {detail}", target=side)
    if not report.get("ok"):
        raise BenchError(f"gateway {side}: {report.get('error')}", target=side)
    return report


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def values(key: str) -> list[float]:
        return [r[key] for r in runs if r.get(key) is not None]

    return {
        "requests_per_second": spread(values("requests_per_second")),
        "requests_per_second_wall": spread(values("requests_per_second_wall")),
        "p50_ms": spread(values("p50_ms")),
        "p99_ms": spread(values("p99_ms")),
    }


def _run_record(report: dict[str, Any]) -> dict[str, Any]:
    lat = report["latencies_ms"]
    return {
        "requests": report["requests"],
        "callers": report["callers"],
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "busy_ms": report["busy_ms"],
        "wall_ms": report["wall_ms"],
        "requests_per_second": report["requests_per_second"],
        "requests_per_second_wall": report["requests_per_second_wall"],
        "latencies_ms": [round(x, _LATENCY_DECIMALS) for x in lat],
    }


def _median(summary: dict[str, Any], key: str) -> float | None:
    s = summary.get(key)
    return s["median"] if s else None


def gateway_figures(
    repo: Path, node: str, layout: Layout, env: dict[str, str], options: GatewayOptions, work: Path
) -> dict[str, Any]:
    """Start the gateway and the bare SDK HTTP server, load both alike, stop both.

    Args:
        repo: repository root.
        node: the node executable.
        layout: paths of this run (the warm archive, its interpreter, the in-process profile root).
        env: the run's environment (both servers and the client get it, plus the token).
        options: counts and pacing.
        work: a folder for the servers' stderr files.

    Returns:
        ``{"callers": int, "shadowcode_rps": float | None, "shadowcode_p99_ms": float | None,
        "bare_rps": float | None, "bare_p99_ms": float | None, "reason": str | None,
        "options": {...}, "servers": {"shadowcode" | "bare": {"command": [str],
        "errors": [str], "rss_hwm_kib": int | None, "ready_ms": float | None,
        "requests_per_second" | "requests_per_second_wall" | "p50_ms" | "p99_ms": spread,
        "runs": [...]}}}``. Requests/s are busy-time rates (see the module docstring);
        ``reason`` says why a headline figure is null. Failures are recorded, never raised.
    """
    run_env = {**env, TOKEN_ENV: secrets.token_hex(32)}
    entry = [str(layout.pyz_python), str(layout.pyz)]
    if not layout.pyz.is_file():
        entry = [str(layout.venv_python), "-m", "shadowcode"]
    gateway_argv = [
        *entry, "--workspace", str(layout.workspace), "mcp", "serve", "--http", "127.0.0.1:0", "--token-env", TOKEN_ENV,
    ]  # fmt: skip
    bare_argv = [str(layout.venv_python), "-m", "bench.bare_http_server"]
    servers = {
        "shadowcode": ServerProcess(
            "gateway",
            gateway_argv,
            env={**run_env, "SHADOWCODE_HOME": str(layout.home), "SHIV_ROOT": str(layout.shiv_warm)},
            cwd=repo,
            stderr_path=work / "gateway.stderr",
            ready=r"shadowcode gateway ready: (http://\S+)",
            ready_timeout_seconds=_READY_TIMEOUT_SECONDS,
        ),
        "bare": ServerProcess(
            "bare http server",
            bare_argv,
            env=run_env,
            cwd=repo,
            stderr_path=work / "bare-http.stderr",
            ready=r"bare http ready: (http://\S+)",
            ready_timeout_seconds=_READY_TIMEOUT_SECONDS,
        ),
    }
    calls: dict[str, tuple[str, dict[str, Any], str | None]] = {
        "shadowcode": (STATUS_TOOL, {}, IN_PROCESS_EXPECT_TEXT),
        "bare": (ECHO_TOOL, {"message": "ping"}, None),
    }
    docs: dict[str, dict[str, Any]] = {
        side: {"command": layout.display(tuple(servers[side].argv)), "errors": [], "runs": [], "rss_hwm_kib": None,
               "ready_ms": None}
        for side in _SIDES
    }  # fmt: skip
    started: list[str] = []
    with ExitStack() as stack:
        for side in _SIDES:
            try:
                stack.enter_context(servers[side])
            except BenchError as exc:
                docs[side]["errors"].append(exc.message)
                logger.warning("%s", exc.message)
                continue
            started.append(side)
            docs[side]["ready_ms"] = (servers[side].ready_seconds or 0.0) * 1000
        for r in range(options.rounds):
            logger.info("gateway round %d/%d", r + 1, options.rounds)
            order = _rotated([s for s in _SIDES if s in started], r)
            for side in order:
                if docs[side]["errors"] and not docs[side]["runs"] and r > 0:
                    continue  # it failed in round one; one message is enough
                tool, args, expect = calls[side]
                url = servers[side].ready_value or ""
                try:
                    report = _load(repo, node, url, tool, args, expect, run_env, options, side)
                except BenchError as exc:
                    docs[side]["errors"].append(exc.message)
                    logger.warning("%s", exc.message)
                    continue
                docs[side]["runs"].append(_run_record(report))
        for side in started:
            docs[side]["rss_hwm_kib"] = servers[side].memory()["rss_hwm_kib"]
    for side in _SIDES:
        docs[side].update(_summary(docs[side]["runs"]))
    sc, bare = docs["shadowcode"], docs["bare"]
    figures = {
        "callers": options.callers,
        "shadowcode_rps": _median(sc, "requests_per_second"),
        "shadowcode_p99_ms": _median(sc, "p99_ms"),
        "bare_rps": _median(bare, "requests_per_second"),
        "bare_p99_ms": _median(bare, "p99_ms"),
        "reason": None,
        "options": _options_doc(options),
        "servers": docs,
    }
    failed = [f"{side}: {docs[side]['errors'][0][:300]}" for side in _SIDES if docs[side]["errors"]]
    if figures["shadowcode_rps"] is None or figures["bare_rps"] is None:
        figures["reason"] = "; ".join(failed) or "a gateway figure is missing"
    return figures


def _rotated(items: Sequence[str], by: int) -> list[str]:
    if not items:
        return []
    k = by % len(items)
    return [*items[k:], *items[:k]]
