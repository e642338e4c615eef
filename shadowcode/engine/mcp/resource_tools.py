"""The resource and prompt helpers of a Build task's MCP servers (CW-06), with skills served over MCP (CW-09).

Implements CW-06, CW-09.

:class:`ResourcePromptTools` is part of :class:`~shadowcode.engine.mcp.task_servers.TaskServers`:

- ``mcp_resources`` lists the resources, resource templates and prompts of one server or of
  every enabled server, MCP_RESOURCES_PAGE_MAX of each a page. It needs no approval; a server
  without a connection yet is started for it, as for reading its tool catalog. Each list is read
  under the same page, item and byte bounds as the tool catalog and kept fresh like it (CW-05).
  A server with the Skills extension also lists its kept ``skills`` (each with its files,
  sizes and digests) and ``skipped_skills`` (with the reason); resources that are files of a
  kept skill carry ``skill``. Listing reads no skill file and activates nothing (CW-09).
- ``mcp_read_resource`` parks on an approval of kind ``mcp_read_resource`` naming
  ``{"server": id, "uri": uri}``; ``mcp_get_prompt`` first checks the arguments against the
  prompt's declaration (refused before anything is asked or sent), then parks on an approval
  of kind ``mcp_get_prompt`` naming ``{"server": id, "prompt": name, "arguments": {...}}``.
  A project definition is re-read and compared before the approval is asked and after it
  was given, as for a tool call. A read of a listed skill file is verified (exact URI, size,
  digest; a ``SKILL.md``'s frontmatter) and refused whole on a mismatch; a URI beneath a kept
  skill's root that the skill does not list is refused before anything is sent (CW-09).
  Results are bounded by MCP_HELPER_RESULT_MAX_BYTES (refused
  whole) and redacted like tool results.
"""

from __future__ import annotations

import json
import math
from functools import partial
from typing import TYPE_CHECKING, Any

from shadowcode.agent.toolbox import await_approval
from shadowcode.engine.mcp.task_catalog import ServerState
from shadowcode.errors import ShadowcodeError, ToolError
from shadowcode.limits import MCP_RESOURCES_PAGE_MAX, MCP_TOOL_ARGUMENTS_MAX_BYTES
from shadowcode.mcp.client.catalog import ListKind
from shadowcode.mcp.client.connection import CallRefused, Connection, ConnectionState
from shadowcode.mcp.client.reads import check_prompt_arguments, get_prompt, read_resource
from shadowcode.mcp.client.skills import Skill, SkillFile, SkillRefused, verify_contents

if TYPE_CHECKING:
    from shadowcode.agent.toolbox import TaskEnv

__all__ = ["ResourcePromptTools"]

_FIELDS = {
    "resources": ("uri", "name", "title", "description", "mimeType", "size"),
    "templates": ("uriTemplate", "name", "title", "description", "mimeType"),
    "prompts": ("name", "title", "description", "arguments"),
}


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class ResourcePromptTools:
    """``mcp_resources``, ``mcp_read_resource`` and ``mcp_get_prompt`` over the task's servers (CW-06)."""

    if TYPE_CHECKING:
        _servers: dict[str, ServerState]

        def _server(self, key: str) -> ServerState: ...

        def _recheck(self, server: ServerState) -> None: ...

        async def _ensure(self, server: ServerState, *, reason: str = "needed") -> Connection: ...

        def _record_closed(self, server: ServerState) -> None: ...

    async def run_helper(self, env: TaskEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer one call of a helper tool; returns the JSON object given back to the model.

        Raises:
            ToolError: unknown server, prompt or page, bad arguments (nothing is sent).
            PolicyError: the definition changed since the task started (nothing is sent).
            UpstreamServerError: the server failed, or its result passed MCP_HELPER_RESULT_MAX_BYTES.
        """
        if name == "mcp_resources":
            page = int(args.get("page", 0))
            if page < 0:
                raise ToolError("page must be 0 or more")
            if args.get("server"):
                return await self._listing(env, self._server(str(args["server"])), page)
            listed: list[dict[str, Any]] = []
            for server in self._servers.values():
                try:
                    listed.append(await self._listing(env, server, page))
                except ShadowcodeError as exc:
                    listed.append({"server": server.definition.name, "id": server.definition.id, "error": exc.message})
            return {"servers": listed, "page": page}
        if name == "mcp_read_resource":
            return await self._read(env, self._server(str(args["server"])), args["uri"])
        return await self._prompt(env, self._server(str(args["server"])), str(args["prompt"]), args.get("arguments"))

    async def _live(self, server: ServerState) -> Connection:
        """The server's ready connection, started now (no approval needed) when the task has none yet.

        A plugin's server is checked again first (trust, grant, bundle digest), like a dispatch (CW-12).
        """
        if server.definition.scope == "plugin":
            self._recheck(server)
        if server.lost is not None:
            raise server.unavailable_error(server.lost)
        if server.conn is None and server.unavailable is not None:
            raise server.unavailable_error(server.unavailable)
        conn = await self._ensure(server)  # a lazy server starts, a booting one is waited for (CW-10)
        if conn.state is not ConnectionState.READY:
            raise server.unavailable_error(conn.error or conn.state.value)
        return conn

    async def _listing(self, env: TaskEnv, server: ServerState, page: int) -> dict[str, Any]:
        conn = await self._live(server)
        out: dict[str, Any] = {"server": server.definition.name, "id": server.definition.id}
        kept, skipped = await conn.skills()  # reads skills/list only: no skill file (CW-09)
        if kept or skipped:
            env.records.event(
                env.task_id,
                "mcp.skills",
                {
                    "server": server.definition.id,
                    "kept": [s.uri for s in kept],
                    "skipped": [s.as_json() for s in skipped],
                },
            )
        owner = {f.uri: skill.uri for skill in kept for f in skill.files}
        pages = 1
        kinds: tuple[ListKind, ...] = ("resources", "templates", "prompts")
        for kind in kinds:
            items = await conn.listing(kind)
            pages = max(pages, math.ceil(len(items) / MCP_RESOURCES_PAGE_MAX))
            chunk = items[page * MCP_RESOURCES_PAGE_MAX : (page + 1) * MCP_RESOURCES_PAGE_MAX]
            out[kind] = [{k: item[k] for k in _FIELDS[kind] if k in item} for item in chunk]
            if kind == "resources":
                for item in out[kind]:
                    if item.get("uri") in owner:
                        item["skill"] = owner[item["uri"]]
        if kept or skipped:
            for name, entries in (("skills", [s.as_json() for s in kept]), ("skipped_skills", skipped)):
                pages = max(pages, math.ceil(len(entries) / MCP_RESOURCES_PAGE_MAX))
                chunk = entries[page * MCP_RESOURCES_PAGE_MAX : (page + 1) * MCP_RESOURCES_PAGE_MAX]
                out[name] = [e if isinstance(e, dict) else e.as_json() for e in chunk]
        return out | {"page": page, "pages": pages, "next_page": page + 1 if page + 1 < pages else None}

    async def _skill_file(self, conn: Connection, uri: str) -> tuple[Skill, SkillFile] | None:
        """The kept skill and listed file with exactly this URI, or None for an ordinary resource (CW-09).

        Raises:
            ToolError: the URI lies beneath a kept skill's root but is not one of its listed files
                (nothing is sent).
        """
        kept, _skipped = await conn.skills()
        for skill in kept:
            listed = skill.file(uri)
            if listed is not None:
                return skill, listed
            root = skill.uri[: -len("SKILL.md")]
            if uri.startswith(root):
                raise ToolError(
                    f"{uri!r} lies in the skill {skill.uri!r} but is not one of its listed files; nothing was sent"
                )
        return None

    async def _approved(
        self, env: TaskEnv, server: ServerState, kind: str, action: dict[str, Any]
    ) -> tuple[str, Connection | None]:
        """Ask for the exact approval (definition re-read before and after); the connection, or None if refused."""
        self._recheck(server)
        approval_id, decision = await await_approval(env, kind, action, action)
        if decision != "approved":
            return approval_id, None
        self._recheck(server)
        return approval_id, await self._live(server)

    async def _finish(self, server: ServerState, conn: Connection) -> None:
        if conn.state is not ConnectionState.READY:
            await conn.wait_closed()
            self._record_closed(server)

    async def _read(self, env: TaskEnv, server: ServerState, uri: Any) -> dict[str, Any]:
        if not isinstance(uri, str) or not uri:
            raise ToolError("uri must be a non-empty string; nothing was sent")
        if _size(uri) > MCP_TOOL_ARGUMENTS_MAX_BYTES:
            raise ToolError(f"the uri is longer than {MCP_TOOL_ARGUMENTS_MAX_BYTES} bytes; nothing was sent")
        if server.lost is not None:
            raise server.unavailable_error(server.lost)
        outcome = {"server": server.definition.id, "uri": uri}
        if server.conn is not None and server.conn.state is ConnectionState.READY:
            await self._skill_file(server.conn, uri)  # an unlisted file of a kept skill: refused before approval
        approval_id, conn = await self._approved(env, server, "mcp_read_resource", dict(outcome))
        if conn is None:
            return {"error": "the user did not approve this resource read", "approval_id": approval_id}
        try:
            found = await self._skill_file(conn, uri)
        except BaseException:
            await self._finish(server, conn)
            raise
        check = None
        if found is not None:
            outcome["skill"] = found[0].uri
            check = partial(verify_contents, *found, server=server.definition.id)
        env.records.event(env.task_id, "mcp.read_resource", outcome | {"approval_id": approval_id})
        try:
            result = await read_resource(conn, uri, check=check)
        except SkillRefused as exc:
            env.records.event(env.task_id, "mcp.skill_refused", outcome | {"reason": exc.message})
            return outcome | {"error": exc.message}
        except CallRefused as exc:
            return outcome | {"error": exc.message, "error_code": exc.fields.get("error_code")}
        finally:
            await self._finish(server, conn)
        event = outcome | {"contents": len(result["contents"])}
        env.records.event(env.task_id, "mcp.result", event | ({"verified": True} if found is not None else {}))
        if found is not None:
            result |= {"skill": found[0].uri, "verified": True}
        return {"server": server.definition.id} | result

    async def _prompt(self, env: TaskEnv, server: ServerState, name: str, arguments: Any) -> dict[str, Any]:
        conn = await self._live(server)
        declared = next((p for p in await conn.listing("prompts") if p.get("name") == name), None)
        if declared is None:
            raise ToolError(f"MCP server {server.definition.name} has no prompt {name!r}; nothing was sent")
        checked = check_prompt_arguments(declared, arguments)
        if _size(checked) > MCP_TOOL_ARGUMENTS_MAX_BYTES:
            raise ToolError(f"the arguments are larger than {MCP_TOOL_ARGUMENTS_MAX_BYTES} bytes; nothing was sent")
        action = {"server": server.definition.id, "prompt": name, "arguments": checked}
        approval_id, conn = await self._approved(env, server, "mcp_get_prompt", action)
        if conn is None:
            return {"error": "the user did not approve this prompt request", "approval_id": approval_id}
        outcome = {"server": server.definition.id, "prompt": name}
        env.records.event(env.task_id, "mcp.get_prompt", outcome | {"approval_id": approval_id})
        try:
            result = await get_prompt(conn, name, checked)
        except CallRefused as exc:
            return outcome | {"error": exc.message, "error_code": exc.fields.get("error_code")}
        finally:
            await self._finish(server, conn)
        env.records.event(env.task_id, "mcp.result", outcome | {"messages": len(result["messages"])})
        return {"server": server.definition.id} | result
