"""The official package's results as the suite's verdicts (CONF-01).

The ``@modelcontextprotocol/conformance`` package judges each of its checks SUCCESS, WARNING,
FAILURE, SKIPPED or INFO; :data:`~shadowcode_conformance.verdicts.OFFICIAL_STATUS` maps those onto pass,
warn, fail and not applicable. Three more things decide a verdict here, each with its reason:

* **The reference test server's fixtures.** Most server scenarios call tools, prompts and
  resources only the package's own test server has (``test_simple_text``, ``slow_compute``,
  ``test://static-text``...). Against a server that does not offer them they fail with "unknown
  tool" or "not testable", which says nothing about the server. A scenario in
  :data:`REFERENCE_FIXTURES` whose fixtures the server does not list is not applicable as a
  whole (its checks that need no fixture excepted), successes included: a check that passed
  because the call was refused proves nothing. Any other check whose message says it could not
  be exercised (``Not testable``, ``Prerequisite failed``, an unknown fixture) is not
  applicable too.
* **Requirement sets.** With ``--requirements 2026-07-28`` the package says which scenarios the
  revision requires (scored) and which it only runs: ``extension`` scenarios (the tasks
  extension) apply only to a server that claims the extension; ``pending`` ones are not part of
  the revision as released, so their failures warn (weight robustness).
* **The stdio bridge** (:mod:`shadowcode_conformance.bridge`). Through it, a scenario of the HTTP transport
  itself (Host and Origin checks, SSE streams, HTTP status mapping, routing headers) would judge
  the bridge, so it is not applicable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from shadowcode_conformance.registry import SubResult
from shadowcode_conformance.verdicts import OFFICIAL_STATUS, Verdict, Weight

__all__ = [
    "BRIDGE_NOT_APPLICABLE",
    "CAPABILITY_SCENARIOS",
    "CHECK_FIXTURES",
    "REFERENCE_FIXTURES",
    "Fixtures",
    "RequirementSet",
    "judge_requirement_set",
    "missing_capability",
    "scenario_verdict",
]

_DETAIL_CHARS: Final = 300


@dataclass(frozen=True)
class Fixtures:
    """What a server scenario needs of the reference test server.

    Attributes:
        needs: tool names, ``prompt:NAME`` and resource URIs it calls.
        free: ids of the scenario's checks that need none of them.
    """

    needs: tuple[str, ...]
    free: tuple[str, ...] = ()


_TASKS: Final = ("greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input")

REFERENCE_FIXTURES: Final[dict[str, Fixtures]] = {
    "completion-complete": Fixtures(("prompt:test_prompt_with_arguments",)),
    "tools-call-simple-text": Fixtures(("test_simple_text",)),
    "tools-call-image": Fixtures(("test_image_content",)),
    "tools-call-audio": Fixtures(("test_audio_content",)),
    "tools-call-embedded-resource": Fixtures(("test_embedded_resource",)),
    "tools-call-mixed-content": Fixtures(("test_multiple_content_types",)),
    "tools-call-error": Fixtures(("test_error_handling",)),
    "tools-call-with-progress": Fixtures(("test_tool_with_progress",)),
    "tools-call-with-logging": Fixtures(("test_tool_with_logging",)),
    "tools-call-sampling": Fixtures(("test_sampling",)),
    "tools-call-elicitation": Fixtures(("test_elicitation",)),
    "resources-read-text": Fixtures(("test://static-text",)),
    "resources-read-binary": Fixtures(("test://static-binary",)),
    "resources-templates-read": Fixtures(("test://template/123/data",)),
    "resources-subscribe": Fixtures(("test://watched-resource",)),
    "resources-unsubscribe": Fixtures(("test://watched-resource",)),
    "prompts-get-simple": Fixtures(("prompt:test_simple_prompt",)),
    "prompts-get-with-args": Fixtures(("prompt:test_prompt_with_arguments",)),
    "prompts-get-embedded-resource": Fixtures(("prompt:test_prompt_with_embedded_resource",)),
    "prompts-get-with-image": Fixtures(("prompt:test_prompt_with_image",)),
    "input-required-result-basic-elicitation": Fixtures(("test_input_required_result_elicitation",)),
    "input-required-result-basic-sampling": Fixtures(("test_input_required_result_sampling",)),
    "input-required-result-basic-list-roots": Fixtures(("test_input_required_result_list_roots",)),
    "input-required-result-request-state": Fixtures(("test_input_required_result_request_state",)),
    "input-required-result-multiple-input-requests": Fixtures(("test_input_required_result_multiple_inputs",)),
    "input-required-result-multi-round": Fixtures(("test_input_required_result_multi_round",)),
    "input-required-result-missing-input-response": Fixtures(("test_input_required_result_elicitation",)),
    "input-required-result-non-tool-request": Fixtures(("prompt:test_input_required_result_prompt",)),
    "input-required-result-result-type": Fixtures(("test_input_required_result_elicitation",)),
    "input-required-result-tampered-state": Fixtures(("test_input_required_result_tampered_state",)),
    "input-required-result-capability-check": Fixtures(("test_input_required_result_capabilities",)),
    "input-required-result-ignore-extra-params": Fixtures(("test_input_required_result_elicitation",)),
    "input-required-result-validate-input": Fixtures(("test_input_required_result_elicitation",)),
    "json-schema-2020-12": Fixtures(("json_schema_2020_12_tool",)),
    "tasks-lifecycle": Fixtures(_TASKS[:4]),
    "tasks-capability-negotiation": Fixtures(
        ("greet", "slow_compute"), free=("tasks-extension-advertised", "sep-2663-tasks-methods-non-declaring")
    ),
    "tasks-wire-fields": Fixtures(("slow_compute",)),
    "tasks-request-state-removal": Fixtures(("slow_compute",)),
    "tasks-mrtr-input": Fixtures(("confirm_delete", "multi_input")),
    "tasks-request-headers": Fixtures(("greet", "slow_compute")),
    "tasks-dispatch-and-envelope": Fixtures(
        ("greet", "slow_compute", "failing_job", "confirm_delete"),
        free=(
            "sep-2663-tasks-result-removed-method-not-found",
            "tasks-removed-tasks-list",
            "sep-2663-tasks-get-invalid-task-id-32602",
        ),
    ),
    "tasks-required-task-error": Fixtures(("failing_job",)),
    "tasks-mrtr-composition": Fixtures(("test_tool_with_task",)),
}
"""Server scenarios of packages 0.1.16 and 0.2.0-alpha.12 that call the reference test server's
fixtures (read from the scenarios' sources), and their checks that need none."""

CHECK_FIXTURES: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): ("test_missing_capability",),
    ("server-stateless", "sep-2575-missing-capability-http-400"): ("test_missing_capability",),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"): ("test_streaming_elicitation",),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): ("test_logging_tool",),
    ("server-stateless", "sep-2575-server-tags-subscription-id"): ("test_trigger_tool_change",),
    ("server-stateless", "sep-2575-server-honors-notification-filter"): ("test_trigger_tool_change",),
    ("server-stateless", "sep-2575-server-sends-tools-list-changed-on-subscription"): ("test_trigger_tool_change",),
    ("server-stateless", "sep-2575-server-sends-prompts-list-changed-on-subscription"): ("test_trigger_prompt_change",),
}
"""Single checks of otherwise fixture-free scenarios that call a diagnostic tool of the reference
test server. Without it the package's verdict says nothing about the server: e.g. a server that
answers an unknown tool with an ``isError`` result (as the Python SDK does) is judged to have
"executed ``test_missing_capability``"."""

CAPABILITY_SCENARIOS: Final[dict[str, str]] = {
    "tools-list": "tools",
    "resources-list": "resources",
    "prompts-list": "prompts",
    "completion-complete": "completions",
}
"""Server scenarios that need a capability the server may leave out (a server without it answers -32601,
as it should), and that capability."""


def missing_capability(scenario: str, capabilities: Mapping[str, Any]) -> str:
    """Why ``scenario`` does not apply to a server declaring ``capabilities``, or ``""`` (CONF-01)."""
    wanted = CAPABILITY_SCENARIOS.get(scenario, "")
    if wanted and wanted not in capabilities:
        return f"the server declares no {wanted} capability, which the scenario needs"
    return ""


_TRANSPORT_SCENARIOS: Final = frozenset(
    {
        "dns-rebinding-protection",
        "server-sse-multiple-streams",
        "server-sse-polling",
        "http-header-validation",
        "http-custom-header-server-validation",
        "tasks-request-headers",
    }
)
_HEADER_ONLY_CHECKS: Final = frozenset(
    {"sep-2575-request-meta-invalid-missing-meta", "sep-2575-request-meta-invalid-missing-protocol-version"}
)

BRIDGE_NOT_APPLICABLE: Final = (
    "a rule of the HTTP transport (Host, Origin, headers, streams, status codes): through the stdio "
    "bridge it would judge the bridge, not the stdio server"
)
"""Why a transport scenario or check is not applicable through the stdio bridge."""

_UNTESTABLE: Final = re.compile(
    r"not testable|prerequisite failed|fixture .*unavailable|was not observed|no task was created"
    r"|unknown (tool|prompt|resource) '|tool '[^']+' not found",
    re.IGNORECASE,
)


def _reason(check: Mapping[str, Any]) -> str:
    found = check.get("details")
    details: Mapping[str, Any] = cast("Mapping[str, Any]", found) if isinstance(found, Mapping) else {}
    text = str(check.get("errorMessage") or details.get("note") or details.get("reason") or "")
    return " ".join(text.split())[:_DETAIL_CHARS]


def _sources(check: Mapping[str, Any], fallback: str) -> str:
    refs: list[object] = check.get("specReferences") or []
    links = [cast("Mapping[str, Any]", r) for r in refs if isinstance(r, Mapping)]
    urls = [str(r.get("url")) for r in links if r.get("url")]
    return " ; ".join(dict.fromkeys(urls)) or fallback


def _missing(fixtures: Fixtures, inventory: Iterable[str]) -> list[str]:
    """The fixtures the server does not offer (a resource may be offered by a matching template)."""
    offered = set(inventory)
    prefixes = [t.split("{", 1)[0] for t in offered if "{" in t and t.split("{", 1)[0]]
    return [
        need
        for need in fixtures.needs
        if need not in offered and not (need.startswith("test://") and any(need.startswith(p) for p in prefixes))
    ]


def scenario_verdict(checks: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """One scenario of the package as one verdict: fail when a check is FAILURE, else warn when one is
    WARNING, else pass when one is SUCCESS, else not applicable (only SKIPPED or INFO) (CONF-01).

    Returns:
        (verdict, detail): the detail names every check that is not SUCCESS with its mapped word.
    """
    verdicts = [OFFICIAL_STATUS.get(str(c.get("status")), Verdict.FAIL) for c in checks]
    notes = [
        f"{c.get('id')} {c.get('status')}->{v}" + (f" ({_reason(c)})" if _reason(c) else "")
        for c, v in zip(checks, verdicts, strict=True)
        if v != Verdict.PASS
    ]
    if Verdict.FAIL in verdicts:
        verdict = Verdict.FAIL
    elif Verdict.WARN in verdicts:
        verdict = Verdict.WARN
    elif Verdict.PASS in verdicts:
        verdict = Verdict.PASS
    else:
        verdict = Verdict.NOT_APPLICABLE
    passed = verdicts.count(Verdict.PASS)
    return verdict, "; ".join([f"{passed} package check(s) SUCCESS", *notes])


@dataclass(frozen=True)
class RequirementSet:
    """A requirement set of the package (``requirements/<revision>.yaml``).

    Attributes:
        revision: e.g. ``"2026-07-28"``.
        scored: server scenarios the revision requires.
        not_scored: server scenario to why it is run but not scored (``extension``, ``pending``).
    """

    revision: str
    scored: frozenset[str]
    not_scored: Mapping[str, str]


def judge_requirement_set(
    prefix: str,
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    requirements: RequirementSet,
    *,
    inventory: Iterable[str],
    extensions: Iterable[str],
    bridged: bool,
    covers: Mapping[str, tuple[str, ...]],
    package: str,
    capabilities: Mapping[str, Any] | None = None,
) -> list[SubResult]:
    """Every check of every scenario of a requirement-set run as a sub-check with its verdict (CONF-01).

    Args:
        prefix: the sub-checks' name prefix, e.g. ``"official:2026-07-28"``; a sub-check is
            ``<prefix>:<scenario>:<check id>`` (``#2``, ``#3`` for a repeated id).
        results: scenario to the package's checks (``checks.json``).
        requirements: the set's scored and not-scored scenarios.
        inventory: what the server offers: tool names, ``prompt:NAME``, resource URIs and templates.
        extensions: the extensions the server claims (``capabilities.extensions`` of its discover
            result, or what its contract requires).
        bridged: the server is reached through :class:`~shadowcode_conformance.bridge.StdioBridge`.
        covers: scenario to ids; ``"*"`` for the rest.
        package: the package and version, named in each source.
        capabilities: the server's declared capabilities; a scenario needing one it leaves out
            (:data:`CAPABILITY_SCENARIOS`) is not applicable. None: not known, nothing left out.

    Returns:
        The sub-results, scenarios in name order, checks in the package's order.
    """
    found: list[SubResult] = []
    claimed = set(extensions)
    offered = list(inventory)
    for scenario in sorted(results):
        checks = results[scenario]
        ids = covers.get(scenario, covers.get("*", ()))
        why_not = requirements.not_scored.get(scenario, "")
        scenario_fixtures = REFERENCE_FIXTURES.get(scenario)
        seen: dict[str, int] = {}
        for check in checks:
            ident = str(check.get("id"))
            fixtures = scenario_fixtures
            if fixtures is None and (scenario, ident) in CHECK_FIXTURES:
                fixtures = Fixtures(CHECK_FIXTURES[(scenario, ident)])
            missing = _missing(fixtures, offered) if fixtures else []
            seen[ident] = seen.get(ident, 0) + 1
            name = f"{prefix}:{scenario}:{ident}" + (f"#{seen[ident]}" if seen[ident] > 1 else "")
            status = str(check.get("status"))
            verdict = OFFICIAL_STATUS.get(status, Verdict.FAIL)
            weight = Weight.SHOULD if status == "WARNING" else Weight.MUST
            reason = _reason(check)
            detail = f"{status}" + (f": {reason}" if reason else "")
            if why_not == "pending":
                weight = Weight.ROBUSTNESS
                if verdict == Verdict.FAIL:
                    verdict = Verdict.WARN
                detail += f" (pending in {package}: not part of {requirements.revision} as released)"
            applies = _applies(scenario, ident, why_not, claimed, missing, fixtures, bridged)
            if not applies and capabilities is not None:
                applies = missing_capability(scenario, capabilities)
            if applies:
                verdict, detail = Verdict.NOT_APPLICABLE, f"{applies}; the package said {detail}"
            elif verdict == Verdict.NOT_APPLICABLE:
                detail = f"{detail or status}: " + (
                    "the package found the rule not applicable" if status == "SKIPPED" else "informational only"
                )
            elif verdict != Verdict.PASS and _UNTESTABLE.search(reason):
                verdict = Verdict.NOT_APPLICABLE
                detail = f"could not be exercised against this server: {detail}"
            source = _sources(check, package) + f" ({package}, scenario {scenario})"
            found.append(SubResult(name, ids, verdict == Verdict.PASS, detail, verdict, weight, source))
    return found


def _applies(
    scenario: str,
    ident: str,
    why_not: str,
    claimed: set[str],
    missing: list[str],
    fixtures: Fixtures | None,
    bridged: bool,
) -> str:
    """Why a check does not apply to this server, or ``""`` when it does."""
    if why_not == "extension" and not claimed & {"io.modelcontextprotocol/tasks"}:
        return "the io.modelcontextprotocol/tasks extension, which the server does not claim (optional, SEP-1730)"
    if bridged and (scenario in _TRANSPORT_SCENARIOS or "-http-" in ident or ident in _HEADER_ONLY_CHECKS):
        return BRIDGE_NOT_APPLICABLE
    if missing and fixtures is not None and ident not in fixtures.free:
        named = ", ".join(missing)
        return f"needs the reference test server's fixture(s) {named}, which this server does not offer"
    return ""
