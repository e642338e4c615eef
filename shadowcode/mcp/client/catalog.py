"""Bounded, paginated reading of a server's lists, and how long a list stays fresh.

Covers CLI-13, CW-05, CW-06, CW-07, CW-09.

:func:`read_list` reads every page of ``tools/list``, ``resources/list``,
``resources/templates/list``, ``prompts/list`` or the Skills extension's ``skills/list`` (CW-09)
within one deadline (the connection's ``connect`` timeout, CW-07), each page's reply within the
``read`` timeout, under the same page, item, byte and cursor bounds for each list (a duplicate
name or URI, or a repeated cursor, fails the listing; so does a tool whose name breaks the MCP
tool-name rules: 1 to MCP_TOOL_NAME_MAX_CHARS characters of ``A-Z a-z 0-9 _ - .``, checked with
the SDK's ``validate_tool_name``). It also returns the earliest ``ttlMs`` the pages carried, held
between ``ttl_min_seconds`` and ``ttl_max_seconds`` by :func:`clamp_ttl` (a page without
``ttlMs`` sets no expiry: the list stays valid until the server says it changed).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.tool_name_validation import validate_tool_name
from pydantic import ValidationError

from shadowcode.errors import LimitExceeded, UpstreamServerError
from shadowcode.limits import (
    MCP_CATALOG_MAX_BYTES,
    MCP_CATALOG_PAGES_MAX,
    MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS,
    MCP_CATALOG_TOOLS_MAX,
    MCP_CATALOG_TTL_MAX_SECONDS,
    MCP_CATALOG_TTL_MIN_SECONDS,
    MCP_CONNECTIONS_MAX,
    MCP_CURSOR_MAX_BYTES,
    MCP_HELPER_RESULT_MAX_BYTES,
    MCP_TOOL_NAME_MAX_CHARS,
)
from shadowcode.mcp.client.skills import ListSkillsRequest, ListSkillsResult

__all__ = ["LIST_KINDS", "CatalogLimits", "ListKind", "Listing", "clamp_ttl", "read_list"]

ListKind = Literal["tools", "resources", "templates", "prompts", "skills"]

LIST_KINDS: tuple[ListKind, ...] = ("tools", "resources", "templates", "prompts", "skills")
"""Every list a connection can hold, tools first; ``skills`` is the Skills extension's ``skills/list`` (CW-09)."""


@dataclass(frozen=True)
class CatalogLimits:
    """The catalog limits of one connection; defaults come from ``shadowcode.limits`` (CLI-13, CW-05, CW-06).

    ``tools_max`` bounds the entries of every list (tools, resources, templates, prompts), and
    ``catalog_max_bytes``, ``pages_max`` and ``cursor_max_bytes`` each list alike.
    """

    tools_max: int = MCP_CATALOG_TOOLS_MAX
    catalog_max_bytes: int = MCP_CATALOG_MAX_BYTES
    pages_max: int = MCP_CATALOG_PAGES_MAX
    cursor_max_bytes: int = MCP_CURSOR_MAX_BYTES
    connections_max: int = MCP_CONNECTIONS_MAX
    ttl_min_seconds: float = MCP_CATALOG_TTL_MIN_SECONDS
    ttl_max_seconds: float = MCP_CATALOG_TTL_MAX_SECONDS
    revalidate_interval_seconds: float = MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS
    helper_result_max_bytes: int = MCP_HELPER_RESULT_MAX_BYTES


@dataclass(frozen=True)
class Listing:
    """One list as read: its entries (JSON, as sent) and its clamped freshness in seconds, or None."""

    items: list[dict[str, Any]]
    ttl_seconds: float | None


# kind -> (method, noun, attribute of the result, key of an entry)
_SHAPES: dict[str, tuple[str, str, str, str]] = {
    "tools": ("tools/list", "tool", "tools", "name"),
    "resources": ("resources/list", "resource", "resources", "uri"),
    "templates": ("resources/templates/list", "resource template", "resource_templates", "uriTemplate"),
    "prompts": ("prompts/list", "prompt", "prompts", "name"),
    "skills": ("skills/list", "skill", "skills", "uri"),
}


class _LatePage(Exception):
    """One page's reply did not come within the read timeout."""


def clamp_ttl(ttl_ms: int, limits: CatalogLimits) -> float:
    """Seconds a list carrying ``ttlMs`` stays fresh: ``ttl_ms`` held between the limits (CW-05)."""
    return min(max(ttl_ms / 1000.0, limits.ttl_min_seconds), limits.ttl_max_seconds)


def _check_tool_name(name: str) -> None:
    """Refuse a tool name outside the MCP tool-name rules; the name is shown escaped and shortened (CLI-13).

    Raises:
        LimitExceeded: the name is empty, longer than MCP_TOOL_NAME_MAX_CHARS characters or holds
            a character other than ``A-Z a-z 0-9 _ - .``.
    """
    if len(name) <= MCP_TOOL_NAME_MAX_CHARS and validate_tool_name(name).is_valid:
        return
    shown = repr(name[:40]) + (f" (and {len(name) - 40} more characters)" if len(name) > 40 else "")
    raise LimitExceeded(
        f"the server lists a tool whose name is not a valid MCP tool name: {shown}; a name has 1 to "
        f"{MCP_TOOL_NAME_MAX_CHARS} characters, each a letter, a digit, '_', '-' or '.'"
    )


def _fetcher(session: Any, kind: ListKind) -> Callable[[types.PaginatedRequestParams | None], Awaitable[Any]]:
    functions = {
        "tools": session.list_tools,
        "resources": session.list_resources,
        "templates": session.list_resource_templates,
        "prompts": session.list_prompts,
    }
    if kind == "skills":
        return lambda params: session.send_request(ListSkillsRequest(params=params), ListSkillsResult)
    fetch = functions[kind]
    return lambda params: fetch(params=params)


async def read_list(
    session: Any,
    kind: ListKind,
    limits: CatalogLimits,
    *,
    timeout_seconds: float,
    read_seconds: float,
    deadline: float | None = None,
    server_id: str,
    failure: Callable[[], str | None] = lambda: None,
) -> Listing:
    """Read every page of one list before a deadline, each reply within ``read_seconds``,
    enforcing the limits (CLI-13, CW-05, CW-07).

    Args:
        session: the SDK client session.
        kind: which list.
        limits: the bounds (the same at connection time and at each revalidation).
        timeout_seconds: the seconds for all pages together (the ``connect`` timeout), from now
            unless ``deadline`` is given.
        read_seconds: the seconds for each page's reply (the ``read`` timeout); never more than
            what is left before the deadline.
        deadline: the absolute time (``anyio.current_time()``) all pages must be in by, when the
            listing shares a budget already running (discovery after initialization).
        server_id: the definition id, for errors.
        failure: the transport's failure, if any, preferred over the protocol error it caused.

    Raises:
        UpstreamServerError: a limit was crossed, the listing failed, was malformed, a page came
            later than ``read_seconds`` (``read_timeout``) or the whole ran out of time.
    """
    method, noun, attribute, key = _SHAPES[kind]
    fetch = _fetcher(session, kind)
    items: list[dict[str, Any]] = []
    keys: set[str] = set()
    cursors: set[str] = set()
    ttl: float | None = None
    size = 0
    cursor: str | None = None
    failed: str | None = None
    if deadline is None:
        deadline = anyio.current_time() + timeout_seconds
    with anyio.CancelScope(deadline=deadline) as scope:
        try:
            for _page in range(limits.pages_max):
                result = None
                with anyio.move_on_after(read_seconds):
                    result = await fetch(types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
                if result is None:
                    raise _LatePage
                if "ttl_ms" in result.model_fields_set:
                    page_ttl = clamp_ttl(result.ttl_ms, limits)
                    ttl = page_ttl if ttl is None else min(ttl, page_ttl)
                for entry in getattr(result, attribute):
                    doc = entry.model_dump(by_alias=True, mode="json", exclude_none=True)
                    size += len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
                    if size > limits.catalog_max_bytes:
                        raise LimitExceeded(f"the {noun} catalog is larger than {limits.catalog_max_bytes} bytes")
                    name = str(doc.get(key))
                    if kind == "tools":
                        _check_tool_name(name)
                    if name in keys:
                        raise LimitExceeded(f"the server lists the {noun} {key} {name!r} twice")
                    keys.add(name)
                    items.append(doc)
                    if len(items) > limits.tools_max:
                        raise LimitExceeded(f"the server lists more than {limits.tools_max} {noun}s")
                cursor = result.next_cursor
                if cursor is None:
                    return Listing(items, ttl)
                if len(cursor.encode("utf-8")) > limits.cursor_max_bytes:
                    raise LimitExceeded(f"the server sent a cursor longer than {limits.cursor_max_bytes} bytes")
                if cursor in cursors:
                    raise LimitExceeded("the server repeated a pagination cursor")
                cursors.add(cursor)
            raise LimitExceeded(f"the {noun} listing has more than {limits.pages_max} pages")
        except MCPError as exc:
            failed = failure() or f"{method} failed: {exc.error.message}"
        except ValidationError:
            failed = failure() or f"the server's {method} result is malformed"
        except LimitExceeded as exc:
            failed = exc.message
        except _LatePage:
            failed = failure() or f"a {method} reply did not come within {read_seconds} s (read_timeout)"
    if scope.cancelled_caught:
        failed = failure() or f"the {noun} listing did not finish within {timeout_seconds} s"
    raise UpstreamServerError(failed or f"{method} failed", server=server_id)
