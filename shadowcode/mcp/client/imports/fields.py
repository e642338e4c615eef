"""Which imported fields this build carries into a definition: the one table (CW-01).

Each row names a field of another host's server entry, the definition field it becomes and
whether this build's definitions have that field. A row marked ``False`` is reported per server
as "not imported: not supported by this build"; once the definition gains the field (tool
filters: CW-02; separate timeouts: CW-07; required servers; header authentication), turning
its row to ``True`` is the whole change. ``convert`` makes the definition value of the source value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FIELDS", "FieldRule", "NOT_SUPPORTED", "UNCARRIED"]

NOT_SUPPORTED = "not imported: not supported by this build"
_UNFILTERED = "every tool of the server is offered: review its tools (`shadowcode mcp tools`) before relying on it"


def _same(value: Any) -> Any:
    return value


def _ms_to_seconds(value: Any) -> Any:
    return value / 1000 if isinstance(value, int | float) and not isinstance(value, bool) else value


@dataclass(frozen=True)
class FieldRule:
    """One imported field.

    Attributes:
        target: the definition field it becomes.
        supported: whether this build's definitions have ``target``.
        convert: the definition value of the source value.
        consequence: what leaving it out means, said with the note (empty: nothing more).
    """

    target: str
    supported: bool
    convert: Callable[[Any], Any] = _same
    consequence: str = ""


FIELDS: dict[str, FieldRule] = {
    # source field: what it becomes (Codex spellings; JSON hosts share the names they have)
    "description": FieldRule("description", True),
    "bearer_token_env_var": FieldRule("api_key_env", True),
    "enabled_tools": FieldRule("enabled_tools", True, consequence=_UNFILTERED),
    "disabled_tools": FieldRule("disabled_tools", True, consequence=_UNFILTERED),
    "startup_timeout_sec": FieldRule("connect_timeout", True),
    "startup_timeout_ms": FieldRule("connect_timeout", True, _ms_to_seconds),
    "tool_timeout_sec": FieldRule("call_timeout", True),
    "required": FieldRule("required", True),
    "http_headers": FieldRule("headers", True),
    "env_http_headers": FieldRule("env_headers", True),
    # JSON ``headers`` are split: literal ones become ``headers``, ``${VAR}`` ones ``env_headers``
    "headers": FieldRule("headers", True),
    "env_headers": FieldRule("env_headers", True),
}
"""Source field → rule. Fields handled apart: ``command``/``args``/``url``/``type``/``env``/``env_vars``."""

UNCARRIED: dict[str, str] = {
    "cwd": "not imported: definitions have no working directory; the server starts in the project",
    "envFile": "not imported: definitions read no env file; reference each variable in env_refs",
    "oauth": "not imported: OAuth sign-in is not supported by this build",
    "oauth_resource": "not imported: OAuth sign-in is not supported by this build",
    "scopes": "not imported: OAuth sign-in is not supported by this build",
    "auth": "not imported: OAuth sign-in is not supported by this build",
    "enabled": "noted only: importing enables nothing; enable it with `shadowcode mcp enable`",
    "disabled": "noted only: importing enables nothing; enable it with `shadowcode mcp enable`",
    "alwaysAllow": "not imported: every call is approved as ShadowCode's policy says",
    "autoApprove": "not imported: every call is approved as ShadowCode's policy says",
    "timeout": "not imported: not supported by this build",
    "trust": "not imported: every call is approved as ShadowCode's policy says",
    "connectionTimeout": "not imported: not supported by this build",
    "requestOptions": "not imported: only its headers are carried",
}
"""Known fields with no definition equivalent → the sentence the report gives."""
