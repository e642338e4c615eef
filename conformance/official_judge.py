"""Judge the official conformance package's client scenarios run against ShadowCode.

Usage::

    python3 conformance/official_judge.py RESULTS_DIR SCENARIO...

``RESULTS_DIR/<scenario>/<scenario>-<time>/`` is what ``conformance client -o`` writes:
``checks.json`` (the package's checks), ``stdout.txt`` and ``stderr.txt`` (the adapter's,
:mod:`conformance.official_client`). One line per judged check, then one client line with the
counts, e.g. ``client: 2 passed, 0 failed, 1 expected failure (sse-retry: ...)``.

* A scenario in :data:`EXPECTED_FAILURES` must fail (a FAILURE check from the package), and
  :func:`never_resumed` must hold for its log; passing it is an error, since it would mean a
  stream was resumed, which CLI-18 forbids.
* Any other scenario: every SUCCESS/FAILURE/WARNING check must be SUCCESS, at least one check
  must have been made, and the adapter must have printed its summary line (it exited 0).

Only the standard library is used. Exit status 0 when every scenario ended as it should, else 1.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["EXPECTED_FAILURES", "judge", "main", "never_resumed"]

EXPECTED_FAILURES: dict[str, str] = {
    "sse-retry": "expects SSE resumption, which CLI-18 forbids",
}
"""Client scenarios that must fail, and why."""

_JUDGED = ("SUCCESS", "FAILURE", "WARNING")


def never_resumed(checks: list[dict[str, Any]]) -> list[str]:
    """Problems showing a resumption or a repeat in a scenario server's log (empty when none).

    The log must show exactly one ``tools/call`` POST, no GET request after the call's
    stream was closed, and no GET carrying ``Last-Event-ID`` (CLI-18).
    """
    problems = []
    calls = [
        c
        for c in checks
        if c["id"] == "incoming-request" and (c.get("details") or {}).get("jsonrpcMethod") == "tools/call"
    ]
    if len(calls) != 1:
        problems.append(f"tools/call was sent {len(calls)} times, not once")
    closed = [i for i, c in enumerate(checks) if c["id"] == "outgoing-stream-close"]
    gets = [
        (i, c) for i, c in enumerate(checks) if c["id"] == "incoming-request" and c["details"].get("method") == "GET"
    ]
    if closed and any(i > closed[0] for i, _ in gets):
        problems.append("a GET request came after the call's stream closed (a reconnection)")
    if any("last-event-id" in (c["details"].get("headers") or {}) for _, c in gets):
        problems.append("a GET request carried Last-Event-ID (a resumption)")
    return problems


def _load(root: Path, scenario: str) -> tuple[list[dict[str, Any]], str] | None:
    found = glob.glob(str(root / scenario / "*" / "checks.json"))
    if len(found) != 1:
        return None
    folder = Path(found[0]).parent
    stdout = (folder / "stdout.txt").read_text(encoding="utf-8") if (folder / "stdout.txt").is_file() else ""
    return json.loads(Path(found[0]).read_text(encoding="utf-8")), stdout


def judge(root: Path, scenarios: list[str]) -> tuple[list[str], int, int, list[str]]:
    """Judge each scenario's results under ``root``.

    Returns:
        (lines to print, checks passed, checks failed, expected failures as ``"name: reason"``).
    """
    lines: list[str] = []
    passed = failed = 0
    expected: list[str] = []
    for scenario in scenarios:
        loaded = _load(root, scenario)
        if loaded is None:
            lines.append(f"FAIL {scenario}: no results (see client-{scenario}.log)")
            failed += 1
            continue
        all_checks, stdout = loaded
        checks = [c for c in all_checks if c.get("status") in _JUDGED]
        if scenario in EXPECTED_FAILURES:
            reason = EXPECTED_FAILURES[scenario]
            problems = never_resumed(all_checks)
            if not any(c["status"] == "FAILURE" for c in checks):
                problems.append("the scenario passed; the client must not resume a stream")
            if problems:
                lines.append(f"FAIL {scenario}: {'; '.join(problems)}")
                failed += 1
            else:
                shown = ", ".join(f"{c['id']} {c['status']}" for c in checks)
                lines.append(f"xfail {scenario}: {reason} ({shown}; tools/call sent once, never resumed)")
                expected.append(f"{scenario}: {reason}")
            continue
        if not checks:
            lines.append(f"FAIL {scenario}: the scenario made no check")
            failed += 1
        for check in checks:
            ok = check["status"] == "SUCCESS"
            note = check.get("errorMessage") or ""
            lines.append(
                f"{'ok  ' if ok else 'FAIL'} {scenario} / {check['id']}: {check['status']}"
                + (f" ({note})" if note else "")
            )
            passed += ok
            failed += not ok
        if not stdout.startswith(f"{scenario}: "):
            lines.append(f"FAIL {scenario}: the adapter did not finish (see its stderr.txt)")
            failed += 1
    return lines, passed, failed, expected


def main(argv: list[str] | None = None) -> int:
    """Print the judgement and the client line; 0 when every scenario ended as it should."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        sys.stderr.write("usage: official_judge.py RESULTS_DIR SCENARIO...\n")
        return 2
    lines, passed, failed, expected = judge(Path(args[0]), args[1:])
    client = f"client: {passed} passed, {failed} failed, {len(expected)} expected failure"
    client += "s" if len(expected) != 1 else ""
    if expected:
        client += f" ({'; '.join(expected)})"
    sys.stdout.write("\n".join([*lines, client]) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
