"""The official ``@modelcontextprotocol/conformance`` scenarios as checks of the run (``--official``).

Selected only with ``--official``; each scenario is a check of its own, named after it:

* ``official:server:<scenario>`` (both profiles): the package's server scenario run against
  the ShadowCode gateway the check starts (``<target> mcp serve --http 127.0.0.1:0``, behind a
  loopback proxy that adds its bearer token, which the package cannot send), or, in the
  generic profile, against ``--url`` (through the same proxy when ``--bearer-env`` is given).
  Only scenarios any server with a fixed tool set can pass are run: the others need the
  package's own test tools, resources and prompts (``test_simple_text``, ...).
* ``official:client:<scenario>`` and ``official:auth:<name>`` (ShadowCode profile): the
  package's client scenarios, the client being ShadowCode's command line driven by
  ``conformance/official_client.py``.

A check passes when the scenario made at least one judged check and every one is SUCCESS
(and, for a client scenario, the adapter finished). Scenarios known to fail are listed in the
expected-failures baseline like any other check. Two rules need more than that, so they are
checks of their own:

* ``official:server:dns-rebinding-protection:foreign_host_refused`` (GW-04): a foreign Host
  is refused (with 421 by the ShadowCode gateway: the Host rule comes before the Origin rule,
  which shows the proxy let the Host through unchanged);
* ``official:client:sse-retry:never_resumed`` (CLI-18): the tool call was sent once and the
  closed stream never resumed (:func:`conformance.official_judge.never_resumed`).

Without Node 22 or the package each check is "not run" (and the run fails), naming
``bash ci/setup``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from conformance.checks.gateway import _gateway
from conformance.context import Context
from conformance.official import BearerProxy, Installed, ScenarioRun, failures, installed
from conformance.official import run_client_scenario as _run_client
from conformance.official import run_server_scenario as _run_server
from conformance.official_judge import never_resumed
from conformance.registry import CheckResult, SubResult, check

__all__ = ["AUTH_SCENARIOS", "CLIENT_SCENARIOS", "SERVER_SCENARIOS"]

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
_CLIENT_SECONDS: Final = 270.0
_AUTH_SECONDS: Final = 210.0
_MARGIN_SECONDS: Final = 60.0
_DNS = "dns-rebinding-protection"
_FOREIGN_HOST = "localhost-host-rebinding-rejected"


def _verdict(name: str, run: ScenarioRun, *, client: str | None = None) -> CheckResult:
    """Pass when the scenario judged something and all of it was SUCCESS (and the adapter finished)."""
    judged = run.judged()
    problems = failures(run.checks)
    if not judged:
        problems.append(f"the scenario made no check (exit {run.completed.returncode}; {run.log()})")
    if client is not None and judged and not run.stdout.startswith(f"{client}: "):
        problems.append("the client adapter did not finish (its stderr.txt in the results says why)")
    if problems:
        return CheckResult(False, f"{name}: " + "; ".join(problems))
    return CheckResult(True, f"{len(judged)} package check(s) SUCCESS: " + ", ".join(str(c.get("id")) for c in judged))


def _foreign_host(ctx: Context, run: ScenarioRun) -> SubResult:
    found = [c for c in run.checks if c.get("id") == _FOREIGN_HOST]
    code = ((found[0].get("details") or {}).get("statusCode")) if found else None
    ok = bool(found) and found[0].get("status") == "SUCCESS"
    want = ""
    if ctx.profile == "shadowcode":
        ok = ok and code == 421
        want = ", expected 421 (the Host rule, before the Origin rule)"
    detail = f"{_FOREIGN_HOST}: {found[0].get('status') if found else 'missing'}, HTTP {code}{want}"
    return SubResult(f"official:server:{_DNS}:foreign_host_refused", ("GW-04",), ok, detail)


async def _server_run(ctx: Context, tool: Installed, scenario: str) -> ScenarioRun | CheckResult:
    if ctx.profile == "generic":
        if not ctx.url:
            return CheckResult.not_asked("not run: official server scenarios in the generic profile need --url")
        if ctx.bearer:
            with BearerProxy(ctx.url, ctx.bearer) as proxy:
                return await _run_server(ctx, tool, proxy.url, scenario, _SERVER_SECONDS)
        return await _run_server(ctx, tool, ctx.url, scenario, _SERVER_SECONDS)
    async with _gateway(ctx) as gw:
        with BearerProxy(gw.url, gw.token) as proxy:
            return await _run_server(ctx, tool, proxy.url, scenario, _SERVER_SECONDS)


def _server_check(scenario: str) -> Callable[[Context], Awaitable[CheckResult]]:
    name = f"official:server:{scenario}"

    async def run(ctx: Context) -> CheckResult:
        tool = installed(ctx.repo_root)
        if isinstance(tool, str):
            return CheckResult.unavailable(tool)
        got = await _server_run(ctx, tool, scenario)
        if isinstance(got, CheckResult):
            return got
        result = _verdict(name, got)
        if scenario == _DNS:
            result.subresults.append(_foreign_host(ctx, got))
        return result

    run.__doc__ = f"The official package's server scenario {scenario!r}."
    return run


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
        )(_server_check(scenario))
    for scenario, covers in CLIENT_SCENARIOS.items():
        name = f"official:client:{scenario}"
        check(name, covers=covers, timeout_seconds=_CLIENT_SECONDS + _MARGIN_SECONDS, own_engine=True, official=True)(
            _client_check(scenario, name, _CLIENT_SECONDS)
        )
    for scenario in AUTH_SCENARIOS:
        name = "official:auth:" + scenario.removeprefix("auth/")
        check(name, covers=("CW-08",), timeout_seconds=_AUTH_SECONDS + _MARGIN_SECONDS, own_engine=True, official=True)(
            _client_check(scenario, name, _AUTH_SECONDS)
        )


_register()
