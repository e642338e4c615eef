"""The run as JUnit XML, for CI systems that show test reports (``--junit FILE``).

Built from the same report document as ``report.json`` (:func:`shadowcode_conformance.report.build_report`),
with the standard library's :mod:`xml.etree.ElementTree`. Two test suites:

* ``conformance.checks``: one test case per check that ran (probe sub-checks included),
  ``classname`` its group (the part before ``:``), ``time`` its seconds. A failed check has a
  ``<failure>`` whose message is the first line of its detail; an expected failure (listed in
  the baseline) is ``<skipped>`` with the baseline's reason. A check that was **not applicable**
  is ``<skipped>`` whose message starts ``not applicable:`` and gives the reason: JUnit has no
  such state, and every consumer (Jenkins, GitLab, GitHub's test reporters, IDEs) shows a
  skipped case's message without counting it as a failure. A check that **warned** is a passing
  case with the finding in ``<system-out>`` (``warn (should): ...``): JUnit has no warning state,
  a ``<failure>`` would fail the build, and ``<system-out>`` is what those consumers show on the
  case's page; the ``verdict`` property (``warn``) says it for a machine. A check not run because
  the run was not given what it needs (``--target``, ``--url``) is ``<skipped>``; one that was
  asked for but could not run (Node 22 or the official package missing) is a ``<failure>`` of
  type ``not run``. Each case carries the properties ``covers`` (the requirement ids it proves),
  ``verdict``, ``weight`` and ``source``. Baseline entries that are stale, unknown or of the
  wrong weight fail the run, so each becomes a failing case named ``baseline:<check>``.
* ``conformance.requirements``: one test case per requirement id in contract order: pass,
  ``<failure>`` naming the failing checks, or ``<skipped>`` when not covered.

Characters XML 1.0 cannot carry (most control characters) are replaced by ``?``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["render_junit", "write_junit"]

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_BAD_OUTCOMES = {
    "stale": "it passed or did not apply: remove it from the baseline",
    "unknown": "no check of this name ran",
    "wrong_weight": "the entry's weight is not the check's: fix the entry",
}
_MESSAGE_MAX_CHARS = 300


def _clean(text: Any) -> str:
    return _NOT_XML.sub("?", str(text))


def _message(text: Any) -> str:
    first = _clean(text).strip().splitlines()
    return first[0][:_MESSAGE_MAX_CHARS] if first else ""


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", {"name": name})


def _finish(suite: ET.Element) -> tuple[int, int, int, float]:
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    seconds = sum(float(c.get("time", "0")) for c in cases)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suite.set("time", f"{seconds:.3f}")
    return len(cases), failures, skipped, seconds


def render_junit(report: Mapping[str, Any]) -> bytes:
    """The JUnit XML document of a report (CONF-01).

    Args:
        report: a document from :func:`shadowcode_conformance.report.build_report`.

    Returns:
        UTF-8 bytes starting with an XML declaration; the root is ``<testsuites>``.
    """
    root = ET.Element("testsuites", {"name": "conformance"})
    checks = _suite(root, "conformance.checks")
    props = ET.SubElement(checks, "properties")
    ET.SubElement(props, "property", {"name": "target", "value": _clean(" ".join(report.get("target", [])))})
    ET.SubElement(props, "property", {"name": "engine", "value": _clean(report.get("engine", ""))})
    for record in report.get("checks", []):
        name = _clean(record["name"])
        case = ET.SubElement(
            checks,
            "testcase",
            {"classname": name.split(":", 1)[0], "name": name, "time": f"{float(record.get('seconds', 0)):.3f}"},
        )
        props = ET.SubElement(case, "properties")
        for key, value in (
            ("covers", ",".join(record.get("covers", []))),
            ("verdict", record.get("verdict", "")),
            ("weight", record.get("weight", "")),
            ("source", record.get("source", "")),
            ("links", " ".join(record.get("links", []))),
        ):
            ET.SubElement(props, "property", {"name": key, "value": _clean(value)})
        detail = _clean(record.get("detail", ""))
        status = record.get("status")
        if status == "fail":
            ET.SubElement(case, "failure", {"message": _message(detail), "type": "check failed"}).text = detail
        elif record.get("status") == "not_run" and record.get("not_run") == "unavailable":
            ET.SubElement(case, "failure", {"message": _message(detail), "type": "not run"}).text = detail
        elif record.get("status") == "not_run":
            ET.SubElement(case, "skipped", {"message": f"not run: {_message(detail)}"[:_MESSAGE_MAX_CHARS]})
        elif status == "expected_fail":
            reason = _clean(record.get("reason", ""))
            ET.SubElement(
                case, "skipped", {"message": f"expected failure: {reason}"[:_MESSAGE_MAX_CHARS]}
            ).text = detail
        elif status == "not_applicable":
            ET.SubElement(case, "skipped", {"message": f"not applicable: {_message(detail)}"[:_MESSAGE_MAX_CHARS]})
        elif status in ("warn", "expected_warn"):
            known = f" (expected: {_clean(record.get('reason', ''))})" if status == "expected_warn" else ""
            ET.SubElement(case, "system-out").text = f"warn ({_clean(record.get('weight', ''))}): {detail}{known}"
        else:
            ET.SubElement(case, "system-out").text = detail
    for entry in report.get("expected_failures", []):
        if entry.get("outcome") in _BAD_OUTCOMES:
            name = f"baseline:{_clean(entry['check'])}"
            case = ET.SubElement(checks, "testcase", {"classname": "baseline", "name": name, "time": "0.000"})
            why = _BAD_OUTCOMES[entry["outcome"]]
            ET.SubElement(case, "failure", {"message": f"{entry['outcome']} baseline entry: {why}", "type": "baseline"})
    requirements = _suite(root, "conformance.requirements")
    for row in report.get("results", []):
        case = ET.SubElement(requirements, "testcase", {"classname": "requirements", "name": row["id"], "time": "0"})
        if row["status"] == "fail":
            named = ", ".join(row.get("checks", []))
            ET.SubElement(case, "failure", {"message": f"failing checks among: {named}"[:_MESSAGE_MAX_CHARS]})
        elif row["status"] == "not_covered":
            ET.SubElement(case, "skipped", {"message": "no counted check covers this id"})
    totals = [_finish(checks), _finish(requirements)]
    root.set("tests", str(sum(t[0] for t in totals)))
    root.set("failures", str(sum(t[1] for t in totals)))
    root.set("errors", "0")
    root.set("skipped", str(sum(t[2] for t in totals)))
    root.set("time", f"{totals[0][3]:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: Path, report: Mapping[str, Any]) -> Path:
    """Write :func:`render_junit` of ``report`` to ``path`` (parent folders created); returns the path.

    Raises:
        OSError: the file could not be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render_junit(report))
    return path
