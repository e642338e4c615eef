"""The official ``@modelcontextprotocol/conformance`` scenarios as checks of the run (``--official``).

Selected only with ``--official``; each scenario is a check of its own, named after it:

* ``official:server:<scenario>`` (both profiles): package 0.1.16's server scenario run against
  the ShadowCode gateway the check starts (``<target> mcp serve --http 127.0.0.1:0``, behind a
  loopback proxy that adds its bearer token, which the package cannot send), or, in the
  generic profile, against ``--url`` (through the same proxy when ``--bearer-env`` is given),
  or, given only ``--target``, against the stdio server served over loopback Streamable HTTP by
  :class:`~shadowcode_conformance.bridge.StdioBridge`. Only scenarios any server with a fixed tool set can
  pass are run: the others need the package's own test tools, resources and prompts
  (``test_simple_text``, ...). They speak 2025-06-18 or 2025-11-25 through ``initialize``: a
  server whose ``initialize`` lands on neither gets them as not applicable.
* ``official:2026-07-28`` (both profiles, the same endpoint): package 0.2.0-alpha.12 with
  ``--requirements 2026-07-28``, every server scenario that revision requires and those it only
  runs, in one process. Each package check becomes a sub-check
  ``official:2026-07-28:<scenario>:<check id>`` with its own verdict
  (:func:`~shadowcode_conformance.official_verdicts.judge_requirement_set`): a scenario needing the
  reference test server's fixtures, an extension the server does not claim, or (through the
  bridge) a rule of the HTTP transport is not applicable, with the reason. A server that does
  not claim 2026-07-28 (``server/discover`` does not name it) gets the check as not applicable.
  In the ShadowCode profile the tasks extension applies whatever the server advertises:
  ShadowCode serves it on 2026-07-28 connections by contract (SRV-26), so its absence fails.
* ``official:client:<scenario>`` and ``official:auth:<name>`` (ShadowCode profile): the
  package's client scenarios, the client being ShadowCode's command line driven by
  ``conformance/shadowcode_conformance/official_client.py``.

The package's statuses map onto the suite's verdicts (:mod:`shadowcode_conformance.verdicts`): a scenario
with a FAILURE fails, one with a WARNING (and no FAILURE) warns, one with only SKIPPED or INFO is
not applicable, and it passes when it made a judged check and every one is SUCCESS (and, for a
client scenario, the adapter finished). Scenarios known to fail are listed in the
expected-failures baseline like any other check. Two rules need more than that, so they are
checks of their own:

* ``official:server:dns-rebinding-protection:foreign_host_refused`` (GW-04): a foreign Host
  is refused (with 421 by the ShadowCode gateway: the Host rule comes before the Origin rule,
  which shows the proxy let the Host through unchanged);
* ``official:client:sse-retry:never_resumed`` (CLI-18): the tool call was sent once and the
  closed stream never resumed (:func:`shadowcode_conformance.official_judge.never_resumed`).

Without Node 22 or the package each check is "not run" (and the run fails), naming
``bash ci/setup``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

from shadowcode_conformance.bridge import StdioBridge
from shadowcode_conformance.checks.gateway import start_gateway
from shadowcode_conformance.context import MODERN_REVISION, Context
from shadowcode_conformance.json_values import json_member
from shadowcode_conformance.official import (
    ALPHA_VERSION,
    PACKAGE_VERSION,
    BearerProxy,
    ScenarioRun,
    installed,
    probe,
    run_requirement_set,
)
from shadowcode_conformance.official import run_client_scenario as _run_client
from shadowcode_conformance.official import run_server_scenario as _run_server
from shadowcode_conformance.official_judge import never_resumed
from shadowcode_conformance.official_verdicts import (
    BRIDGE_NOT_APPLICABLE,
    judge_requirement_set,
    missing_capability,
    scenario_verdict,
)
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, SubResult, check
from shadowcode_conformance.verdicts import Verdict, spec

__all__ = ["AUTH_SCENARIOS", "CLIENT_SCENARIOS", "SERVER_SCENARIOS", "requirement_set_2026"]
SERVER_SCENARIOS: Final[dict[str, tuple[str, ...]]] = {
    "server-initialize": ("GW-05",),
    "ping": ("GW-05",),
    "tools-list": ("GW-05",),
    "resources-list": ("GW-05",),
    "prompts-list": ("GW-05",),
    "dns-rebinding-protection": ("GW-04",),
}
"""Server scenarios run, and the ids each proves."""

CLIENT_SCENARIOS: Final[dict[str, tuple[str, ...]]] = {
    "initialize": ("CLI-16",),
    "tools_call": ("CLI-16", "CLI-07", "CLI-09"),
    "sse-retry": ("CLI-18",),
}
"""Client scenarios run (besides the auth suite), and the ids each proves."""

AUTH_SCENARIOS: Final[tuple[str, ...]] = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
)
"""Every ``auth/`` client scenario package 0.1.16 lists (drafts and extensions included); each proves CW-08."""

_SERVER_SECONDS: Final = 120.0
_SET_SECONDS: Final = 240.0
_CLIENT_SECONDS: Final = 270.0
_AUTH_SECONDS: Final = 210.0
_MARGIN_SECONDS: Final = 60.0
_DNS = "dns-rebinding-protection"
_FOREIGN_HOST = "localhost-host-rebinding-rejected"
_HANDSHAKE_REVISIONS: Final = ("2025-06-18", "2025-11-25")
"""The revisions package 0.1.16's server scenarios speak."""
_TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
_SET_PREFIX: Final = f"official:{MODERN_REVISION}"
_SERVER_SOURCE: Final = (
    f"{spec('2025-11-25', 'basic/transports#streamable-http')} "
    f"(@modelcontextprotocol/conformance {PACKAGE_VERSION} server scenarios)"
)
_SET_SOURCE: Final = (
    f"{spec(MODERN_REVISION, 'basic/transports/streamable-http')} "
    f"(@modelcontextprotocol/conformance {ALPHA_VERSION} --requirements {MODERN_REVISION})"
)
_CLIENT_SOURCE: Final = f"@modelcontextprotocol/conformance {PACKAGE_VERSION} client scenarios"


def _verdict(name: str, run: ScenarioRun, *, client: str | None = None) -> CheckResult:
    """The scenario's verdict from its package checks (fail > warn > pass > not applicable); a scenario
    that judged nothing, or whose client adapter did not finish, fails."""
    judged = run.judged()
    if not run.checks:
        return CheckResult(False, f"{name}: the scenario made no check (exit {run.completed.returncode}; {run.log()})")
    verdict, detail = scenario_verdict(run.checks)
    if client is not None and judged and not run.stdout.startswith(f"{client}: "):
        return CheckResult(False, f"{name}: the client adapter did not finish (its stderr.txt in the results says why)")
    if verdict == Verdict.PASS:
        return CheckResult(True, detail + ": " + ", ".join(str(c.get("id")) for c in judged))
    if verdict == Verdict.FAIL:
        return CheckResult(False, f"{name}: {detail}")
    return CheckResult(False, f"{name}: {detail}", verdict=verdict)


def _foreign_host(ctx: Context, run: ScenarioRun) -> SubResult:
    found = [c for c in run.checks if c.get("id") == _FOREIGN_HOST]
    code = json_member(found[0], "details").get("statusCode") if found else None
    ok = bool(found) and found[0].get("status") == "SUCCESS"
    want = ""
    if ctx.profile == "shadowcode":
        ok = ok and code == 421
        want = ", expected 421 (the Host rule, before the Origin rule)"
    detail = f"{_FOREIGN_HOST}: {found[0].get('status') if found else 'missing'}, HTTP {code}{want}"
    return SubResult(f"official:server:{_DNS}:foreign_host_refused", ("GW-04",), ok, detail)


@dataclass
class _Endpoint:
    """Where the package is pointed: a URL, and whether the stdio bridge serves it."""

    url: str
    bridged: bool = False


@asynccontextmanager
async def _endpoint(ctx: Context) -> AsyncGenerator[_Endpoint | CheckResult, None]:
    """The server under test over HTTP: the gateway (ShadowCode profile), ``--url``, or the stdio
    target through :class:`~shadowcode_conformance.bridge.StdioBridge` (generic profile, ``--target`` only)."""
    if ctx.profile == "generic":
        if ctx.url and ctx.bearer:
            with BearerProxy(ctx.url, ctx.bearer) as proxy:
                yield _Endpoint(proxy.url)
        elif ctx.url:
            yield _Endpoint(ctx.url)
        elif ctx.target:
            with StdioBridge(ctx.target, ctx.env, ctx.cwd) as bridge:
                yield _Endpoint(bridge.url, bridged=True)
        else:
            yield CheckResult.not_asked("not run: official server scenarios need --url or --target")
        return
    async with start_gateway(ctx) as gw:
        with BearerProxy(gw.url, gw.token) as proxy:
            yield _Endpoint(proxy.url)


def _server_check(scenario: str) -> Callable[[Context], Awaitable[CheckResult]]:
    name = f"official:server:{scenario}"

    async def run(ctx: Context) -> CheckResult:
        tool = installed(ctx.repo_root)
        if isinstance(tool, str):
            return CheckResult.unavailable(tool)
        async with _endpoint(ctx) as where:
            if isinstance(where, CheckResult):
                return where
            if where.bridged and scenario == _DNS:
                return CheckResult.not_applicable(f"{scenario}: {BRIDGE_NOT_APPLICABLE}")
            claims = await probe(where.url)
            if claims.legacy not in _HANDSHAKE_REVISIONS:
                return CheckResult.not_applicable(
                    f"the scenario speaks {' or '.join(_HANDSHAKE_REVISIONS)} through initialize, which the server "
                    f"does not claim ({claims.said})"
                )
            if lacking := missing_capability(scenario, claims.legacy_capabilities):
                return CheckResult.not_applicable(lacking)
            got = await _run_server(ctx, tool, where.url, scenario, _SERVER_SECONDS)
        result = _verdict(name, got)
        if scenario == _DNS:
            result.subresults.append(_foreign_host(ctx, got))
        return result

    run.__doc__ = f"The official package's server scenario {scenario!r}."
    return run


async def requirement_set_2026(ctx: Context) -> CheckResult:
    """Package 0.2.0-alpha.12's ``--requirements 2026-07-28`` server scenarios, each package check a
    sub-check with its verdict; not applicable to a server that does not claim 2026-07-28."""
    tool = installed(ctx.repo_root, alpha=True)
    if isinstance(tool, str):
        return CheckResult.unavailable(tool)
    async with _endpoint(ctx) as where:
        if isinstance(where, CheckResult):
            return where
        claims = await probe(where.url)
        if not claims.modern:
            return CheckResult.not_applicable(f"the server does not claim {MODERN_REVISION} ({claims.said})")
        run = await run_requirement_set(ctx, tool, where.url, MODERN_REVISION, _SET_SECONDS)
    if not run.results:
        log = tail(run.completed.stdout + run.completed.stderr)
        return CheckResult(False, f"the package wrote no results (exit {run.completed.returncode}; {log})")
    extensions = set(claims.extensions) | ({_TASKS_EXTENSION} if ctx.profile == "shadowcode" else set[str]())
    subs = judge_requirement_set(
        _SET_PREFIX,
        run.results,
        run.requirements,
        inventory=claims.inventory,
        extensions=extensions,
        bridged=where.bridged,
        covers={_DNS: ("GW-04",), "*": ("GW-05",)},
        package=f"@modelcontextprotocol/conformance {ALPHA_VERSION}",
        capabilities=claims.modern_capabilities,
    )
    for scenario in sorted(run.requirements.scored - set(run.results)):
        subs.append(SubResult(f"{_SET_PREFIX}:{scenario}", ("GW-05",), False, "the package wrote no results for it"))
    counts = {v: sum(1 for s in subs if (s.verdict or ("pass" if s.ok else "fail")) == v) for v in Verdict}
    shown = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    via = " through the stdio bridge" if where.bridged else ""
    return CheckResult(True, f"{len(run.results)} scenarios{via}; package checks: {shown}", subresults=subs)


def _client_check(scenario: str, name: str, seconds: float) -> Callable[[Context], Awaitable[CheckResult]]:
    async def run(ctx: Context) -> CheckResult:
        tool = installed(ctx.repo_root)
        if isinstance(tool, str):
            return CheckResult.unavailable(tool)
        got = await _run_client(ctx, tool, scenario, seconds)
        result = _verdict(name, got, client=scenario)
        if scenario == "sse-retry":
            problems = never_resumed(got.checks) if got.checks else ["the scenario left no log"]
            detail = "; ".join(problems) or "tools/call sent once; the closed stream was never resumed"
            result.subresults.append(SubResult(f"{name}:never_resumed", ("CLI-18",), not problems, detail))
        return result

    run.__doc__ = f"The official package's client scenario {scenario!r} against ShadowCode's command line."
    return run


def _register() -> None:
    for scenario, covers in SERVER_SCENARIOS.items():
        check(
            f"official:server:{scenario}",
            covers=covers,
            timeout_seconds=_SERVER_SECONDS + _MARGIN_SECONDS,
            own_engine=True,
            profile=("shadowcode", "generic"),
            needs="either",
            official=True,
            source=_SERVER_SOURCE,
            revisions=_HANDSHAKE_REVISIONS,
        )(_server_check(scenario))
    check(
        _SET_PREFIX,
        covers=("GW-05",),
        timeout_seconds=_SET_SECONDS + _MARGIN_SECONDS,
        own_engine=True,
        profile=("shadowcode", "generic"),
        needs="either",
        official=True,
        source=_SET_SOURCE,
        revisions=(MODERN_REVISION,),
    )(requirement_set_2026)
    for scenario, covers in CLIENT_SCENARIOS.items():
        name = f"official:client:{scenario}"
        check(
            name,
            covers=covers,
            timeout_seconds=_CLIENT_SECONDS + _MARGIN_SECONDS,
            own_engine=True,
            official=True,
            source=_CLIENT_SOURCE,
        )(_client_check(scenario, name, _CLIENT_SECONDS))
    for scenario in AUTH_SCENARIOS:
        name = "official:auth:" + scenario.removeprefix("auth/")
        check(
            name,
            covers=("CW-08",),
            timeout_seconds=_AUTH_SECONDS + _MARGIN_SECONDS,
            own_engine=True,
            official=True,
            source=_CLIENT_SOURCE,
        )(_client_check(scenario, name, _AUTH_SECONDS))


_register()
