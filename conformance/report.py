"""Turning check records into the report: per-id status, summary, JSON and Markdown.

Rules (CONF-01):

- an id *passes* when at least one check covers it and every check covering it passed;
- it *fails* when any check covering it failed;
- it is *not covered* when no check that ran covers it.

SRV-03 needs more than passing checks: the run must show both the 2026-07-28 revision and
at least one handshake revision. Whenever a check covering SRV-03 ran, a synthesized check
named :data:`REVISIONS_CHECK` (covering SRV-03) states whether both were seen among the
revisions recorded by any check, so a run that exercised only one era fails SRV-03 and the
exit status says so. A run that touched no SRV-03 check leaves SRV-03 not covered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.context import LEGACY_REVISIONS, MODERN_REVISION
from conformance.limits import DETAIL_MAX_CHARS
from conformance.requirements import REQUIREMENTS

__all__ = ["REVISIONS_CHECK", "CheckRecord", "build_report", "render_markdown", "revisions_record", "write_report"]

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
    """

    name: str
    covers: tuple[str, ...]
    ok: bool
    detail: str
    seconds: float

    def as_json(self) -> dict[str, Any]:
        """``{"name", "covers", "ok", "detail", "seconds"}`` with seconds rounded to ms."""
        return {
            "name": self.name,
            "covers": list(self.covers),
            "ok": self.ok,
            "detail": self.detail[:DETAIL_MAX_CHARS],
            "seconds": round(self.seconds, 3),
        }


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
    if not any("SRV-03" in r.covers for r in records):
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


def build_report(
    target: Sequence[str], records: Sequence[CheckRecord], revisions: Mapping[str, str], generated_at: int
) -> dict[str, Any]:
    """Aggregate check records into the report document (CONF-01).

    Args:
        target: the target argv.
        records: every check that ran, in run order (the SRV-03 record is added here).
        revisions: label to negotiated protocol revision.
        generated_at: Unix seconds.

    Returns:
        ``{"target": [str], "generated_at": int, "summary": {"pass", "fail", "not_covered"},
        "protocol_revisions": {label: revision}, "results": [{"id", "status", "checks"}],
        "checks": [{"name", "covers", "ok", "detail", "seconds"}]}``; ``results`` lists every
        manifest id in manifest order; ``summary`` counts ids, not checks.
    """
    all_records = list(records)
    synthesized = revisions_record(all_records, revisions)
    if synthesized is not None:
        all_records.append(synthesized)
    results: list[dict[str, Any]] = []
    summary = {"pass": 0, "fail": 0, "not_covered": 0}
    for requirement in REQUIREMENTS:
        covering = [r for r in all_records if requirement.id in r.covers]
        if not covering:
            status = "not_covered"
        elif all(r.ok for r in covering):
            status = "pass"
        else:
            status = "fail"
        summary[status] += 1
        results.append({"id": requirement.id, "status": status, "checks": [r.name for r in covering]})
    return {
        "target": list(target),
        "generated_at": int(generated_at),
        "summary": summary,
        "protocol_revisions": dict(sorted(revisions.items())),
        "results": results,
        "checks": [r.as_json() for r in all_records],
    }


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


_MARK = {"pass": "pass", "fail": "**FAIL**", "not_covered": "not covered"}


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as a readable Markdown page: summary, revisions, ids, then checks."""
    summary = report["summary"]
    summaries = {r.id: r.summary for r in REQUIREMENTS}
    lines = [
        "# Conformance report",
        "",
        f"- Target: `{' '.join(report['target'])}`",
        f"- Generated at: {report['generated_at']} (Unix seconds)",
        f"- Requirements: {summary['pass']} pass, {summary['fail']} fail, {summary['not_covered']} not covered",
        f"- Checks: {sum(1 for c in report['checks'] if c['ok'])} passed, "
        f"{sum(1 for c in report['checks'] if not c['ok'])} failed",
        "",
        "## Protocol revisions negotiated",
        "",
    ]
    if report["protocol_revisions"]:
        lines += ["| Check or probe | Revision |", "|---|---|"]
        lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in report["protocol_revisions"].items()]
    else:
        lines.append("None recorded.")
    lines += ["", "## Requirements", "", "| Id | Status | Summary | Checks |", "|---|---|---|---|"]
    for row in report["results"]:
        checks = ", ".join(f"`{n}`" for n in row["checks"]) or "-"
        lines.append(f"| {row['id']} | {_MARK[row['status']]} | {_cell(summaries.get(row['id'], ''))} | {checks} |")
    lines += ["", "## Checks", "", "| Check | Result | Seconds | Covers | Detail |", "|---|---|---|---|---|"]
    for c in report["checks"]:
        result = "ok" if c["ok"] else "**FAIL**"
        covers = ", ".join(c["covers"]) or "-"
        lines.append(f"| `{_cell(c['name'])}` | {result} | {c['seconds']:.2f} | {covers} | {_cell(c['detail'])} |")
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
