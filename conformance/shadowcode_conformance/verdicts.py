"""How much a finding matters: each check's weight and source, and the verdict it comes to (CONF-01).

A check states the **weight** of the rule it proves and where that rule is written (its
**source**):

* ``must``: a requirement of a specification the server claims (a MUST of an MCP revision it
  negotiated, of JSON-RPC 2.0 that MCP builds on, or of the ShadowCode contract in the
  ShadowCode profile), the section linked;
* ``should``: a recommendation of such a text (SHOULD, RECOMMENDED);
* ``robustness``: what well-behaved servers do beyond the text (answer a line that is not
  JSON, survive a duplicate id, exit when the client goes away).

Its result comes to one **verdict**, always with its reason:

* ``pass``: the rule held;
* ``fail``: a ``must`` rule was broken; it fails the run unless a baseline lists it;
* ``warn``: a ``should`` or ``robustness`` rule was broken; reported, never a failure;
* ``not_applicable``: the rule does not apply to this server (a revision or an extension it
  does not claim, a fixture only the reference test server has, a transport it does not
  have); reported with the reason, counted for nothing, never a pass.

The official ``@modelcontextprotocol/conformance`` package's statuses map onto the same words
(:data:`OFFICIAL_STATUS`).
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "JSONRPC",
    "OFFICIAL_STATUS",
    "SPEC",
    "Verdict",
    "Weight",
    "judge",
    "spec",
]


class Weight(enum.StrEnum):
    """How much the rule a check proves matters (CONF-01)."""

    MUST = "must"
    """A requirement of a specification the server claims: breaking it fails the check."""

    SHOULD = "should"
    """A recommendation of such a specification: breaking it warns."""

    ROBUSTNESS = "robustness"
    """Beyond the text, what well-behaved servers do: breaking it warns."""


class Verdict(enum.StrEnum):
    """What a check came to (CONF-01)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    NOT_APPLICABLE = "not_applicable"


def judge(ok: bool, weight: str) -> Verdict:
    """The verdict of a check that ran and applied: ``pass`` when ``ok``; else ``fail`` for a
    ``must`` rule and ``warn`` for a ``should`` or ``robustness`` one (CONF-01).

    Raises:
        ValueError: ``weight`` is not one of :class:`Weight`.
    """
    if Weight(weight) is Weight.MUST:
        return Verdict.PASS if ok else Verdict.FAIL
    return Verdict.PASS if ok else Verdict.WARN


OFFICIAL_STATUS: Final[dict[str, Verdict]] = {
    "SUCCESS": Verdict.PASS,
    "WARNING": Verdict.WARN,
    "FAILURE": Verdict.FAIL,
    "SKIPPED": Verdict.NOT_APPLICABLE,
    "INFO": Verdict.NOT_APPLICABLE,
}
"""The official conformance package's check statuses as verdicts: SKIPPED (the package found the
rule not applicable) and INFO (informational, nothing judged) are both not applicable."""

SPEC: Final = "https://modelcontextprotocol.io/specification"
"""Where the MCP specification's revisions are published."""

JSONRPC: Final = "https://www.jsonrpc.org/specification"
"""The JSON-RPC 2.0 specification, which every MCP revision builds on."""


def spec(revision: str, section: str) -> str:
    """The URL of a section of one MCP revision: ``spec("2025-11-25", "basic/transports#stdio")``."""
    return f"{SPEC}/{revision}/{section}"
