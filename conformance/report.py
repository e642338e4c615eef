"""Turning check records into the report: per-id status, summary, JSON and Markdown.

Rules (CONF-01):

- an id *passes* when at least one check covers it and every check covering it passed;
- it *fails* when any check covering it failed;
- it is *not covered* when no check that ran covers it.

Expected failures (CONF-01, CONF-04): a baseline file lists checks known to fail, each
with a reason. A listed check that fails gets status ``expected_fail`` and counts neither
for nor against the ids it covers, so an id covered only by expected failures is *not
covered*. A listed check that passes is *stale*, and a listed name that matched no check
that ran is *unknown*; both make the run fail, so the baseline cannot drift from reality.

SRV-03 needs more than passing checks: the run must show both the 2026-07-28 revision and
at least one handshake revision. Whenever a check covering SRV-03 ran, a synthesized check
named :data:`REVISIONS_CHECK` (covering SRV-03) states whether both were seen among the
revisions recorded by any check, so a run that exercised only one era fails SRV-03 and the
exit status says so. A run that touched no SRV-03 check leaves SRV-03 not covered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.context import LEGACY_REVISIONS, MODERN_REVISION
from conformance.errors import UsageError
from conformance.limits import DETAIL_MAX_CHARS
from conformance.requirements import REQUIREMENTS

__all__ = [
    "REVISIONS_CHECK",
    "NOT_ASKED",
    "UNAVAILABLE",
    "CheckRecord",
    "ExpectedFailure",
    "build_report",
    "load_expected_failures",
    "render_markdown",
    "report_failed",
    "revisions_record",
    "write_report",
]

REVISIONS_CHECK = "report:protocol_revisions"
"""Name of the synthesized check that enforces the SRV-03 revision rule."""


@dataclass(frozen=True)
class CheckRecord:
    """One line of the report's ``checks`` list.

    Attributes:
        name: check name (``"python_client:auto"``, ``"stdio_sdk1:tools_list_seventeen"``).
        covers: requirement ids it proves.
        ok: whether it passed.
        detail: explanation, cut to ``DETAIL_MAX_CHARS``.
        seconds: wall-clock time it took.
        not_run: ``""`` when the check ran; :data:`NOT_ASKED` when the run was not given what
            it needs (``--target`` or ``--url``); :data:`UNAVAILABLE` when it was asked for but
            something it needs is missing (Node 22, the official package). Either way it proves
            nothing; only an unavailable check fails the run.
    """

    name: str
    covers: tuple[str, ...]
    ok: bool
    detail: str
    seconds: float
    not_run: str = ""

    def as_json(self) -> dict[str, Any]:
        """``{"name", "covers", "ok", "status", "detail", "seconds"}``, seconds rounded to ms.

        ``status`` is ``"pass"`` or ``"fail"`` from ``ok``, or ``"not_run"`` (then
        ``"not_run"`` holds :data:`NOT_ASKED` or :data:`UNAVAILABLE` and ``ok`` is false);
        :func:`build_report` turns a baselined failure into ``"expected_fail"``.
        """
        row: dict[str, Any] = {
            "name": self.name,
            "covers": list(self.covers),
            "ok": self.ok and not self.not_run,
            "status": "not_run" if self.not_run else "pass" if self.ok else "fail",
            "detail": self.detail[:DETAIL_MAX_CHARS],
            "seconds": round(self.seconds, 3),
        }
        if self.not_run:
            row["not_run"] = self.not_run
        return row


NOT_ASKED = "not_asked"
"""A check not run because the run was not given what it needs (``--target``, ``--url``)."""

UNAVAILABLE = "unavailable"
"""A check not run because something it needs is missing; it fails the run."""


@dataclass(frozen=True)
class ExpectedFailure:
    """One entry of an expected-failures baseline.

    Attributes:
        check: the exact report name of a check (``"registration:claude_http_connected"``),
            sub-checks and ``report:protocol_revisions`` included.
        reason: why it is known to fail, for a person.
    """

    check: str
    reason: str


_ENTRY_KEYS = frozenset({"check", "reason"})


def load_expected_failures(path: Path) -> list[ExpectedFailure]:
    """Read a baseline file: a YAML list of ``{check: str, reason: str}`` (CONF-01).

    An empty file (or ``[]``) is an empty baseline. Each entry needs both keys as non-empty
    strings and nothing else; a check may be listed once.

    Args:
        path: the YAML file.

    Returns:
        The entries in file order.

    Raises:
        UsageError: the file cannot be read, is not YAML, or an entry is malformed (exit 2).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read expected failures {path}: {exc.strerror or exc}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"expected failures {path} is not valid YAML: {' '.join(str(exc).split())}") from exc
    if document is None:
        return []
    if not isinstance(document, list):
        raise UsageError(f"expected failures {path} must be a YAML list of {{check, reason}} entries")
    entries: list[ExpectedFailure] = []
    seen: set[str] = set()
    for index, item in enumerate(document, start=1):
        where = f"expected failures {path}, entry {index}"
        if not isinstance(item, dict):
            raise UsageError(f"{where}: must be a mapping with 'check' and 'reason'")
        extra = sorted(str(k) for k in item if k not in _ENTRY_KEYS)
        if extra:
            raise UsageError(f"{where}: unknown key(s) {', '.join(extra)}; only 'check' and 'reason' are allowed")
        name, reason = item.get("check"), item.get("reason")
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"{where}: 'check' must be a non-empty string naming a check")
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError(f"{where}: 'reason' must be a non-empty string saying why {name!r} fails")
        if name in seen:
            raise UsageError(f"{where}: {name!r} is listed twice")
        seen.add(name)
        entries.append(ExpectedFailure(name.strip(), " ".join(reason.split())))
    return entries


def revisions_record(records: Sequence[CheckRecord], revisions: Mapping[str, str]) -> CheckRecord | None:
    """The synthesized SRV-03 check, or None when no check covering SRV-03 ran (SRV-03).

    Args:
        records: the checks that ran.
        revisions: label to negotiated revision, as recorded by checks.

    Returns:
        A passing record when the modern revision and a handshake revision both appear in
        ``revisions``; a failing one naming what is missing otherwise; None when no record
        covers SRV-03.
    """
    if not any("SRV-03" in r.covers and not r.not_run for r in records):
        return None
    seen = sorted(set(revisions.values()))
    modern = MODERN_REVISION in seen
    legacy = [v for v in seen if v in LEGACY_REVISIONS]
    missing = []
    if not modern:
        missing.append(f"the {MODERN_REVISION} revision")
    if not legacy:
        missing.append("any initialize-era revision (" + ", ".join(LEGACY_REVISIONS) + ")")
    shown = ", ".join(seen) or "none"
    if missing:
        detail = f"revisions exercised: {shown}; never negotiated: " + " and ".join(missing)
    else:
        detail = f"revisions exercised: {shown}"
    return CheckRecord(REVISIONS_CHECK, ("SRV-03",), not missing, detail, 0.0)


def _never_filtered(name: str) -> bool:
    return False


def build_report(
    target: Sequence[str],
    records: Sequence[CheckRecord],
    revisions: Mapping[str, str],
    generated_at: int,
    expected_failures: Sequence[ExpectedFailure] = (),
    filtered_out: Callable[[str], bool] = _never_filtered,
    engine: str = "temporary",
    url: str | None = None,
) -> dict[str, Any]:
    """Aggregate check records into the report document (CONF-01).

    Args:
        target: the target argv.
        records: every check that ran, in run order (the SRV-03 record is added here).
        revisions: label to negotiated protocol revision.
        generated_at: Unix seconds.
        expected_failures: the baseline; empty for none.
        filtered_out: whether a baseline name was left out of the run on purpose (``--only``);
            such an entry is neither checked nor reported.
        engine: how the run met the engine: ``"attached"`` (``--attached``) or ``"temporary"``;
            :data:`NO_ENGINE` (``"none"``) in the generic profile, which runs the target as given.
        url: the Streamable HTTP endpoint under test (``--url``); the report carries a
            ``"url"`` key only when one was given.

    Returns:
        ``{"target": [str], "engine": str, "generated_at": int, "summary": {"pass", "fail", "not_covered"},
        "protocol_revisions": {label: revision},
        "results": [{"id", "status", "checks", "expected_fail"}],
        "checks": [{"name", "covers", "ok", "status", "detail", "seconds"} (+ "reason")],
        "expected_failures": [{"check", "reason", "outcome"}]}``. ``results`` lists every
        manifest id in manifest order; its ``checks`` are the checks that decided the status
        and ``expected_fail`` the baselined failures left out of it. A check's ``status`` is
        ``"pass"``, ``"fail"`` or ``"expected_fail"`` (which carries the baseline ``reason``).
        An ``outcome`` is ``"failed_as_expected"``, ``"stale"`` (the check passed) or
        ``"unknown"`` (no check of that name ran). A check that was not run (``"not_run"``)
        counts for no id, and its baseline entry is left out. ``summary`` counts ids, not checks.
    """
    all_records = list(records)
    synthesized = revisions_record(all_records, revisions)
    if synthesized is not None:
        all_records.append(synthesized)
    reasons = {e.check: e.reason for e in expected_failures}
    excused = {r.name for r in all_records if not r.ok and not r.not_run and r.name in reasons}
    not_run = {r.name for r in all_records if r.not_run}
    checks: list[dict[str, Any]] = []
    for r in all_records:
        row = r.as_json()
        if r.name in excused:
            row["status"] = "expected_fail"
            row["reason"] = reasons[r.name]
        checks.append(row)
    results: list[dict[str, Any]] = []
    summary = {"pass": 0, "fail": 0, "not_covered": 0}
    for requirement in REQUIREMENTS:
        covering = [r for r in all_records if requirement.id in r.covers and r.name not in not_run]
        counted = [r for r in covering if r.name not in excused]
        if not counted:
            status = "not_covered"
        elif all(r.ok for r in counted):
            status = "pass"
        else:
            status = "fail"
        summary[status] += 1
        results.append(
            {
                "id": requirement.id,
                "status": status,
                "checks": [r.name for r in counted],
                "expected_fail": [r.name for r in covering if r.name in excused],
            }
        )
    outcomes = {r.name: ("failed_as_expected" if r.name in excused else "stale") for r in all_records}
    baseline = [
        {"check": e.check, "reason": e.reason, "outcome": outcomes.get(e.check, "unknown")}
        for e in expected_failures
        if (e.check in outcomes and e.check not in not_run) or (e.check not in outcomes and not filtered_out(e.check))
    ]
    report: dict[str, Any] = {
        "target": list(target),
        "engine": engine,
        "generated_at": int(generated_at),
        "summary": summary,
        "protocol_revisions": dict(sorted(revisions.items())),
        "results": results,
        "checks": checks,
        "expected_failures": baseline,
    }
    if url is not None:
        report["url"] = url
    return report


def report_failed(report: Mapping[str, Any]) -> bool:
    """Whether the run fails: a check failed outside the baseline, a check asked for could not run
    (unavailable), or a baseline entry is stale or unknown.

    Args:
        report: a document from :func:`build_report`.

    Returns:
        True when the exit status must be 1 (CONF-01).
    """
    if any(c["status"] == "fail" or c.get("not_run") == UNAVAILABLE for c in report["checks"]):
        return True
    return any(e["outcome"] != "failed_as_expected" for e in report.get("expected_failures", []))


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


_MARK = {"pass": "pass", "fail": "**FAIL**", "not_covered": "not covered"}
_CHECK_MARK = {"pass": "ok", "fail": "**FAIL**", "expected_fail": "expected fail", "not_run": "not run"}
_OUTCOME = {
    "failed_as_expected": "failed as expected",
    "stale": "**STALE**: it passed, remove it from the baseline",
    "unknown": "**UNKNOWN**: no check of this name ran, fix or remove the entry",
}


NO_ENGINE = "none"
"""The report's ``engine`` in the generic profile, which starts the target as given."""

_ENGINE_SAID = {
    "attached": "attached (`<target> engine` ran in each check's profile, except own-engine checks)",
    "temporary": "temporary (no engine was started before the checks)",
    NO_ENGINE: "none (the generic profile runs the target as given)",
}


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as a readable Markdown page: summary, revisions, baseline, ids, then checks."""
    summary = report["summary"]
    summaries = {r.id: r.summary for r in REQUIREMENTS}
    statuses = [c["status"] for c in report["checks"]]
    baseline = report.get("expected_failures", [])
    lines = [
        "# Conformance report",
        "",
        f"- Target: `{' '.join(report['target'])}`" if report["target"] else "- Target: none (no --target)",
        *([f"- URL: `{report['url']}`"] if report.get("url") else []),
        f"- Engine: {_ENGINE_SAID.get(report.get('engine', 'temporary'), report.get('engine'))}",
        f"- Generated at: {report['generated_at']} (Unix seconds)",
        f"- Result: {'**FAIL**' if report_failed(report) else 'pass'}",
        f"- Requirements: {summary['pass']} pass, {summary['fail']} fail, {summary['not_covered']} not covered",
        f"- Checks: {statuses.count('pass')} passed, {statuses.count('fail')} failed, "
        f"{statuses.count('expected_fail')} expected failures, {statuses.count('not_run')} not run",
        "",
        "## Protocol revisions negotiated",
        "",
    ]
    if report["protocol_revisions"]:
        lines += ["| Check or probe | Revision |", "|---|---|"]
        lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in report["protocol_revisions"].items()]
    else:
        lines.append("None recorded.")
    lines += ["", "## Expected failures", ""]
    if baseline:
        lines += ["| Check | Outcome | Reason |", "|---|---|---|"]
        lines += [f"| `{_cell(e['check'])}` | {_OUTCOME[e['outcome']]} | {_cell(e['reason'])} |" for e in baseline]
    else:
        lines.append("None listed.")
    lines += ["", "## Requirements", "", "| Id | Status | Summary | Checks |", "|---|---|---|---|"]
    for row in report["results"]:
        names = [f"`{n}`" for n in row["checks"]] + [f"`{n}` (expected fail)" for n in row.get("expected_fail", [])]
        checks = ", ".join(names) or "-"
        lines.append(f"| {row['id']} | {_MARK[row['status']]} | {_cell(summaries.get(row['id'], ''))} | {checks} |")
    lines += ["", "## Checks", "", "| Check | Result | Seconds | Covers | Detail |", "|---|---|---|---|---|"]
    for c in report["checks"]:
        result = _CHECK_MARK[c["status"]]
        if c.get("not_run") == UNAVAILABLE:
            result = "**NOT RUN**"
        detail = c["detail"] if "reason" not in c else f"{c['detail']} (baseline: {c['reason']})"
        covers = ", ".join(c["covers"]) or "-"
        lines.append(f"| `{_cell(c['name'])}` | {result} | {c['seconds']:.2f} | {covers} | {_cell(detail)} |")
    return "\n".join(lines) + "\n"


def write_report(out_dir: Path, report: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``out_dir`` (created if needed).

    Returns:
        The two paths, JSON first.

    Raises:
        OSError: the folder or files cannot be written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "report.json"
    md_path = out_dir / "report.md"
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path
