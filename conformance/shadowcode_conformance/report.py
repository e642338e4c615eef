"""Turning check records into the report: per-id status, summary, JSON and Markdown.

Each check comes to a verdict (:mod:`shadowcode_conformance.verdicts`): ``pass``, ``fail`` (a ``must``
rule broken), ``warn`` (a ``should`` or ``robustness`` rule broken) or ``not_applicable``, each
with its reason, its weight and its source.

Rules (CONF-01):

- an id *passes* when at least one counted check covers it and none of them failed (a warn
  does not fail an id; the row lists it under ``warn``);
- it *fails* when any counted check covering it failed;
- it is *not covered* when no counted check covers it. A check that was not applicable, not
  run, or listed in the baseline is not counted.

Expected failures (CONF-01, CONF-04): a baseline file lists checks known to fail or warn, each
with a reason and, optionally, the weight of the broken rule. A listed check that fails gets
status ``expected_fail`` (one that warns ``expected_warn``) and counts neither for nor against
the ids it covers, so an id covered only by expected failures is *not covered*. A listed check
that passes or is not applicable is *stale*, a listed name that matched no check that ran is
*unknown*, and an entry whose weight differs from the check's is *wrong_weight*; all three make
the run fail, so the baseline cannot drift from reality.

SRV-03 needs more than passing checks: the run must show both the 2026-07-28 revision and
at least one handshake revision. Whenever a check covering SRV-03 ran, a synthesized check
named :data:`REVISIONS_CHECK` (covering SRV-03) states whether both were seen among the
revisions recorded by any check, so a run that exercised only one era fails SRV-03 and the
exit status says so. A run that touched no SRV-03 check leaves SRV-03 not covered. In the
generic profile both eras are ShadowCode's contract, not a rule every server keeps: a server
that claims one era gets that record as not applicable, with the revisions it did negotiate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION
from shadowcode_conformance.errors import UsageError
from shadowcode_conformance.limits import DETAIL_MAX_CHARS
from shadowcode_conformance.links import requirement_link
from shadowcode_conformance.requirements import REQUIREMENTS
from shadowcode_conformance.verdicts import Verdict, Weight, judge, spec

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
        verdict: a :class:`~shadowcode_conformance.verdicts.Verdict`, or ``""`` to judge ``ok`` by ``weight``.
        weight: the weight of the rule (:class:`~shadowcode_conformance.verdicts.Weight`).
        source: where the rule is written (a section URL, or ShadowCode's contract).
        links: the specification sections and contract ids it proves
            (:func:`shadowcode_conformance.links.check_links`).
    """

    name: str
    covers: tuple[str, ...]
    ok: bool
    detail: str
    seconds: float
    not_run: str = ""
    verdict: str = ""
    weight: str = Weight.MUST
    source: str = ""
    links: tuple[str, ...] = ()

    @property
    def judged(self) -> str:
        """The verdict: ``pass``, ``fail``, ``warn`` or ``not_applicable``; ``not_run`` for a check not run."""
        if self.not_run:
            return NOT_RUN
        return self.verdict or judge(self.ok, self.weight)

    def as_json(self) -> dict[str, Any]:
        """``{"name", "covers", "ok", "status", "verdict", "weight", "source", "links", "detail", "seconds"}``.

        ``verdict`` is ``"pass"``, ``"fail"``, ``"warn"`` or ``"not_applicable"`` (or
        ``"not_run"``, and then ``"not_run"`` holds :data:`NOT_ASKED` or :data:`UNAVAILABLE`);
        ``status`` starts as the verdict and :func:`build_report` turns a baselined fail into
        ``"expected_fail"`` and a baselined warn into ``"expected_warn"``. ``ok`` is true only
        for a pass. ``detail`` is the reason for the verdict; seconds are rounded to ms.
        """
        verdict = self.judged
        row: dict[str, Any] = {
            "name": self.name,
            "covers": list(self.covers),
            "ok": verdict == Verdict.PASS,
            "status": str(verdict),
            "verdict": str(verdict),
            "weight": str(self.weight),
            "source": self.source,
            "links": list(self.links),
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

NOT_RUN = "not_run"
"""The status of a check that was not run (see :data:`NOT_ASKED`, :data:`UNAVAILABLE`)."""


@dataclass(frozen=True)
class ExpectedFailure:
    """One entry of an expected-failures baseline.

    Attributes:
        check: the exact report name of a check (``"registration:claude_http_connected"``),
            sub-checks and ``report:protocol_revisions`` included.
        reason: why it is known to fail or warn, for a person.
        weight: the weight of the broken rule as the baseline states it (``"must"``,
            ``"should"``, ``"robustness"``), or ``""`` when it states none.
        racy: the failure is a race in the target: it fails most runs but may pass, and a pass
            is reported as ``passed_this_time`` instead of stale.
    """

    check: str
    reason: str
    weight: str = ""
    racy: bool = False


_ENTRY_KEYS = frozenset({"check", "reason", "weight", "racy"})


def load_expected_failures(path: Path) -> list[ExpectedFailure]:
    """Read a baseline file: a YAML list of ``{check: str, reason: str, weight: str, racy: bool}`` (CONF-01).

    An empty file (or ``[]``) is an empty baseline. Each entry needs ``check`` and ``reason``
    as non-empty strings and may state ``weight`` (``must``, ``should`` or ``robustness``: the
    weight of the broken rule, held against the check's own) and ``racy`` (true for a failure
    that depends on a race in the target); nothing else. A check may be listed once.

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
    for index, found in enumerate(cast("list[object]", document), start=1):
        where = f"expected failures {path}, entry {index}"
        if not isinstance(found, dict):
            raise UsageError(f"{where}: must be a mapping with 'check' and 'reason'")
        item = cast("dict[object, object]", found)  # YAML keys may be any scalar
        extra = sorted(str(k) for k in item if k not in _ENTRY_KEYS)
        if extra:
            raise UsageError(
                f"{where}: unknown key(s) {', '.join(extra)}; only 'check', 'reason', 'weight' and 'racy' are allowed"
            )
        name, reason, weight = item.get("check"), item.get("reason"), item.get("weight", "")
        racy = item.get("racy", False)
        if not isinstance(racy, bool):
            raise UsageError(f"{where}: 'racy' must be true or false, not {racy!r}")
        if weight not in ("", *Weight):
            raise UsageError(f"{where}: 'weight' must be one of {', '.join(Weight)}, not {weight!r}")
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"{where}: 'check' must be a non-empty string naming a check")
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError(f"{where}: 'reason' must be a non-empty string saying why {name!r} fails")
        if name in seen:
            raise UsageError(f"{where}: {name!r} is listed twice")
        seen.add(name)
        entries.append(ExpectedFailure(name.strip(), " ".join(reason.split()), str(weight), racy))
    return entries


def revisions_record(
    records: Sequence[CheckRecord], revisions: Mapping[str, str], profile: str = "shadowcode"
) -> CheckRecord | None:
    """The synthesized SRV-03 check, or None when no check covering SRV-03 ran (SRV-03).

    Args:
        records: the checks that ran.
        revisions: label to negotiated revision, as recorded by checks.
        profile: ``"shadowcode"``: both eras are required (SRV-03); ``"generic"``: a server
            that negotiated one era gets the record as not applicable, naming what it did.

    Returns:
        A passing record when the modern revision and a handshake revision both appear in
        ``revisions``; a failing one naming what is missing otherwise (not applicable in the
        generic profile); None when no record covers SRV-03.
    """
    if not any("SRV-03" in r.covers and r.judged not in (NOT_RUN, Verdict.NOT_APPLICABLE) for r in records):
        return None
    seen = sorted(set(revisions.values()))
    modern = MODERN_REVISION in seen
    legacy = [v for v in seen if v in LEGACY_REVISIONS]
    missing: list[str] = []
    if not modern:
        missing.append(f"the {MODERN_REVISION} revision")
    if not legacy:
        missing.append("any initialize-era revision (" + ", ".join(LEGACY_REVISIONS) + ")")
    shown = ", ".join(seen) or "none"
    source = "ShadowCode contract: SRV-03 (both protocol eras)"
    links = (spec(LEGACY_REVISIONS[-1], "basic/lifecycle#version-negotiation"), requirement_link("SRV-03"))
    if missing:
        detail = f"revisions exercised: {shown}; never negotiated: " + " and ".join(missing)
    else:
        detail = f"revisions exercised: {shown}"
    if missing and profile != "shadowcode":
        detail += (
            "; both eras are ShadowCode's contract (SRV-03), not a rule every MCP server keeps: "
            "a fact about this server, not a failure"
        )
        return CheckRecord(
            REVISIONS_CHECK, ("SRV-03",), False, detail, 0.0, verdict=Verdict.NOT_APPLICABLE, source=source, links=links
        )
    return CheckRecord(REVISIONS_CHECK, ("SRV-03",), not missing, detail, 0.0, source=source, links=links)


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
    profile: str = "shadowcode",
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
        profile: the profile that ran (``"shadowcode"`` or ``"generic"``), which decides how the
            SRV-03 record judges a server of one era (:func:`revisions_record`).

    Returns:
        ``{"target": [str], "profile": str, "engine": str, "generated_at": int,
        "summary": {"pass", "fail", "not_covered"},
        "verdicts": {"pass", "fail", "warn", "not_applicable", "expected_fail", "expected_warn", "not_run"},
        "protocol_revisions": {label: revision},
        "results": [{"id", "status", "checks", "expected_fail", "warn"}],
        "checks": [{"name", "covers", "ok", "status", "verdict", "weight", "source", "detail",
        "seconds"} (+ "reason", "not_run")],
        "expected_failures": [{"check", "reason", "outcome"} (+ "weight")]}``. ``results``
        lists every manifest id in manifest order; its ``checks`` are the checks that decided
        the status, ``expected_fail`` the baselined ones left out of it and ``warn`` the
        counted checks that warned. A check's ``verdict`` is ``"pass"``, ``"fail"``, ``"warn"``,
        ``"not_applicable"`` or ``"not_run"``; its ``status`` is the verdict, or
        ``"expected_fail"`` / ``"expected_warn"`` (with the baseline ``reason``) when the
        baseline lists it. An ``outcome`` is ``"failed_as_expected"``, ``"warned_as_expected"``,
        ``"stale"`` (the check passed or was not applicable), ``"passed_this_time"`` (the check
        passed and its entry is ``racy``), ``"wrong_weight"`` (the entry's
        weight is not the check's) or ``"unknown"`` (no check of that name ran). A check that
        was not run counts for no id, and its baseline entry is left out; one that was not
        applicable counts for no id either. ``summary`` counts ids, ``verdicts`` checks.
    """
    all_records = list(records)
    synthesized = revisions_record(all_records, revisions, profile)
    if synthesized is not None:
        all_records.append(synthesized)
    entries = {e.check: e for e in expected_failures}
    findings = (Verdict.FAIL, Verdict.WARN)
    excused = {r.name for r in all_records if r.judged in findings and r.name in entries}
    uncounted = {r.name for r in all_records if r.judged in (NOT_RUN, Verdict.NOT_APPLICABLE)}
    checks: list[dict[str, Any]] = []
    for r in all_records:
        row = r.as_json()
        if r.name in excused:
            row["status"] = "expected_fail" if r.judged == Verdict.FAIL else "expected_warn"
            row["reason"] = entries[r.name].reason
        checks.append(row)
    results: list[dict[str, Any]] = []
    summary = {"pass": 0, "fail": 0, "not_covered": 0}
    for requirement in REQUIREMENTS:
        covering = [r for r in all_records if requirement.id in r.covers and r.name not in uncounted]
        counted = [r for r in covering if r.name not in excused]
        if not counted:
            status = "not_covered"
        elif any(r.judged == Verdict.FAIL for r in counted):
            status = "fail"
        else:
            status = "pass"
        summary[status] += 1
        results.append(
            {
                "id": requirement.id,
                "status": status,
                "checks": [r.name for r in counted],
                "expected_fail": [r.name for r in covering if r.name in excused],
                "warn": [r.name for r in counted if r.judged == Verdict.WARN],
            }
        )
    outcomes = {r.name: _outcome(r, entries.get(r.name)) for r in all_records}
    not_run = {r.name for r in all_records if r.not_run}
    baseline: list[dict[str, str]] = []
    for e in expected_failures:
        if (e.check in outcomes and e.check not in not_run) or (e.check not in outcomes and not filtered_out(e.check)):
            entry = {"check": e.check, "reason": e.reason, "outcome": outcomes.get(e.check, "unknown")}
            if e.weight:
                entry["weight"] = e.weight
            baseline.append(entry)
    statuses = [c["status"] for c in checks]
    verdicts = {k: statuses.count(k) for k in ("pass", "fail", "warn", "not_applicable")}
    verdicts |= {k: statuses.count(k) for k in ("expected_fail", "expected_warn", NOT_RUN)}
    report: dict[str, Any] = {
        "target": list(target),
        "profile": profile,
        "engine": engine,
        "generated_at": int(generated_at),
        "summary": summary,
        "verdicts": verdicts,
        "protocol_revisions": dict(sorted(revisions.items())),
        "results": results,
        "checks": checks,
        "expected_failures": baseline,
    }
    if url is not None:
        report["url"] = url
    return report


def _outcome(record: CheckRecord, entry: ExpectedFailure | None) -> str:
    """A baseline entry's outcome for the record of its check (see :func:`build_report`)."""
    verdict = record.judged
    if verdict not in (Verdict.FAIL, Verdict.WARN):
        return "passed_this_time" if entry is not None and entry.racy and verdict == Verdict.PASS else "stale"
    if entry is not None and entry.weight and entry.weight != record.weight:
        return "wrong_weight"
    return "failed_as_expected" if verdict == Verdict.FAIL else "warned_as_expected"


_EXPECTED_OUTCOMES = ("failed_as_expected", "warned_as_expected", "passed_this_time")


def report_failed(report: Mapping[str, Any]) -> bool:
    """Whether the run fails: a check failed outside the baseline, a check asked for could not run
    (unavailable), or a baseline entry is stale, unknown or of the wrong weight. A warn, a check
    not applicable and one not asked for never fail the run.

    Args:
        report: a document from :func:`build_report`.

    Returns:
        True when the exit status must be 1 (CONF-01).
    """
    if any(c["status"] == "fail" or c.get("not_run") == UNAVAILABLE for c in report["checks"]):
        return True
    return any(e["outcome"] not in _EXPECTED_OUTCOMES for e in report.get("expected_failures", []))


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


_MARK = {"pass": "pass", "fail": "**FAIL**", "not_covered": "not covered"}
_CHECK_MARK = {
    "pass": "pass",
    "fail": "**FAIL**",
    "warn": "warn",
    "not_applicable": "n/a",
    "expected_fail": "expected fail",
    "expected_warn": "expected warn",
    "not_run": "not run",
}
_OUTCOME = {
    "failed_as_expected": "failed as expected",
    "warned_as_expected": "warned as expected",
    "passed_this_time": "passed this time (a racy entry: the target fails it in most runs)",
    "stale": "**STALE**: it passed or did not apply, remove it from the baseline",
    "wrong_weight": "**WRONG WEIGHT**: the check's weight differs, fix the entry",
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
    counts = {k: statuses.count(k) for k in _CHECK_MARK}
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
        f"- Checks: {counts['pass']} passed, {counts['fail']} failed, {counts['warn']} warned, "
        f"{counts['not_applicable']} not applicable, {counts['expected_fail']} expected failures, "
        f"{counts['expected_warn']} expected warnings, {counts['not_run']} not run",
        "",
        "A check's weight is `must` (a requirement of the text named as its source: failing it fails the run), "
        "`should` or `robustness` (reported as warn, never a failure); n/a means the rule does not apply "
        "to this server, for the reason given.",
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
        lines += ["| Check | Outcome | Weight | Reason |", "|---|---|---|---|"]
        lines += [
            f"| `{_cell(e['check'])}` | {_OUTCOME[e['outcome']]} | {e.get('weight') or '-'} | {_cell(e['reason'])} |"
            for e in baseline
        ]
    else:
        lines.append("None listed.")
    lines += ["", "## Requirements", "", "| Id | Status | Summary | Checks |", "|---|---|---|---|"]
    for row in report["results"]:
        warned = set(row.get("warn", []))
        names = [f"`{n}`" + (" (warn)" if n in warned else "") for n in row["checks"]]
        names += [f"`{n}` (expected fail)" for n in row.get("expected_fail", [])]
        checks = ", ".join(names) or "-"
        lines.append(f"| {row['id']} | {_MARK[row['status']]} | {_cell(summaries.get(row['id'], ''))} | {checks} |")
    lines += [
        "",
        "## Checks",
        "",
        "| Check | Verdict | Weight | Seconds | Covers | Reason | Source |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in report["checks"]:
        result = _CHECK_MARK[c["status"]]
        if c.get("not_run") == UNAVAILABLE:
            result = "**NOT RUN**"
        detail = c["detail"] if "reason" not in c else f"{c['detail']} (baseline: {c['reason']})"
        covers = ", ".join(c["covers"]) or "-"
        source = c.get("source") or "-"
        lines.append(
            f"| `{_cell(c['name'])}` | {result} | {c.get('weight', 'must')} | {c['seconds']:.2f} | {covers} "
            f"| {_cell(detail)} | {_cell(source)} |"
        )
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
