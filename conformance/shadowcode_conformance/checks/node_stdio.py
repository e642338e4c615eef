"""The official TypeScript SDK clients (1.x and 2.x) against the target over stdio (CONF-02).

The project is trusted at level ``workspace`` first, then each probe in
``node_probes/probes/`` runs the target as ``<target> --workspace P mcp serve --allow-write``
and prints one JSON document::

    {"probe", "sdk", "sdk_version", "transport", "protocol_version", "ok",
     "checks": [{"name", "covers", "ok", "detail"}]}

Each inner check becomes a report check named ``<probe>:<name>`` with the probe's covers;
the negotiated revision is recorded under the probe's name. Without ``node`` or without
``node_probes/node_modules`` the probe check fails and says so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, cast

from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import Completed, tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "find_probe",
    "parse_probe_output",
    "probe_document",
    "probe_sdk1",
    "probe_sdk2",
    "probe_verdict",
    "trusted_probe",
]

_PROBE_MARGIN_SECONDS = 10.0


def find_probe(ctx: Context, probe: str) -> tuple[str, Path] | CheckResult:
    """``(node, script)`` for ``node_probes/probes/<probe>.mjs``, or a failed "skipped" result (CONF-02).

    The result names what is missing: ``node`` on the check's PATH, ``node_probes/node_modules``
    (``npm ci`` was not run), or the probe script itself.
    """
    node = shutil.which("node", path=ctx.env.get("PATH"))
    probes_dir = ctx.repo_root / "node_probes"
    script = probes_dir / "probes" / f"{probe}.mjs"
    if node is None:
        return CheckResult(False, "skipped: node is not on PATH")
    if not (probes_dir / "node_modules").is_dir():
        return CheckResult(False, "skipped: node_probes/node_modules is missing (run npm ci in node_probes)")
    if not script.is_file():
        return CheckResult(False, f"skipped: probe script node_probes/probes/{probe}.mjs is missing")
    return node, script


async def trusted_probe(ctx: Context, probe: str) -> tuple[str, Path] | CheckResult:
    """:func:`find_probe`, then the project trusted at ``workspace``; or a failed result saying which failed."""
    found = find_probe(ctx, probe)
    if isinstance(found, CheckResult):
        return found
    trusted = await ctx.trust("workspace")
    if trusted.returncode != 0:
        return CheckResult(False, f"trusting the project failed (exit {trusted.returncode}): {tail(trusted.stderr)}")
    return found


def parse_probe_output(stdout: bytes, probe: str) -> tuple[dict[str, Any] | None, list[SubResult], str]:
    """Read a probe's JSON document into sub-results (CONF-02).

    Args:
        stdout: everything the probe printed.
        probe: fallback probe name when the document has none.

    Returns:
        ``(document or None, sub-results named "<probe>:<name>", problem text or "")``.
    """
    try:
        found = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, [], f"probe output is not one JSON document: {tail(stdout, 200)!r}"
    doc = cast("dict[str, Any]", found) if isinstance(found, dict) else None
    checks: object = doc.get("checks") if doc is not None else None
    if doc is None or not isinstance(checks, list):
        return None, [], "probe output lacks a 'checks' list"
    name = str(doc.get("probe") or probe)
    subs: list[SubResult] = []
    for entry in cast("list[object]", checks):
        if not isinstance(entry, dict):
            continue
        item = cast("dict[str, Any]", entry)
        listed: object = item.get("covers")
        covers = cast("list[object]", listed) if isinstance(listed, list) else []
        subs.append(
            SubResult(
                name=f"{name}:{item.get('name', '?')}",
                covers=tuple(str(c) for c in covers),
                ok=item.get("ok") is True,
                detail=str(item.get("detail", "")),
            )
        )
    return doc, subs, ""


def probe_document(
    ctx: Context, done: Completed, probe: str, *, revision_name: str = ""
) -> tuple[dict[str, Any], list[SubResult]] | CheckResult:
    """A finished probe's document and sub-results, its revision recorded; or a failed result (CONF-02).

    Args:
        ctx: the check's context; the negotiated revision is recorded in it under
            ``revision_name``, by default the document's probe name.
        done: the probe's run.
        probe: fallback probe name when the document has none.

    Returns:
        ``(document, sub-results)``, or a failed result quoting the problem, the exit and stderr
        when the output is not a probe document.
    """
    doc, subs, problem = parse_probe_output(done.stdout, probe)
    if doc is None:
        state = "timed out" if done.timed_out else f"exit {done.returncode}"
        return CheckResult(False, f"{problem} ({state}; stderr: {tail(done.stderr)})")
    revision = doc.get("protocol_version")
    if isinstance(revision, str) and revision:
        ctx.record_revision(revision_name or str(doc.get("probe") or probe), revision)
    return doc, subs


def probe_verdict(doc: dict[str, Any], subs: list[SubResult], done: Completed, head: str) -> CheckResult:
    """The verdict on a probe's document (CONF-02).

    A pass when the probe reported ``ok``, exited 0 and every one of ``subs`` (at least one)
    passed. The detail reads ``"{head}: N/M ok"``, then the failed ones' names or, when none
    failed but the probe did, what it reported, its exit and stderr.
    """
    failed = [s.name for s in subs if not s.ok]
    ok = doc.get("ok") is True and not failed and done.returncode == 0 and bool(subs)
    detail = f"{head}: {len(subs) - len(failed)}/{len(subs)} ok"
    if failed:
        detail += "; failed: " + ", ".join(failed)
    if not ok and not failed:
        detail += f"; probe reported ok={doc.get('ok')!r}, exit {done.returncode}"
        if doc.get("error"):
            detail += f", error: {doc.get('error')}"
        detail += f" (stderr: {tail(done.stderr)})"
    return CheckResult(ok, detail, {"document": doc}, subs)


async def _run_probe(ctx: Context, probe: str) -> CheckResult:
    found = await trusted_probe(ctx, probe)
    if isinstance(found, CheckResult):
        return found
    node, script = found
    budget = max(5.0, ctx.remaining() - _PROBE_MARGIN_SECONDS)
    argv = [node, str(script), "--timeout-ms", str(int(budget * 1000)), "--", *ctx.serve_argv("--allow-write")]
    done = await ctx.run(argv, timeout_seconds=budget + _PROBE_MARGIN_SECONDS / 2)
    read = probe_document(ctx, done, probe)
    if isinstance(read, CheckResult):
        return read
    doc, subs = read
    sdk = f"{doc.get('sdk', '?')} {doc.get('sdk_version', '?')}"
    head = f"{sdk} over {doc.get('transport', '?')} at {doc.get('protocol_version') or '?'}"
    return probe_verdict(doc, subs, done, head)


@check("node_stdio:stdio_sdk1", covers=["CONF-02"], timeout_seconds=120)
async def probe_sdk1(ctx: Context) -> CheckResult:
    """The TypeScript SDK 1.x probe over stdio (CONF-02)."""
    return await _run_probe(ctx, "stdio_sdk1")


@check("node_stdio:stdio_sdk2", covers=["CONF-02"], timeout_seconds=120)
async def probe_sdk2(ctx: Context) -> CheckResult:
    """The TypeScript SDK 2.x probe over stdio (CONF-02)."""
    return await _run_probe(ctx, "stdio_sdk2")
