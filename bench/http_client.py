"""The HTTP client figure: ``tools/call`` p50 and p99 through ShadowCode's Streamable HTTP client.

One ``@modelcontextprotocol/server-everything`` process runs in its Streamable HTTP mode
(``PORT=N node .../dist/index.js streamableHttp``, sessions and SSE replies) on 127.0.0.1
for the whole figure. Two clients call its ``echo`` tool alike, one connection each per round:

* ``shadowcode``: ``python -m bench.http_client_driver`` (ShadowCode's client: the
  ``server/discover`` probe, the fallback to ``initialize``, every limit a Build task has);
* ``ts``: ``node conformance/shadowcode_conformance/node_probes/bench/http_client.mjs`` (the TypeScript SDK 1.x client,
  ``StreamableHTTPClientTransport``).

Per round (``rounds``, alternating which client goes first) each client makes ``warmup``
untimed calls, then ``calls`` timed ones, one at a time, paced to ``window_requests`` calls per
``window_ms`` sliding window for both (ShadowCode's client accepts at most 128 SSE events per
connection in any one second, CLI-17; the wait happens before a call's clock starts). A
call's latency runs from just before it is sent to its result; p50 and p99 by nearest rank
per round, the median over rounds reported. Ratios are reported, never asserted.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.driver import BenchError
from bench.process import ServerProcess
from bench.stats import percentile, spread
from bench.targets import ECHO_TOOL, Layout

__all__ = [
    "HTTP_CLIENT_NAME",
    "HTTP_CLIENT_PENDING_REASON",
    "HttpClientOptions",
    "http_client_figures",
    "pending_http_client_figures",
]

logger = logging.getLogger(__name__)

HTTP_CLIENT_NAME: Final = "http_client"
"""The name that selects this figure in ``--targets``."""

HTTP_CLIENT_PENDING_REASON: Final = "the HTTP client figure was not run (left out with --targets or --client-rounds 0)"
"""Why the figures are null when the run leaves them out."""

TS_CLIENT: Final = Path("conformance/shadowcode_conformance/node_probes") / "bench" / "http_client.mjs"
"""The TypeScript SDK client, relative to the repository root."""

EVERYTHING: Final = Path(
    "conformance/shadowcode_conformance/node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
"""server-everything's entry, relative to the repository root."""

_READY_TIMEOUT_SECONDS: Final = 90.0
_KILL_WAIT_SECONDS: Final = 10.0
_ERROR_TAIL_CHARS: Final = 1500
_LATENCY_DECIMALS: Final = 4
_SIDES: Final = ("shadowcode", "ts")
_ARGS: Final = {"message": "ping"}


@dataclass(frozen=True)
class HttpClientOptions:
    """How the HTTP client figure is taken.

    Attributes:
        rounds: rounds (each client once per round, one connection each).
        calls: timed sequential calls per round.
        warmup: untimed calls before them, on the same connection.
        window_requests: calls per pacing window (0: no pacing).
        window_ms: the window's length in milliseconds.
        timeout_seconds: deadline of one client run.
    """

    rounds: int
    calls: int
    warmup: int
    window_requests: int
    window_ms: int
    timeout_seconds: float


def _options_doc(options: HttpClientOptions | None) -> dict[str, Any] | None:
    if options is None:
        return None
    return {
        "rounds": options.rounds,
        "calls": options.calls,
        "warmup": options.warmup,
        "window_requests": options.window_requests,
        "window_ms": options.window_ms,
    }


def pending_http_client_figures(reason: str, options: HttpClientOptions | None = None) -> dict[str, Any]:
    """The figures of a run that did not take them: every figure null, ``reason`` set."""
    return {
        "shadowcode_p50_ms": None,
        "shadowcode_p99_ms": None,
        "ts_p50_ms": None,
        "ts_p99_ms": None,
        "reason": reason,
        "options": _options_doc(options),
        "server": None,
        "clients": {},
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client_argv(side: str, repo: Path, layout: Layout, url: str, options: HttpClientOptions) -> list[str]:
    common = [
        "--url", url, "--tool", ECHO_TOOL, "--args", json.dumps(_ARGS), "--expect-text", _ARGS["message"],
        "--calls", str(options.calls), "--warmup", str(options.warmup),
        "--window-requests", str(options.window_requests), "--window-ms", str(options.window_ms),
    ]  # fmt: skip
    if side == "shadowcode":
        return [str(layout.venv_python), "-m", "bench.http_client_driver", *common]
    return [layout.node, str(repo / TS_CLIENT), *common]


def _run_client(argv: list[str], repo: Path, env: dict[str, str], timeout: float, side: str) -> dict[str, Any]:
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
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=_KILL_WAIT_SECONDS)
        raise BenchError(f"http client {side}: did not finish within {timeout:g} s", target=side) from exc
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
        raise BenchError(f"http client {side}: exited {proc.returncode}: {detail}", target=side)
    if not report.get("ok") or not report.get("latencies_ms"):
        raise BenchError(f"http client {side}: {report.get('error') or 'no latencies'}", target=side)
    return report


def _run_record(report: dict[str, Any]) -> dict[str, Any]:
    lat = report["latencies_ms"]
    return {
        "calls": len(lat),
        "protocol_version": report.get("protocol_version"),
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "latencies_ms": [round(x, _LATENCY_DECIMALS) for x in lat],
    }


def http_client_figures(
    repo: Path, layout: Layout, env: dict[str, str], options: HttpClientOptions, work: Path
) -> dict[str, Any]:
    """Start server-everything over Streamable HTTP, run both clients against it, stop it.

    Args:
        repo: repository root.
        layout: paths of this run (the virtualenv's python, node).
        env: the run's environment (the server and both clients get it).
        options: counts and pacing.
        work: a folder for the server's stderr.

    Returns:
        ``{"shadowcode_p50_ms", "shadowcode_p99_ms", "ts_p50_ms", "ts_p99_ms": float | None
        (medians over rounds), "reason": str | None, "options": {...}, "server": {"command",
        "ready_ms", "errors"}, "clients": {"shadowcode" | "ts": {"command", "errors",
        "p50_ms" | "p99_ms": spread, "runs": [...]}}}``. Failures are recorded, never raised.
    """
    port = _free_port()
    entry = repo / EVERYTHING
    server_argv = [layout.node, str(entry), "streamableHttp"]
    url = f"http://127.0.0.1:{port}/mcp"
    clients: dict[str, dict[str, Any]] = {
        side: {"command": layout.display(tuple(_client_argv(side, repo, layout, url, options))), "errors": [],
               "runs": []}
        for side in _SIDES
    }  # fmt: skip
    server_doc: dict[str, Any] = {"command": layout.display(tuple(server_argv)), "ready_ms": None, "errors": []}
    if not entry.is_file():
        server_doc["errors"].append(f"{EVERYTHING} is missing; run `npm ci` in {EVERYTHING.parents[4]}")
    else:
        server = ServerProcess(
            "server-everything (streamableHttp)",
            server_argv,
            env={**env, "PORT": str(port)},
            cwd=repo,
            stderr_path=work / "everything-http.stderr",
            ready=r"listening on port (\d+)",
            ready_timeout_seconds=_READY_TIMEOUT_SECONDS,
        )
        try:
            with server:
                server_doc["ready_ms"] = (server.ready_seconds or 0.0) * 1000
                for r in range(options.rounds):
                    logger.info("http client round %d/%d", r + 1, options.rounds)
                    for side in _SIDES[r % 2 :] + _SIDES[: r % 2]:
                        argv = _client_argv(side, repo, layout, url, options)
                        try:
                            report = _run_client(argv, repo, env, options.timeout_seconds, side)
                        except BenchError as exc:
                            clients[side]["errors"].append(exc.message)
                            logger.warning("%s", exc.message)
                            continue
                        clients[side]["runs"].append(_run_record(report))
        except BenchError as exc:
            server_doc["errors"].append(exc.message)
            logger.warning("%s", exc.message)
    for doc in clients.values():
        doc["p50_ms"] = spread([run["p50_ms"] for run in doc["runs"]])
        doc["p99_ms"] = spread([run["p99_ms"] for run in doc["runs"]])
    figures: dict[str, Any] = {"reason": None, "options": _options_doc(options), "server": server_doc}
    for side in _SIDES:
        for key in ("p50_ms", "p99_ms"):
            s = clients[side][key]
            figures[f"{side}_{key}"] = s["median"] if s else None
    figures["clients"] = clients
    failed = [f"server: {m[:300]}" for m in server_doc["errors"]]
    failed += [f"{side}: {clients[side]['errors'][0][:300]}" for side in _SIDES if clients[side]["errors"]]
    if any(figures[f"{side}_p50_ms"] is None for side in _SIDES):
        figures["reason"] = "; ".join(failed) or "an HTTP client figure is missing"
    return figures


if __name__ == "__main__":
    sys.exit("run `python -m bench --targets http_client` instead")
