"""Turns raw samples into the results document, its ratios, and the printed table.

Every ratio is ShadowCode's figure over a peer's figure from the same run (lower is better
except for throughput and requests/s); a ratio is null when either side is missing, and
``ratio_reasons`` then says why. Ratios are reported, never asserted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.runner import Samples
from bench.stats import percentile, ratio, spread
from bench.targets import Target

__all__ = [
    "ATTACHED_TARGET",
    "PRIMARY_TARGET",
    "PYZ_ONE_INTERPRETER_BYTES",
    "REQUIRED_RATIOS",
    "cold_first_call_figure",
    "compute_ratios",
    "render_table",
    "summarize_target",
    "temporary_engine_figure",
    "write_results",
]

PRIMARY_TARGET: Final = "shadowcode_pyz_warm"
"""The ShadowCode variant the headline ratios use: the archive hosts run, cache warm."""

ATTACHED_TARGET: Final = "shadowcode_pyz_attached"
"""The variant the attached ratios use: the warm archive relaying into the running engine."""

PYZ_ONE_INTERPRETER_BYTES: Final = 12_662_861
"""Bytes of ``shadowcode.pyz`` when it carried compiled modules for one interpreter (CPython 3.11,
x86_64) only; the size line reports the archive beside it."""

REQUIRED_RATIOS: Final = (
    "startup_ratio_vs_bare",
    "startup_attached_ratio_vs_ts",
    "call_p50_ratio_vs_bare",
    "rss_ratio_vs_bare",
    "rss_attached_ratio_vs_bare",
    "gateway_rps_ratio_vs_bare",
    "startup_ratio_vs_floor",
    "startup_cold_ratio_vs_floor",
    "startup_attached_ratio_vs_floor",
    "rss_front_ratio_vs_bare",
    "rss_front_attached_ratio_vs_bare",
    "first_call_ratio_vs_ts",
)
"""Ratio keys every results document holds (null when not measurable)."""

COLD_FIRST_CALL_TARGET_MS: Final = 2000.0
"""Issue 32's bound on the cold first call: spawn → first tool result under a new HOME, warm disk."""

COLD_TARGET: Final = "shadowcode_pyz_cold"
"""The variant the empty-cache ratios use: the archive under a new HOME (empty shiv cache, new profile) each spawn."""

FLOOR_TARGET: Final = "floor"
"""The no-SDK floor server: the start-up figure issue 15's targets are stated against."""

_LATENCY_DECIMALS: Final = 4


def _field(records: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [r[key] for r in records if r.get(key) is not None]


def _summarize_calls(reports: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    if not reports:
        return None
    runs = []
    for rep in reports:
        lat = rep["sequential_latencies_ms"]
        thr = rep["throughput"]
        runs.append(
            {
                "calls": len(lat),
                "p50_ms": percentile(lat, 50),
                "p99_ms": percentile(lat, 99),
                "mean_ms": sum(lat) / len(lat),
                "sequential_wall_ms": rep["sequential_wall_ms"],
                "first_call_ms": rep.get("first_call_ms"),
                "spawn_to_first_call_ms": rep.get("spawn_to_first_call_ms"),
                "inflight": thr["inflight"],
                "burst_calls": thr["calls"],
                "busy_ms": thr["busy_ms"],
                "calls_per_second": thr["calls_per_second"],
                "rss_hwm_kib": rep["rss_hwm_kib"],
                "tree_rss_hwm_kib": rep["tree_rss_hwm_kib"],
                "children_rss_hwm_kib": _children_rss(rep),
                "descendants": rep["descendants"],
                "latencies_ms": [round(x, _LATENCY_DECIMALS) for x in lat],
            }
        )
    return {
        "p50_ms": spread(_field(runs, "p50_ms")),
        "p99_ms": spread(_field(runs, "p99_ms")),
        "calls_per_second": spread(_field(runs, "calls_per_second")),
        "spawn_to_first_call_ms": spread(_field(runs, "spawn_to_first_call_ms")),
        "rss_hwm_kib": spread(_field(runs, "rss_hwm_kib")),
        "tree_rss_hwm_kib": spread(_field(runs, "tree_rss_hwm_kib")),
        "children_rss_hwm_kib": spread(_field(runs, "children_rss_hwm_kib")),
        "runs": runs,
    }


def _children_rss(report: dict[str, Any]) -> int | None:
    """KiB of peak RSS of the spawned process's descendants (the front's child), or None without any."""
    own, tree = report.get("rss_hwm_kib"), report.get("tree_rss_hwm_kib")
    if not report.get("descendants") or own is None or tree is None:
        return None
    return tree - own


def summarize_target(target: Target, samples: Samples | None, display: list[str]) -> dict[str, Any]:
    """The results entry of one target.

    Args:
        target: the target.
        samples: what was measured, or None when the target was not run.
        display: its command with machine paths replaced by placeholders.

    Returns:
        ``{"label", "command", "tool", "unavailable": str | None, "errors": [str],
        "startup": {...} | None, "calls": {...} | None}``. ``startup`` holds
        ``spawn_to_tools_list_ms`` / ``spawn_to_initialize_ms`` / ``spawn_to_first_call_ms`` (the
        checking call's answer; null without one) / ``rss_hwm_kib`` spreads (median, min, max, n)
        and ``samples``; ``calls`` holds ``p50_ms``, ``p99_ms``,
        ``calls_per_second``, ``spawn_to_first_call_ms`` (spawn → the answer of the untimed
        first call, which waits for a server still starting behind the front),
        ``rss_hwm_kib`` (the spawned process alone: the front or the
        relay), ``tree_rss_hwm_kib`` (it and its descendants) and ``children_rss_hwm_kib``
        (the descendants alone: the front's temporary engine; None without any) spreads over
        call rounds and the raw ``runs`` (latencies included).
    """
    entry: dict[str, Any] = {
        "label": target.label,
        "command": display,
        "tool": target.tool,
        "unavailable": target.unavailable,
        "errors": [] if samples is None else samples.errors,
        "startup": None,
        "calls": None,
    }
    if samples is None:
        return entry
    if samples.startup:
        entry["startup"] = {
            "spawn_to_tools_list_ms": spread(_field(samples.startup, "spawn_to_tools_list_ms")),
            "spawn_to_initialize_ms": spread(_field(samples.startup, "spawn_to_initialize_ms")),
            "spawn_to_first_call_ms": spread(_field(samples.startup, "spawn_to_first_call_ms")),
            "rss_hwm_kib": spread(_field(samples.startup, "rss_hwm_kib")),
            "tree_rss_hwm_kib": spread(_field(samples.startup, "tree_rss_hwm_kib")),
            "samples": samples.startup,
        }
    entry["calls"] = _summarize_calls(samples.calls)
    return entry


def _median(entry: dict[str, Any] | None, *path: str) -> float | None:
    node: Any = entry
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node.get("median") if isinstance(node, dict) else None


def _own_rss(entry: dict[str, Any] | None) -> float | None:
    """Peak RSS (KiB) of the spawned process alone: after the call rounds, else after start-up."""
    return _median(entry, "calls", "rss_hwm_kib") or _median(entry, "startup", "rss_hwm_kib")


def _session_rss(entry: dict[str, Any] | None) -> float | None:
    """Peak RSS (KiB) of the whole session after the call rounds: the process and its children."""
    return _median(entry, "calls", "tree_rss_hwm_kib") or _median(entry, "calls", "rss_hwm_kib")


def _why(targets: dict[str, dict[str, Any]], *names: str) -> str:
    for name in names:
        entry = targets.get(name)
        if entry is None:
            return f"{name} was not run (left out with --targets)"
        if entry["unavailable"]:
            return f"{name}: {entry['unavailable']}"
        if entry["errors"]:
            return f"{name} failed: {entry['errors'][0][:300]}"
    return "a figure is missing"


def compute_ratios(
    targets: dict[str, dict[str, Any]], gateway: dict[str, Any], http_client: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ratios of this run and the reason for each null one.

    Args:
        targets: results entries by name (see :func:`summarize_target`).
        gateway: the gateway figures (see ``bench.gateway.gateway_figures``).
        http_client: the HTTP client figures (see ``bench.http_client.http_client_figures``);
            None when the run did not take them.

    Returns:
        ``(ratios, reasons)``: ``ratios`` maps each key of :data:`REQUIRED_RATIOS` and a
        few more (``startup_ratio_vs_bare_source``, ``startup_cold_ratio_vs_bare``,
        ``startup_ratio_vs_ts``, ``call_p99_ratio_vs_bare``, ``throughput_ratio_vs_bare``,
        ``startup_attached_source_ratio_vs_ts``, ``startup_attached_ratio_vs_bare``,
        ``call_p50_attached_ratio_vs_bare``, ``call_p99_attached_ratio_vs_bare``,
        ``gateway_p99_ratio_vs_bare``, ``http_client_p50_ratio_vs_ts``,
        ``http_client_p99_ratio_vs_ts``, ``cold_first_call_ratio_vs_ts``) to a float or None;
        ``reasons`` maps each None key to a sentence. The ``*_vs_floor`` ratios are spawn →
        first ``tools/list`` over the no-SDK floor's (issue 15). The ``rss`` ratios use the
        peak RSS after the call rounds (after start-up for a row without calls): ``rss_ratio_vs_bare`` is the whole
        in-process session (the stdio front and its temporary engine, summed);
        ``rss_front_ratio_vs_bare`` and ``rss_front_attached_ratio_vs_bare`` the spawned
        process alone (the front without an engine, the relay with one: the per-session
        cost); ``rss_attached_ratio_vs_bare`` is the relay as well (kept from issue 7). The
        temporary engine's own figure is :func:`temporary_engine_figure`.
        ``first_call_ratio_vs_ts`` is spawn → first tool result of the warm archive without an
        engine over server-everything's (issue 32; both from the call rounds), and
        ``cold_first_call_ratio_vs_ts`` the same for the archive under a new HOME (from its
        start-up spawns, see :func:`cold_first_call_figure`).
    """
    t = targets.get
    p = PRIMARY_TARGET
    a = ATTACHED_TARGET
    c = COLD_TARGET
    f = FLOOR_TARGET
    spawn = ("startup", "spawn_to_tools_list_ms")
    floor_spawn = _median(t(f), *spawn)
    specs: dict[str, tuple[float | None, float | None, tuple[str, ...]]] = {
        "startup_ratio_vs_bare": (_median(t(p), *spawn), _median(t("bare"), *spawn), (p, "bare")),
        "startup_attached_ratio_vs_ts": (
            _median(t("shadowcode_pyz_attached"), *spawn),
            _median(t("everything"), *spawn),
            ("shadowcode_pyz_attached", "everything"),
        ),
        "call_p50_ratio_vs_bare": (
            _median(t(p), "calls", "p50_ms"),
            _median(t("bare"), "calls", "p50_ms"),
            (p, "bare"),
        ),
        "rss_ratio_vs_bare": (_session_rss(t(p)), _median(t("bare"), "calls", "rss_hwm_kib"), (p, "bare")),
        "rss_attached_ratio_vs_bare": (
            _median(t(a), "calls", "rss_hwm_kib"),
            _median(t("bare"), "calls", "rss_hwm_kib"),
            (a, "bare"),
        ),
        "startup_ratio_vs_bare_source": (
            _median(t("shadowcode_source"), *spawn),
            _median(t("bare"), *spawn),
            ("shadowcode_source", "bare"),
        ),
        "startup_cold_ratio_vs_bare": (
            _median(t("shadowcode_pyz_cold"), *spawn),
            _median(t("bare"), *spawn),
            ("shadowcode_pyz_cold", "bare"),
        ),
        "startup_ratio_vs_ts": (_median(t(p), *spawn), _median(t("everything"), *spawn), (p, "everything")),
        "call_p99_ratio_vs_bare": (
            _median(t(p), "calls", "p99_ms"),
            _median(t("bare"), "calls", "p99_ms"),
            (p, "bare"),
        ),
        "throughput_ratio_vs_bare": (
            _median(t(p), "calls", "calls_per_second"),
            _median(t("bare"), "calls", "calls_per_second"),
            (p, "bare"),
        ),
        "startup_attached_source_ratio_vs_ts": (
            _median(t("shadowcode_source_attached"), *spawn),
            _median(t("everything"), *spawn),
            ("shadowcode_source_attached", "everything"),
        ),
        "startup_attached_ratio_vs_bare": (_median(t(a), *spawn), _median(t("bare"), *spawn), (a, "bare")),
        "call_p50_attached_ratio_vs_bare": (
            _median(t(a), "calls", "p50_ms"),
            _median(t("bare"), "calls", "p50_ms"),
            (a, "bare"),
        ),
        "call_p99_attached_ratio_vs_bare": (
            _median(t(a), "calls", "p99_ms"),
            _median(t("bare"), "calls", "p99_ms"),
            (a, "bare"),
        ),
        "startup_ratio_vs_floor": (_median(t(p), *spawn), floor_spawn, (p, f)),
        "startup_cold_ratio_vs_floor": (_median(t(c), *spawn), floor_spawn, (c, f)),
        "startup_attached_ratio_vs_floor": (_median(t(a), *spawn), floor_spawn, (a, f)),
        "rss_front_ratio_vs_bare": (_own_rss(t(p)), _own_rss(t("bare")), (p, "bare")),
        "rss_front_attached_ratio_vs_bare": (_own_rss(t(a)), _own_rss(t("bare")), (a, "bare")),
        "first_call_ratio_vs_ts": (
            _median(t(p), "calls", "spawn_to_first_call_ms"),
            _median(t("everything"), "calls", "spawn_to_first_call_ms"),
            (p, "everything"),
        ),
        "cold_first_call_ratio_vs_ts": (
            _median(t(c), "startup", "spawn_to_first_call_ms"),
            _median(t("everything"), "calls", "spawn_to_first_call_ms"),
            (c, "everything"),
        ),
    }
    ratios: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for key, (num, den, names) in specs.items():
        ratios[key] = ratio(num, den)
        if ratios[key] is None:
            reasons[key] = _why(targets, *names)
    for key, num, den in (
        ("gateway_rps_ratio_vs_bare", gateway["shadowcode_rps"], gateway["bare_rps"]),
        ("gateway_p99_ratio_vs_bare", gateway["shadowcode_p99_ms"], gateway["bare_p99_ms"]),
    ):
        ratios[key] = ratio(num, den)
        if ratios[key] is None:
            reasons[key] = gateway["reason"] or "a gateway figure is missing"
    client = http_client or {}
    for key, side_key in (("http_client_p50_ratio_vs_ts", "p50_ms"), ("http_client_p99_ratio_vs_ts", "p99_ms")):
        ratios[key] = ratio(client.get(f"shadowcode_{side_key}"), client.get(f"ts_{side_key}"))
        if ratios[key] is None:
            reasons[key] = client.get("reason") or "the HTTP client figure was not run"
    return ratios, reasons


def temporary_engine_figure(targets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The temporary engine of the warm archive's sessions: the stdio front's child, on its own.

    Without a headless engine, ``mcp serve`` is the stdio front (the process the driver
    spawned and whose RSS the ``rss_front`` ratios use) and the full server with its temporary
    engine runs as its child. This is that child's peak RSS, read with the front's after the
    call rounds (the descendants' ``VmHWM`` summed).

    Args:
        targets: results entries by name (see :func:`summarize_target`).

    Returns:
        ``{"target", "rss_hwm_kib": spread | None, "front_rss_hwm_kib": spread | None,
        "reason": str | None}``; ``reason`` says why ``rss_hwm_kib`` is null.
    """
    entry = targets.get(PRIMARY_TARGET)
    calls = (entry or {}).get("calls") or {}
    figure: dict[str, Any] = {
        "target": PRIMARY_TARGET,
        "rss_hwm_kib": calls.get("children_rss_hwm_kib"),
        "front_rss_hwm_kib": calls.get("rss_hwm_kib"),
        "reason": None,
    }
    if figure["rss_hwm_kib"] is None:
        if not calls:
            figure["reason"] = _why(targets, PRIMARY_TARGET) + " (no call figures)"
        else:
            figure["reason"] = "the spawned process had no child: the stdio front did not run"
    return figure


def cold_first_call_figure(targets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The cold first call (issue 32): spawn → first tool result of the archive under a new HOME.

    Each start-up spawn of the cold row runs with ``HOME`` and ``SHADOWCODE_HOME`` at a new
    empty folder (no shiv cache, no profile), and its checking ``tools/call`` waits for the
    unpack and the full server behind the front; the page cache is warm (the same archive ran
    before).

    Args:
        targets: results entries by name (see :func:`summarize_target`).

    Returns:
        ``{"target", "spawn_to_first_call_ms": spread | None, "bound_ms", "reason": str | None}``;
        ``reason`` says why the spread is null.
    """
    spawns = _median(targets.get(COLD_TARGET), "startup", "spawn_to_first_call_ms")
    figure: dict[str, Any] = {
        "target": COLD_TARGET,
        "spawn_to_first_call_ms": ((targets.get(COLD_TARGET) or {}).get("startup") or {}).get("spawn_to_first_call_ms"),
        "bound_ms": COLD_FIRST_CALL_TARGET_MS,
        "reason": None,
    }
    if spawns is None:
        figure["reason"] = _why(targets, COLD_TARGET) + " (no timed cold spawn: --cold-rounds 0?)"
    return figure


def _fmt_spread(s: dict[str, Any] | None, scale: float = 1.0, digits: int = 0) -> str:
    if not s:
        return "null"
    med, lo, hi = (s[k] / scale for k in ("median", "min", "max"))
    return f"{med:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def render_table(results: dict[str, Any]) -> str:
    """The results as a fixed-width text table, the ratios and the notes, for a terminal.

    Args:
        results: the document written by :func:`write_results`.

    Returns:
        Lines joined with newlines, ending with a newline.
    """
    header = (
        "server",
        "spawn->tools/list ms",
        "spawn->1st call ms",
        "call p50 ms",
        "call p99 ms",
        "calls/s (8 in flight)",
        "peak RSS MiB",
    )
    rows = [header]
    for entry in results["targets"].values():
        startup, calls = entry["startup"], entry["calls"]
        rss = (calls or {}).get("rss_hwm_kib") or (startup or {}).get("rss_hwm_kib")
        if entry["unavailable"]:
            rows.append((entry["label"], "null (unavailable)", "-", "-", "-", "-", "-"))
            continue
        rows.append(
            (
                entry["label"],
                _fmt_spread((startup or {}).get("spawn_to_tools_list_ms")),
                _fmt_spread(calls.get("spawn_to_first_call_ms"))
                if calls
                else _fmt_spread(startup.get("spawn_to_first_call_ms"))
                if startup and startup.get("spawn_to_first_call_ms")
                else "-",
                _fmt_spread((calls or {}).get("p50_ms"), digits=3) if calls else "-",
                _fmt_spread((calls or {}).get("p99_ms"), digits=3) if calls else "-",
                _fmt_spread((calls or {}).get("calls_per_second")) if calls else "-",
                _fmt_spread(rss, scale=1024, digits=1),
            )
        )
    lines = _aligned(rows)
    lines.append("")
    lines.append(
        "median (min-max) of repeated runs; RSS is VmHWM of the spawned process (the front or the relay for"
        " ShadowCode) after the call rounds (after start-up otherwise); spawn->1st call is spawn to the answer"
        " of the call round's first, untimed tools/call"
    )
    lines.append(_cold_first_call_line(results.get("cold_first_call")))
    lines.append(_engine_line(results.get("engine")))
    lines.append(_temporary_engine_line(results.get("temporary_engine")))
    size = results["pyz"]["size_bytes"]
    before = f"one-interpreter build before: {PYZ_ONE_INTERPRETER_BYTES / (1024 * 1024):.1f} MiB"
    lines.append(
        f"shadowcode.pyz: {size / (1024 * 1024):.1f} MiB ({size} bytes; {before})"
        if size
        else "shadowcode.pyz: missing"
    )
    lines.append("")
    lines += _gateway_lines(results["gateway"])
    lines.append("")
    if results.get("http_client"):
        lines += _http_client_lines(results["http_client"])
        lines.append("")
    lines.append("ratios (ShadowCode / peer, same run; reported, not asserted):")
    for key, value in results["ratios"].items():
        shown = f"{value:.3f}" if value is not None else f"null  ({results['ratio_reasons'][key]})"
        lines.append(f"  {key:36} {shown}")
    for name, entry in results["targets"].items():
        if entry["unavailable"]:
            lines.append(f"unavailable [{name}]: {entry['unavailable']}")
        for message in entry["errors"][:3]:
            lines.append(f"error [{name}]: {message[:400]}")
    return "\n".join(lines) + "\n"


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _cold_first_call_line(figure: dict[str, Any] | None) -> str:
    title = "cold first call, new HOME (shadowcode.pyz, spawn -> first tool result, empty cache and profile)"
    if not figure or not figure.get("spawn_to_first_call_ms"):
        return f"{title}: null ({(figure or {}).get('reason') or 'not measured'})"
    shown = _fmt_spread(figure["spawn_to_first_call_ms"])
    return f"{title}: {shown} ms (issue 32's bound: {figure['bound_ms']:.0f} ms)"


def _engine_line(engine: dict[str, Any] | None) -> str:
    if not engine or not engine.get("started"):
        reason = (engine or {}).get("reason") or "not needed by the selected targets"
        return f"headless engine (attached rows): not running ({reason})"
    end = (engine.get("after") or {}).get("rss_hwm_kib")
    ready = (engine.get("ready") or {}).get("rss_kib")
    shown = f"{end / 1024:.1f} MiB peak RSS by the end" if end else "peak RSS unreadable"
    if ready:
        shown += f" ({ready / 1024:.1f} MiB resident when ready)"
    return f"headless engine (attached rows, shared by every session): {shown}, ready in {engine['ready_ms']:.0f} ms"


def _temporary_engine_line(figure: dict[str, Any] | None) -> str:
    title = "temporary engine (the stdio front's child, warm archive, no headless engine)"
    if not figure or figure.get("rss_hwm_kib") is None:
        return f"{title}: null ({(figure or {}).get('reason') or 'not measured'})"
    front = figure.get("front_rss_hwm_kib")
    shown = _fmt_spread(figure["rss_hwm_kib"], scale=1024, digits=1)
    beside = f"; the front itself {_fmt_spread(front, scale=1024, digits=1)} MiB" if front else ""
    return f"{title}: {shown} MiB peak RSS after the call rounds{beside}"


def _gateway_lines(gw: dict[str, Any]) -> list[str]:
    opts = gw.get("options") or {}
    title = f"HTTP gateway, {gw['callers']} callers, one tools/call POST per connection"
    if opts.get("window_requests"):
        title += f", paced to {opts['window_requests']} requests per {opts['window_ms']} ms window"
    servers = gw.get("servers") or {}
    if not servers:
        return [f"{title}: null ({gw['reason']})"]
    labels = {"shadowcode": "shadowcode.pyz mcp serve --http", "bare": "bare mcp 2.3 SDK HTTP (uvicorn)"}
    rows = [("server", "requests/s (busy time)", "p50 ms", "p99 ms", "peak RSS MiB")]
    for side, doc in servers.items():
        rss = doc.get("rss_hwm_kib")
        rows.append(
            (
                labels.get(side, side),
                _fmt_spread(doc.get("requests_per_second")),
                _fmt_spread(doc.get("p50_ms"), digits=3),
                _fmt_spread(doc.get("p99_ms"), digits=3),
                f"{rss / 1024:.1f}" if rss else "null",
            )
        )
    lines = [title + ":", *_aligned(rows)]
    for side, doc in servers.items():
        for message in doc.get("errors", [])[:3]:
            lines.append(f"error [gateway {side}]: {message[:400]}")
    return lines


def _http_client_lines(doc: dict[str, Any]) -> list[str]:
    opts = doc.get("options") or {}
    title = "HTTP client, sequential tools/call (echo) to server-everything over Streamable HTTP"
    if opts.get("window_requests"):
        title += f", paced to {opts['window_requests']} calls per {opts['window_ms']} ms window"
    clients = doc.get("clients") or {}
    if not clients:
        return [f"{title}: null ({doc['reason']})"]
    labels = {"shadowcode": "shadowcode HTTP client", "ts": "TypeScript SDK 1.x client"}
    rows = [("client", "p50 ms", "p99 ms", "protocol")]
    for side, entry in clients.items():
        versions = sorted({str(r.get("protocol_version")) for r in entry.get("runs", [])}) or ["-"]
        rows.append(
            (
                labels.get(side, side),
                _fmt_spread(entry.get("p50_ms"), digits=3),
                _fmt_spread(entry.get("p99_ms"), digits=3),
                ", ".join(versions),
            )
        )
    lines = [title + ":", *_aligned(rows)]
    for message in ((doc.get("server") or {}).get("errors") or [])[:3]:
        lines.append(f"error [http client server]: {message[:400]}")
    for side, entry in clients.items():
        for message in entry.get("errors", [])[:3]:
            lines.append(f"error [http client {side}]: {message[:400]}")
    return lines


def write_results(path: Path, results: dict[str, Any]) -> None:
    """Write ``results`` as indented UTF-8 JSON, replacing ``path`` atomically.

    Args:
        path: target file; its folder is created when missing.
        results: a JSON-serializable document.

    Raises:
        OSError: the file could not be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
