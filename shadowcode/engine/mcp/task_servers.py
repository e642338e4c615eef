"""The external MCP tools of one Build task: tools, approvals, lazy connections.

Implements CLI-04, CLI-07, CLI-08, CLI-09, CLI-10, CLI-11, CLI-14, CLI-15, CLI-16, CLI-19, CW-02, CW-05,
CW-06, CW-07, CW-12.

A :class:`TaskServers` is built from the snapshot of enabled servers taken when the task was
submitted and lives exactly as long as the task's turn loop:

- :meth:`TaskServers.prepare` loads each server's tool catalog from the last connection with
  the same definition hash; without one it starts the server once to read it (and keeps that
  connection for the task). Nothing else is started until a call is approved. A server whose
  definition says ``required: true`` is connected there even with a cached catalog; when it
  cannot connect, :meth:`TaskServers.prepare` raises and the task fails before any model request.
- The definition's ``enabled_tools`` / ``disabled_tools`` decide which listed tools exist for
  the task at all (CW-02); connections get the definition's connect, call and read timeouts (CW-07).
- The model gets ``mcp_tools`` (servers; tool names in pages of MCP_TOOL_NAMES_PAGE_MAX; one
  exact schema) and ``mcp_call``, plus ``mcp__<server>__<tool>`` functions carrying the
  servers' own input schemas while the enabled servers offer at most ``inline_tools`` tools
  (0 turns them off). A first-class call is the same request as ``mcp_call``.
- Every call is checked before anything is sent (known tool, arguments an object within
  MCP_TOOL_ARGUMENTS_MAX_BYTES and valid for the tool's schema), then parks on an approval of
  kind ``mcp_call`` naming ``{"server": id, "tool": name, "arguments": {...}}``. A project
  definition file is re-read and its hash compared with the task's snapshot before the
  approval is asked and again after it was given; a change refuses the call.
- Connections are reused within the task and never re-opened after a failure. A server whose
  connection failed or closed no longer serves its catalog: ``mcp_tools`` lists it without
  tools, its first-class tools are no longer offered, and a call says it is unavailable
  (CLI-15). A JSON-RPC error answering a call is that call's error; the connection stays
  usable (CLI-14). Leaving the context closes every connection and waits for its cleanup;
  ``mcp.connected`` and ``mcp.closed`` events record the definition id, hash and cleanup
  outcome, never environment values. Server stderr never enters task events.
- Freshness (CW-05): a connection revalidates its catalog in place; each model request first
  takes the connection's current tools (``mcp.tools_changed`` records a change, the catalog
  cache is updated, the definition's tool filters are applied to the new list, the inline
  tools are chosen again), so the next request carries the new list. A call resolved against
  an older catalog is refused with "the server's tools changed: retry the call" (before the
  approval, or after it when the change came meanwhile); a removed tool can no longer run; a
  connection whose revalidation failed is lost like a failed one.
- The resource and prompt helpers (CW-06) live in :mod:`shadowcode.engine.mcp.resource_tools`.
- Plugin servers (CW-12) go through all of the above. Before each dispatch (before the
  approval, after it, before a start, and before their tool list or resources are shown) their
  plugin must still be trusted and enabled at the
  task's digest and the bundle, hashed again, still hold that content; otherwise the server is
  withdrawn (its connection closed, which cancels a call in flight and stops its process group;
  ``mcp.plugin_withdrawn``) and the call refused before anything is sent. While a task runs, the
  plugin's trust and grant are also looked up every PLUGIN_WATCH_INTERVAL_SECONDS, so a disable
  or revoke withdraws the server without waiting for the next call.
"""

from __future__ import annotations

import logging
import re
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from shadowcode.agent.ports import CatalogCache, EventLog, PluginGate, ServerSnapshot
from shadowcode.agent.tool_specs import COMPACT_MCP_TOOLS, MCP_HELPER_TOOLS, function_schema, spec
from shadowcode.agent.toolbox import await_approval
from shadowcode.engine.mcp.credentials import http_endpoint
from shadowcode.engine.mcp.definition_files import read_project_definition
from shadowcode.engine.mcp.resource_tools import ResourcePromptTools
from shadowcode.engine.mcp.task_catalog import ServerState, check_arguments, list_server, list_servers
from shadowcode.errors import ConfigError, PolicyError, ShadowcodeError, ToolError, UpstreamServerError
from shadowcode.limits import (
    MCP_INLINE_TOOLS_MAX,
    PLUGIN_WATCH_INTERVAL_SECONDS,
)
from shadowcode.mcp.client.connection import CallRefused, CatalogChanged, Connection, ConnectionState
from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec
from shadowcode.mcp.client.endpoint import Endpoint
from shadowcode.mcp.client.redaction import Redactor

if TYPE_CHECKING:
    from shadowcode.agent.toolbox import TaskEnv
    from shadowcode.profile import Profile

__all__ = ["TaskServers", "inline_tools_setting", "network_hosts_setting"]

logger = logging.getLogger(__name__)

_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def inline_tools_setting(settings: Any) -> int:
    """``mcp.inline_tools`` from the profile settings when present, else MCP_INLINE_TOOLS_MAX (CLI-07)."""
    section = getattr(settings, "mcp", None)
    value = getattr(section, "inline_tools", None) if section is not None else None
    return MCP_INLINE_TOOLS_MAX if value is None else max(0, int(value))


def network_hosts_setting(settings: Any) -> frozenset[str]:
    """``mcp.network_hosts`` from the profile settings (lower case), empty when absent (CLI-11)."""
    section = getattr(settings, "mcp", None)
    hosts = getattr(section, "network_hosts", None) if section is not None else None
    return frozenset(str(h).lower().rstrip(".") for h in hosts or ())


class TaskServers(ResourcePromptTools):
    """The MCP servers of one Build task (CLI-07, CLI-08, CLI-09, CLI-10, CLI-19, CW-05, CW-06).

    Args:
        snapshot: the enabled servers fixed at submission.
        catalog: the cached tool catalogs (read before starting a server, written after).
        profile: where ``env_refs`` secrets are looked up (with the environment first).
        task_id: the task, for events.
        records: the task's event log.
        inline_tools: at most this many tools are offered as first-class functions; 0 turns them off.
        plugins: where a plugin server's trust, grant and bundle are checked again (CW-12); None:
            the snapshot holds no plugin server.
    """

    def __init__(
        self,
        *,
        snapshot: ServerSnapshot,
        catalog: CatalogCache,
        profile: Profile,
        task_id: str,
        records: EventLog,
        inline_tools: int = MCP_INLINE_TOOLS_MAX,
        plugins: PluginGate | None = None,
    ) -> None:
        self.project = snapshot.project
        self.catalog = catalog
        self.profile = profile
        self.task_id = task_id
        self.records = records
        self.inline_tools = inline_tools
        self.plugins = plugins
        self._withdrawn: dict[str, str] = {}
        self._servers = {d.name: ServerState(d) for d in snapshot.servers}
        self._by_id = {s.definition.id: s for s in self._servers.values()}
        self._inline: dict[str, tuple[ServerState, str]] = {}
        self._prepared = False
        self._base_env: dict[str, str] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = False

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> TaskServers:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            await self.aclose()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        return None

    async def aclose(self) -> None:
        """Close every connection of the task and wait for each cleanup (CLI-19); a start still in
        flight is abandoned and cleaned up the same way (CW-10)."""
        self._closing = True
        live = [s for s in self._servers.values() if s.conn is not None]
        for server in live:
            assert server.conn is not None
            server.conn.close()
        for server in live:
            assert server.conn is not None
            await server.conn.wait_closed()
            self._record_closed(server)

    def _record_closed(self, server: ServerState) -> None:
        conn = server.conn
        if conn is None or server.closed_recorded:
            return
        server.closed_recorded = True
        self.records.event(
            self.task_id,
            "mcp.closed",
            {
                "server": server.definition.id,
                "hash": server.definition.sha256,
                "cleanup": conn.cleanup,
                "stragglers": conn.stragglers,
                "revalidations": conn.revalidations,
                "error": conn.error,
            },
        )

    # -- catalog (CLI-07, CLI-08) ----------------------------------------------------------

    async def prepare(self, env: TaskEnv) -> None:
        """Connect the required servers, start the others in the background, and choose the inline tools.

        Idempotent. Required servers are connected first, one after the other, whatever the cache
        holds; one that cannot connect fails the task here, before any model request. Every other
        server offers its cached catalog (the last connection with the same hash) at once and,
        unless it is ``lazy``, is started concurrently in the background (session boot, CW-10):
        nothing here waits for it, so the first model request is not held. A lazy server stays
        unstarted until the task needs it (:meth:`_ensure`). A server that cannot provide its
        catalog is noted in the task's events and offers no tools; the task goes on.

        Raises:
            UpstreamServerError: a required server could not connect (its reason; nothing else
                was started).
        """
        if self._prepared:
            return
        self._prepared = True
        self._base_env = dict(env.env)
        ordered = sorted(self._servers.values(), key=lambda s: not s.definition.spec.required)
        boot: list[ServerState] = []
        for server in ordered:
            definition = server.definition
            try:
                if isinstance(definition.spec, HttpSpec):
                    self._endpoint(definition.spec).check()
            except ShadowcodeError as exc:
                server.unavailable = exc.message
            else:
                if definition.spec.required:
                    with suppress(ShadowcodeError):
                        await self._ensure(server, reason="required")
                else:
                    cached = self.catalog.cached_tools(self.project, definition)
                    if cached is not None:
                        server.tools = server.offer(cached)
                    if not definition.spec.lazy:
                        boot.append(server)
            if server.unavailable is not None:
                self._note_unavailable(server)
                if definition.spec.required:
                    raise UpstreamServerError(
                        f"the required MCP server {definition.id} could not connect: {server.unavailable}",
                        server=definition.id,
                    )
        self._choose_inline()
        assert self._tg is not None, "TaskServers is used outside its context"
        if self.plugins is not None and any(s.definition.scope == "plugin" for s in self._servers.values()):
            self._tg.start_soon(self._watch_plugins)
        for server in boot:
            server.starting = anyio.Event()  # "connecting" from now on, before the start is scheduled
            self._tg.start_soon(self._boot, server)

    async def connect_all(self) -> None:
        """Start every server not started yet (lazy ones included), concurrently, and wait for each
        start to end (``mcp validate`` and ``mcp tools``, CW-03, CW-10); failures are noted, not raised."""
        async with anyio.create_task_group() as tg:
            for server in self._servers.values():
                if server.unavailable is None:
                    tg.start_soon(self._boot, server, False)

    async def _boot(self, server: ServerState, owner: bool = True) -> None:
        """Start one server in the background (``owner``: the start :meth:`prepare` scheduled), or
        wait for its start; a failure is noted in the task's events (CW-10)."""
        with suppress(ShadowcodeError):
            await self._ensure(server, reason="boot", owner=owner)
        if server.unavailable is not None and not self._closing and owner:
            self._note_unavailable(server)

    def _note_unavailable(self, server: ServerState) -> None:
        self.records.event(
            self.task_id,
            "task.note",
            {"note": f"MCP server {server.definition.id} is unavailable: {server.unavailable}"},
        )

    async def _ensure(self, server: ServerState, *, reason: str = "needed", owner: bool = False) -> Connection:
        """The server's ready connection: the one start of this task, made now or already in flight (CW-10).

        A server being started (at boot, say) is waited for, within its own connect timeout; a
        server never started is started now (``reason`` says why in ``mcp.connecting``). A task
        starts each server at most once; ``owner`` is the start :meth:`prepare` scheduled.

        Raises:
            ShadowcodeError: the server could not connect, or failed earlier in this task.
        """
        conn = server.conn
        if conn is not None and conn.state is ConnectionState.READY:
            return conn
        if server.starting is not None and not owner:
            await server.starting.wait()
            conn = server.conn
            if conn is None or conn.state is not ConnectionState.READY:
                raise server.unavailable_error(
                    server.unavailable or (conn.error if conn is not None else None) or "it did not connect"
                )
            return conn
        if server.starting is None:
            server.starting = anyio.Event()
        try:
            self.records.event(self.task_id, "mcp.connecting", {"server": server.definition.id, "reason": reason})
            return await self._connect(server)
        except ShadowcodeError as exc:
            server.unavailable = server.unavailable or exc.message
            raise
        finally:
            server.starting.set()

    def _choose_inline(self) -> None:
        """Offer every tool as a first-class function while all servers together offer at most ``inline_tools``."""
        self._inline = {}
        total = sum(len(s.tools or ()) for s in self._servers.values())
        if 0 < total <= self.inline_tools:
            for server in self._servers.values():
                for tool in server.tools or ():
                    name = f"mcp__{server.definition.name}__{tool.get('name')}"
                    if _FUNCTION_NAME.fullmatch(name):
                        self._inline[name] = (server, str(tool["name"]))

    def tool_names(self) -> tuple[str, ...]:
        """Tool names offered to the model now: the compact tools, then the inline ones (CLI-07).

        The inline tools of a server whose connection failed or closed are left out (CLI-15).
        """
        if not self._servers:
            return ()
        self.refresh()
        for server in self._servers.values():
            server.offered = server.generation
        return COMPACT_MCP_TOOLS + tuple(n for n, (server, _) in self._inline.items() if server.lost is None)

    def refresh(self) -> bool:
        """Take each connection's current tool list when it changed since it was last taken (CW-05).

        Records ``mcp.tools_changed``, updates the catalog cache and chooses the inline tools again.
        Returns True when some server's tools changed.
        """
        changed = False
        for server in self._servers.values():
            conn = server.conn
            if conn is None or conn.state is not ConnectionState.READY or conn.tools_generation == server.generation:
                continue
            server.generation = conn.tools_generation
            server.tools = server.offer(conn.tools)  # the definition's filters apply to the new list too (CW-02)
            changed = True
            self.catalog.save_tools(self.project, server.definition, conn.tools)
            self.records.event(
                self.task_id,
                "mcp.tools_changed",
                {"server": server.definition.id, "generation": conn.tools_generation, "tools": len(conn.tools)},
            )
        if changed:
            self._choose_inline()
        return changed

    def _on_tools_changed(self) -> None:
        """A connection's revalidation changed its tools: take them now (records ``mcp.tools_changed``)."""
        self.refresh()

    def states(self) -> tuple[ServerState, ...]:
        """Each server's state (definition, catalog, connection) in snapshot order, for reports (CW-03, CW-04)."""
        return tuple(self._servers.values())

    def handles(self, name: str) -> bool:
        """True for a tool name this object answers: an inline tool (of a lost server included), or
        ``mcp__<server>__<tool>`` of a server whose tool list is not known yet (CW-10)."""
        return bool(self._servers) and (
            name in COMPACT_MCP_TOOLS or name in self._inline or self._pending_inline(name) is not None
        )

    def _pending_inline(self, name: str) -> tuple[ServerState, str] | None:
        """The server and tool of ``mcp__<server>__<tool>`` when that server's catalog is still unknown
        (starting, or lazy and never started) and it has not failed (CW-10)."""
        for server in self._servers.values():
            prefix = f"mcp__{server.definition.name}__"
            if name.startswith(prefix) and len(name) > len(prefix):
                if server.tools is None and server.unavailable is None and server.lost is None:
                    return server, name[len(prefix) :]
        return None

    def schema(self, name: str) -> dict[str, Any]:
        """The OpenAI function schema of one of :meth:`tool_names` (servers' own input schemas)."""
        compact = spec(name)
        if compact is not None:
            return function_schema(compact)
        server, tool_name = self._inline[name]
        tool = server.tool(tool_name) or {}
        description = f"[MCP server {server.definition.name}] {tool.get('description') or tool_name}"
        parameters = tool.get("inputSchema") or {"type": "object"}
        return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}

    # -- calls (CLI-09, CLI-10) ------------------------------------------------------------

    async def run(self, env: TaskEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer one call of ``mcp_tools``, ``mcp_call`` or an inline tool.

        Returns:
            The JSON object given back to the model.

        Raises:
            ToolError: unknown server or tool, bad or oversized arguments (nothing is sent).
            PolicyError: the definition changed since the task started (nothing is sent).
            UpstreamServerError: the server failed; the call is not retried.
        """
        if name == "mcp_tools":
            self.refresh()
            for server in self._servers.values():
                server.offered = server.generation
            if not args.get("server"):
                return list_servers(list(self._servers.values()))
            server = self._server(str(args["server"]))
            if server.definition.scope == "plugin":
                self._recheck(server)  # a catalogue boundary: a plugin's server is checked again (CW-12)
            if server.tools is None and server.unavailable is None:
                await self._ensure(server)  # its tool list is asked for: start a lazy one, wait for a booting one
                self.refresh()
                server.offered = server.generation
            return list_server(server, args)
        if name in MCP_HELPER_TOOLS:
            return await self.run_helper(env, name, args)
        if name == "mcp_call":
            arguments = args.get("arguments", {})
            return await self.call(env, str(args["server"]), str(args["tool"]), arguments)
        if name not in self._inline:
            # A first-class name of a server still starting (or lazy): its start is waited for or made,
            # then the call is resolved against the catalog it brings (CW-10).
            pending = self._pending_inline(name)
            if pending is None:
                raise ToolError(f"no MCP tool {name!r} is offered; nothing was sent")
            await self._ensure(pending[0])
            self.refresh()
            if name not in self._inline:
                raise ToolError(
                    f"{name} is not offered as a function (a hidden tool, or more tools than the inline limit); "
                    "use mcp_tools and mcp_call; nothing was sent"
                )
        server, tool_name = self._inline[name]
        return await self.call(env, server.definition.name, tool_name, args)

    def _server(self, key: str) -> ServerState:
        server = self._servers.get(key) or self._by_id.get(key)
        if server is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise ToolError(f"no enabled MCP server {key!r} for this task (enabled: {known})")
        return server

    async def _watch_plugins(self) -> None:
        """Withdraw a plugin server whose plugin was disabled or revoked while the task runs (CW-12)."""
        assert self.plugins is not None
        while not self._closing:
            await anyio.sleep(PLUGIN_WATCH_INTERVAL_SECONDS)
            for server in self._servers.values():
                if server.definition.scope != "plugin" or server.definition.id in self._withdrawn:
                    continue
                try:
                    problem = self.plugins.plugin_problem(self.project, server.definition, check_bundle=False)
                except ShadowcodeError:
                    continue  # the store is busy: look again next time; every dispatch checks anyway
                if problem is not None:
                    self._withdraw(server, problem)

    def _withdraw(self, server: ServerState, reason: str) -> None:
        """Take a plugin server out of the task: no catalog, connection closed (a call in flight
        is cancelled, its process group stopped), ``mcp.plugin_withdrawn`` recorded (CW-12)."""
        definition = server.definition
        if definition.id in self._withdrawn:
            return
        self._withdrawn[definition.id] = reason
        server.unavailable = reason
        server.tools = None
        self.records.event(
            self.task_id,
            "mcp.plugin_withdrawn",
            {"server": definition.id, "plugin": definition.plugin, "reason": reason},
        )
        self._choose_inline()
        conn = server.conn
        if conn is not None and self._tg is not None:
            conn.close()
            self._tg.start_soon(self._closed_after_withdraw, server)

    async def _closed_after_withdraw(self, server: ServerState) -> None:
        assert server.conn is not None
        await server.conn.wait_closed()
        self._record_closed(server)

    def _recheck(self, server: ServerState) -> None:
        """Re-read a project definition and compare its hash with the task's snapshot (CLI-10); check a
        plugin server's trust, grant and bundle again, withdrawing it on any change (CW-12)."""
        definition = server.definition
        if definition.scope == "plugin":
            withdrawn = self._withdrawn.get(definition.id)
            problem = withdrawn or (self.plugins.plugin_problem(self.project, definition) if self.plugins else None)
            if problem is not None:
                self._withdraw(server, problem)
                raise PolicyError(
                    f"{definition.id} can no longer be used by this task ({problem}); the call is refused and "
                    "nothing was sent"
                )
            return
        if definition.scope != "project":
            return
        try:
            current = read_project_definition(self.project, definition.id)
        except ConfigError as exc:
            raise PolicyError(
                f"{definition.id} can no longer be used by this task ({exc.message}); nothing was sent"
            ) from exc
        if current.sha256 != definition.sha256:
            raise PolicyError(
                f"{definition.id} changed since this task started; the call is refused and nothing was sent "
                "(review the definition and start a new task)"
            )

    async def call(self, env: TaskEnv, server_key: str, tool_name: str, arguments: Any) -> dict[str, Any]:
        """Check, approve, then send one tool call (CLI-09, CLI-10, CLI-14).

        Returns:
            ``{"server": id, "tool", "is_error", "content", "structured_content"}``;
            ``{"server": id, "tool", "error", "error_code"}`` when the server answered with a
            JSON-RPC error (its message redacted; the connection stays usable); or
            ``{"error", "approval_id"}`` when the user did not approve.
        """
        server = self._server(server_key)
        self.refresh()
        resolved = server.offered  # the catalog the model saw when it made this call (CW-05)
        if server.generation != resolved:
            raise ToolError(
                f"MCP server {server.definition.name}: the server's tools changed: retry the call; nothing was sent"
            )
        if server.tools is None and server.unavailable is None:
            await self._ensure(server)  # its tools are needed: a lazy or booting server is started or waited for
            self.refresh()
            server.offered = server.generation
            resolved = server.offered
        checked = check_arguments(server, tool_name, arguments)
        self._recheck(server)
        action = {"server": server.definition.id, "tool": tool_name, "arguments": checked}
        shown = {"server": server.definition.id, "tool": tool_name}
        approval_id, decision = await await_approval(env, "mcp_call", action, shown)
        if decision != "approved":
            return {"error": f"the user did not approve this MCP call ({decision})", "approval_id": approval_id}
        self._recheck(server)
        conn = server.conn
        if conn is None or conn.state is ConnectionState.CONNECTING:
            conn = await self._ensure(server)
        if conn.state is not ConnectionState.READY:
            raise ToolError(
                f"MCP server {server.definition.id} is not connected ({conn.error or conn.state.value}); "
                "start a new task to reconnect"
            )
        outcome = {"server": server.definition.id, "tool": tool_name}
        tools = await conn.fresh_tools()  # waits for a pending revalidation (CW-05)
        if conn.tools_generation != resolved:
            self.refresh()
            return outcome | {"error": f"{server.definition.id}: the server's tools changed: retry the call "
                              "(nothing was sent)"}  # fmt: skip
        if not any(t.get("name") == tool_name for t in tools):
            raise ToolError(f"MCP server {server.definition.name} no longer lists {tool_name!r}; nothing was sent")
        env.records.event(
            env.task_id, "mcp.call", {"server": server.definition.id, "tool": tool_name, "approval_id": approval_id}
        )
        try:
            result = await conn.call(tool_name, checked, generation=resolved)
        except CatalogChanged as exc:
            self.refresh()
            return outcome | {"error": exc.message}
        except CallRefused as exc:
            # The server's error reply is this call's answer, not a failed connection (CLI-14).
            code = exc.fields.get("error_code")
            env.records.event(env.task_id, "mcp.result", outcome | {"is_error": True, "error_code": code})
            return outcome | {"error": exc.message, "error_code": code}
        finally:
            if conn.state is not ConnectionState.READY:
                await conn.wait_closed()
                self._record_closed(server)
        # A change the server announced before its answer reaches the model's next request (CW-05).
        await conn.settled()
        env.records.event(
            env.task_id,
            "mcp.result",
            {"server": server.definition.id, "tool": tool_name, "is_error": result["is_error"]},
        )
        return outcome | result

    # -- connections (CLI-04, CLI-12, CLI-19) ------------------------------------------------

    def _child_env(self, spec: StdioSpec) -> tuple[dict[str, str], Redactor]:
        from shadowcode.secrets import resolve

        extra = dict(spec.env)
        for var, ref in sorted(spec.env_refs.items()):
            value = resolve(self.profile, ref)
            if value is None:
                raise ConfigError(
                    f"env_refs: {var} refers to {ref}, which is neither set in the environment nor stored "
                    f"(store it with `shadowcode secret set {ref}`)"
                )
            extra[var] = value
        env = dict(self._base_env)
        env.update(extra)
        return env, Redactor(extra.values())

    def _endpoint(self, spec: HttpSpec) -> Endpoint:
        """The reviewed endpoint with the network permission of the profile, no value resolved (CLI-11)."""
        return Endpoint(
            spec.url,
            network_hosts=network_hosts_setting(self.profile.settings()),
            sends_credentials=spec.sends_credentials,
        )

    async def _connect(self, server: ServerState) -> Connection:
        """Start the server under the task's task group and wait until it is ready (CLI-08, CLI-12)."""
        if server.unavailable is not None and server.conn is not None:
            raise ToolError(f"MCP server {server.definition.id} failed earlier in this task; start a new task")
        assert self._tg is not None, "TaskServers is used outside its context"
        self._recheck(server)
        spec = server.definition.spec
        if isinstance(spec, HttpSpec):
            endpoint, redactor = await http_endpoint(
                self.profile, server.definition, network_hosts_setting(self.profile.settings())
            )
            conn = Connection(
                server_id=server.definition.id,
                on_tools_changed=self._on_tools_changed,
                endpoint=endpoint,
                cwd=self.project,
                timeouts=server.timeouts,
                tool_filter=spec.allows,
                redactor=redactor,
            )
        else:
            env, redactor = self._child_env(spec)
            conn = Connection(
                server_id=server.definition.id,
                on_tools_changed=self._on_tools_changed,
                argv=list(spec.command),
                cwd=self.project,
                env=env,
                timeouts=server.timeouts,
                tool_filter=spec.allows,
                redactor=redactor,
            )
        if self._closing:
            raise ToolError(f"MCP server {server.definition.id} was not started: the task is ending")
        server.conn = conn
        try:
            await conn.start(self._tg)
        except ShadowcodeError:
            server.unavailable = conn.error
            await conn.wait_closed()
            self._record_closed(server)
            raise
        self.records.event(
            self.task_id,
            "mcp.connected",
            {
                "server": server.definition.id,
                "hash": server.definition.sha256,
                "pid": conn.pid,
                "protocol_version": conn.protocol_version,
                "tools": len(conn.tools),
                "ttl_seconds": conn.ttl_seconds,
            },
        )
        self.catalog.save_tools(self.project, server.definition, conn.tools)
        server.generation = server.offered = conn.tools_generation
        offered = server.offer(conn.tools)
        if server.tools is not None and server.tools != offered:
            self.records.event(
                self.task_id, "task.note", {"note": f"MCP server {server.definition.id} changed its tools"}
            )
        server.tools = offered
        if self._prepared:
            self._choose_inline()  # a server started after the first request offers its tools from the next (CW-10)
        return conn
