"""Private-network authority, seen from outside: a name resolving to a private address needs the opt-in (CW-11).

Covers CW-11.

* ``private_network:loopback_name``: through the command line only. The check picks a host name
  of this machine other than ``localhost`` that resolves to loopback addresses only (the
  machine's own name, or ``ip6-localhost`` and the like from ``/etc/hosts``; without one the
  check is not run), lists it in the profile's ``mcp.network_hosts``, and enables two lazy
  definitions of the Python SDK fixture server (Streamable HTTP, stateless, on 127.0.0.1, told to
  accept that name in ``Host``) whose URL names that host: ``refused`` without
  ``allow_private_network`` and ``allowed`` with it. One Build task asks for ``refused``'s tools
  and calls ``allowed``'s ``echo`` after an exact approval: the first must fail with "resolves
  to ..., which is not a public address" and never connect, the second must answer. Only
  loopback addresses are contacted.
"""

from __future__ import annotations

import ipaddress
import json
import socket

import anyio

from shadowcode_conformance.checks.external_helpers import outcome, run_project_task, tool_results
from shadowcode_conformance.checks.external_servers import add_model, register_server, tool_turns, trust_workspace
from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import announced_port, tail
from shadowcode_conformance.registry import CheckResult, check
from shadowcode_conformance.resources import helper_python

__all__ = ["loopback_name"]

_CANDIDATES = ("ip6-localhost", "ip6-loopback", "localhost.localdomain")


def _loopback_name() -> str | None:
    """A host name (not ``localhost``) that resolves here to loopback addresses only, or None."""
    for name in (socket.gethostname(), *_CANDIDATES):
        if not name or name.rstrip(".").lower() == "localhost":
            continue
        try:
            infos = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
        except OSError:
            continue
        addresses = {str(info[4][0]).split("%")[0] for info in infos}
        if addresses and all(ipaddress.ip_address(a).is_loopback for a in addresses):
            return name
    return None


@check("private_network:loopback_name", covers=["CW-11"], timeout_seconds=240)
async def loopback_name(ctx: Context) -> CheckResult:
    """A name resolving to loopback is refused without allow_private_network and reached with it."""
    name = _loopback_name()
    if name is None:
        return CheckResult.not_asked("not run: no host name here but localhost resolves to loopback only")
    problems: list[str] = []
    server = ctx.repo_root / "fixtures/servers/python_sdk_server.py"
    out = bytearray()
    argv = [helper_python(), str(server), "http-stateless", "--allow-host", name]
    async with ctx.spawn(argv) as proc, anyio.create_task_group() as tg:
        port = await announced_port(proc, tg, out)
        if port is None:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"the Python SDK server did not start: {tail(out)}")
        url = f"http://{name}:{port}/mcp"
        calls = [
            ("mcp_tools", {"server": "refused"}),
            ("mcp_call", {"server": "allowed", "tool": "echo", "arguments": {"text": "pinned"}}),
        ]
        ids: dict[str, str] = {}
        try:
            await trust_workspace(ctx, ctx.project)
            for server_name, allow in (("refused", False), ("allowed", True)):
                doc = {"name": server_name, "url": url, "lazy": True}
                got = await register_server(
                    ctx, doc | ({"allow_private_network": True} if allow else {}), ctx.project, problems
                )
                if got is not None:
                    ids[server_name] = got
            await add_model(ctx, [{"match": "private", "turns": tool_turns(*calls)}])
            settings = ctx.home / "profiles" / "default" / "settings.json"
            doc = json.loads(settings.read_text(encoding="utf-8"))
            doc["mcp"] = {"network_hosts": [name]}
            settings.write_text(json.dumps(doc), encoding="utf-8")
        except (RuntimeError, OSError, ValueError) as exc:
            tg.cancel_scope.cancel()
            return CheckResult(False, f"set-up failed: {exc}")
        if len(ids) == 2:
            expected = [("mcp_call", {"server": ids["allowed"], "tool": "echo", "arguments": {"text": "pinned"}})]
            _, events = await run_project_task(ctx, "private names", expected, problems)
            results = tool_results(events)
            if len(results) != 2:
                problems.append(f"{len(results)} tool results for 2 calls")
            else:
                (refused_ok, refused), (allowed_ok, allowed) = results
                if refused_ok or "which is not a public address" not in refused or name not in refused:
                    problems.append(f"{name} was not refused without the opt-in: {refused[:240]}")
                if not allowed_ok or "pinned" not in allowed:
                    problems.append(f"the opted-in server did not answer: {allowed[:240]}")
            connected = [e["data"]["server"] for e in events if e["kind"] == "mcp.connected"]
            if connected != [ids["allowed"]]:
                problems.append(f"expected only the opted-in server connected, got {connected}")
        tg.cancel_scope.cancel()
    return outcome(problems, f"{name} (loopback) refused without allow_private_network, reached with it")
