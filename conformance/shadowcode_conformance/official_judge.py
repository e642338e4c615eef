"""Judge the official conformance package's client scenarios run against ShadowCode.

``python -m shadowcode_conformance --official`` runs the scenarios as checks of its own run (see
:mod:`shadowcode_conformance.checks.official`); this module keeps the judge of a results folder written
by hand (``conformance client -o``) and :func:`never_resumed`, which that run uses too.

Usage::

    python -m shadowcode_conformance.official_judge RESULTS_DIR SCENARIO...

``RESULTS_DIR/<scenario>/<scenario>-<time>/`` is what ``conformance client -o`` writes:
``checks.json`` (the package's checks), ``stdout.txt`` and ``stderr.txt`` (the adapter's,
:mod:`shadowcode_conformance.official_client`). One line per judged check, then one client line with the
counts, e.g. ``client: 2 passed, 0 failed, 1 expected failure (sse-retry: ...)``; with
``--label auth`` the line reads ``client auth: N passed, M failed, K expected failures`` (checks
passed and failed, scenarios expected to fail; each expected failure has its own ``xfail`` line
with the reason above it).

* A scenario in :data:`EXPECTED_FAILURES` must fail (a check that is not SUCCESS, or an adapter
  that did not finish); passing it is an error, so the list stays honest. For ``sse-retry``
  :func:`never_resumed` must also hold for its log (a pass would mean a resumed stream, which
  CLI-18 forbids).
* Any other scenario: no judged check may be FAILURE (a WARNING is printed as ``warn`` and
  fails nothing, as in ``python -m shadowcode_conformance --official``), at least one check must have been
  made, and the adapter must have printed its summary line (it exited 0).

The expected failures are read from ``conformance/shadowcode_conformance/expected_failures.yml``.
Exit status 0 when every scenario ended as it should, else 1.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path
from typing import Any, cast

__all__ = ["EXPECTED_FAILURES", "judge", "main", "never_resumed"]


def _expected_failures() -> dict[str, str]:
    """Client scenario -> reason, from the ``official:client:*`` and ``official:auth:*`` entries of
    ShadowCode's baseline (``shadowcode_conformance/expected_failures.yml``), the one list both this judge and
    ``python -m shadowcode_conformance --official`` go by."""
    from shadowcode_conformance.report import load_expected_failures

    found: dict[str, str] = {}
    for entry in load_expected_failures(Path(__file__).resolve().parent / "expected_failures.yml"):
        if entry.check.startswith("official:client:") and entry.check.count(":") == 2:
            found[entry.check.removeprefix("official:client:")] = entry.reason
        elif entry.check.startswith("official:auth:") and entry.check.count(":") == 2:
            found["auth/" + entry.check.removeprefix("official:auth:")] = entry.reason
    return found


EXPECTED_FAILURES: dict[str, str] = _expected_failures()
"""Client scenarios that must fail, and why."""

_NEVER_RESUMED = frozenset({"sse-retry"})
"""Expected failures whose log must also show the call sent once and never resumed (CLI-18)."""

_JUDGED = ("SUCCESS", "FAILURE", "WARNING")


def never_resumed(checks: list[dict[str, Any]]) -> list[str]:
    """Problems showing a resumption or a repeat in a scenario server's log (empty when none).

    The log must show exactly one ``tools/call`` POST, no GET request after the call's
    stream was closed, and no GET carrying ``Last-Event-ID`` (CLI-18).
    """
    problems: list[str] = []
    calls = [
        c
        for c in checks
        if c["id"] == "incoming-request" and _details(c).get("jsonrpcMethod") == "tools/call"
    ]
    if len(calls) != 1:
        problems.append(f"tools/call was sent {len(calls)} times, not once")
    closed = [i for i, c in enumerate(checks) if c["id"] == "outgoing-stream-close"]
    gets = [
        (i, c) for i, c in enumerate(checks) if c["id"] == "incoming-request" and _details(c).get("method") == "GET"
    ]
    if closed and any(i > closed[0] for i, _ in gets):
        problems.append("a GET request came after the call's stream closed (a reconnection)")
    if any("last-event-id" in (_details(c).get("headers") or {}) for _, c in gets):
        problems.append("a GET request carried Last-Event-ID (a resumption)")
    return problems


def _load(root: Path, scenario: str) -> tuple[list[dict[str, Any]], str] | None:
    # ``auth/NAME`` scenarios write into ``auth/NAME/auth/NAME-<time>/``.
    found = glob.glob(str(root / scenario / "**" / "checks.json"), recursive=True)
    if len(found) != 1:
        return None
    folder = Path(found[0]).parent
    stdout = (folder / "stdout.txt").read_text(encoding="utf-8") if (folder / "stdout.txt").is_file() else ""
    return json.loads(Path(found[0]).read_text(encoding="utf-8")), stdout


def _expected_failure(scenario: str, all_checks: list[dict[str, Any]], stdout: str) -> tuple[str, bool]:
    """Judge a scenario listed in EXPECTED_FAILURES: (line, whether it failed as expected)."""
    reason = EXPECTED_FAILURES[scenario]
    checks = [c for c in all_checks if c.get("status") in _JUDGED]
    failed = [c for c in checks if c["status"] != "SUCCESS"]
    if scenario in _NEVER_RESUMED:
        problems = never_resumed(all_checks)
        if not any(c["status"] == "FAILURE" for c in checks):
            problems.append("the scenario passed; the client must not resume a stream")
        if problems:
            return f"FAIL {scenario}: {'; '.join(problems)}", False
        shown = ", ".join(f"{c['id']} {c['status']}" for c in checks)
        return f"xfail {scenario}: {reason} ({shown}; tools/call sent once, never resumed)", True
    if not failed and checks and stdout.startswith(f"{scenario}: "):
        return f"FAIL {scenario}: passed, but it is listed as an expected failure ({reason})", False
    shown = ", ".join(f"{c['id']} {c['status']}" for c in failed) or "the adapter did not finish"
    return f"xfail {scenario}: {reason} ({shown})", True


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
            lines.append(f"FAIL {scenario}: no results (see client-{scenario.replace('/', '_')}.log)")
            failed += 1
            continue
        all_checks, stdout = loaded
        checks = [c for c in all_checks if c.get("status") in _JUDGED]
        if scenario in EXPECTED_FAILURES:
            line, ok = _expected_failure(scenario, all_checks, stdout)
            lines.append(line)
            if ok:
                expected.append(f"{scenario}: {EXPECTED_FAILURES[scenario]}")
            else:
                failed += 1
            continue
        if not checks:
            lines.append(f"FAIL {scenario}: the scenario made no check")
            failed += 1
        for check in checks:
            ok = check["status"] == "SUCCESS"
            warned = check["status"] == "WARNING"  # a SHOULD: reported as warn, never a failure (CONF-01)
            note = check.get("errorMessage") or ""
            lines.append(
                f"{'ok  ' if ok else 'warn' if warned else 'FAIL'} {scenario} / {check['id']}: {check['status']}"
                + (f" ({note})" if note else "")
            )
            passed += ok
            failed += not ok and not warned
        if not stdout.startswith(f"{scenario}: "):
            lines.append(f"FAIL {scenario}: the adapter did not finish (see its stderr.txt)")
            failed += 1
    return lines, passed, failed, expected


def main(argv: list[str] | None = None) -> int:
    """Print the judgement and the client line; 0 when every scenario ended as it should."""
    args = sys.argv[1:] if argv is None else argv
    label = "client"
    if args[:1] == ["--label"] and len(args) > 1:
        label, args = f"client {args[1]}", args[2:]
    if len(args) < 2:
        sys.stderr.write("usage: official_judge.py [--label NAME] RESULTS_DIR SCENARIO...\n")
        return 2
    lines, passed, failed, expected = judge(Path(args[0]), args[1:])
    client = f"{label}: {passed} passed, {failed} failed, {len(expected)} expected failure"
    client += "s" if len(expected) != 1 else ""
    if expected and label == "client":
        client += f" ({'; '.join(expected)})"
    sys.stdout.write("\n".join([*lines, client]) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())


def _details(check: dict[str, Any]) -> dict[str, Any]:
    """A check's ``details`` object ({} when it has none)."""
    details = check.get("details")
    return cast("dict[str, Any]", details) if isinstance(details, dict) else {}
