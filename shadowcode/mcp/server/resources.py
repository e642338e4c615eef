"""The four resources (SRV-05) and two prompts (SRV-06) of the native server."""

from __future__ import annotations

import json
from typing import Any

from shadowcode.engine import api as m
from shadowcode.errors import NotFound
from shadowcode.mcp.server.context import ServerContext

__all__ = ["PROMPTS", "RESOURCES", "read_resource", "render_prompt"]

RESOURCES: tuple[tuple[str, str, str], ...] = (
    ("shadow://project", "project", "The fixed project: path, trust, level, saved map."),
    ("shadow://sessions", "sessions", "This project's task sessions, newest first."),
    ("shadow://memory", "memory", "The project note and its hash."),
    ("shadow://plan", "plan", "The newest recorded plan of this project, or null."),
)

PROMPTS: tuple[tuple[str, str, tuple[tuple[str, str, bool], ...]], ...] = (
    (
        "delegate",
        "Delegate a task for the fixed project to ShadowCode.",
        (("task", "What should be done in this project.", True),),
    ),
    ("understand", "Ask for a read-only inspection of the fixed project.", ()),
)


async def read_resource(ctx: ServerContext, uri: str) -> str:
    """The JSON text of resource ``uri``.

    Returns:
        A JSON document: project ``{"path", "trusted", "level", "map", "map_saved_at"}``, sessions
        ``{"sessions": [...]}``, memory (as shadow_memory read), plan (any JSON value, ``null`` when
        no plan was recorded).

    Raises:
        NotFound: an unknown uri.
    """
    api, caller, empty = ctx.api, ctx.caller(), m.Empty()
    doc: Any
    if uri == "shadow://project":
        saved = await api.saved_map(empty, caller)
        doc = await api.call_as_json(m.EngineApi.project_get, empty, caller) | {
            "map": saved.map if saved else None,
            "map_saved_at": saved.saved_at if saved else None,
        }
    elif uri == "shadow://sessions":
        doc = {"sessions": await api.call_as_json(m.EngineApi.sessions, m.SessionQuery(), caller)}
    elif uri == "shadow://memory":
        doc = await api.call_as_json(m.EngineApi.memory_read, m.MemoryRef(), caller)
    elif uri == "shadow://plan":
        doc = await api.plan(empty, caller)
    else:
        raise NotFound(f"unknown resource {uri!r}")
    return json.dumps(doc, ensure_ascii=False)


def render_prompt(ctx: ServerContext, name: str, arguments: dict[str, str] | None) -> tuple[str, str]:
    """The ``(description, user message text)`` of prompt ``name``.

    Raises:
        NotFound: an unknown prompt.
        ToolError: ``delegate`` without a non-empty ``task``.
    """
    from shadowcode.errors import ToolError

    args = arguments or {}
    if name == "delegate":
        task = (args.get("task") or "").strip()
        if not task:
            raise ToolError("the delegate prompt needs a non-empty 'task' argument")
        return PROMPTS[0][1], (
            f"Use the ShadowCode tools for the project at {ctx.root}. Delegate this task with shadow_run "
            f"(ask for permission_level 'workspace' only if it must change files), then follow it with "
            f"shadow_jobs until it finishes, showing me any approval it asks for before resolving it:\n\n{task}"
        )
    if name == "understand":
        return PROMPTS[1][1], (
            f"Inspect the project at {ctx.root} without changing anything: call shadow_status, "
            "shadow_understand, shadow_review and shadow_doctor, then summarize its layout, how to build and "
            "test it, and anything that looks wrong."
        )
    raise NotFound(f"unknown prompt {name!r}")
