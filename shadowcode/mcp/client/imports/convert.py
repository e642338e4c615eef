"""One server entry of another host's config → a definition's bytes, or why not (CW-01).

The result is canonical JSON (sorted keys, two-space indent), so importing the same entry twice
gives the same bytes and the same hash. It is validated with the definition parser before it
is offered; a server it refuses is skipped with the parser's reason. Nothing is started,
resolved or contacted: references stay references, and a literal that looks like a credential
is never copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from shadowcode.errors import ConfigError
from shadowcode.json_values import json_array, json_object
from shadowcode.mcp.client.definitions import parse_definition
from shadowcode.mcp.client.imports.fields import FIELDS, NOT_SUPPORTED, UNCARRIED
from shadowcode.mcp.client.imports.values import (
    DOLLAR,
    Dialect,
    Literal,
    Reference,
    argument_looks_like_credential,
    looks_like_credential,
    variable_name,
)

__all__ = ["DESCRIPTION", "SSE_REASON", "FieldNote", "PlannedServer", "plan_server", "server_name"]

DESCRIPTION = "imported from another MCP host's configuration"
"""The description of an entry that has none: the same whichever host or file it came from, so
one server configured alike in two hosts is one definition."""

SSE_REASON = (
    "not importable: it speaks only the 2024 HTTP+SSE transport ('type: sse'), which ShadowCode does not "
    "connect to; if the server also offers a Streamable HTTP endpoint, add that URL instead"
)
_STDIO_KINDS = {"stdio"}
_HTTP_KINDS = {"http", "streamable-http", "streamable_http", "streamablehttp"}
_HANDLED = {"type", "transport", "command", "args", "url", "env", "env_vars", "headers", "http_headers",
            "env_http_headers"}  # fmt: skip
_BEARER = re.compile(r"Bearer\s+(.+)", re.S)
_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]+")
_SILENT = {"alwaysLoadTools"}
"""Fields that only say how a host offers tools to its own model: nothing to carry, nothing to say."""


@dataclass(frozen=True)
class FieldNote:
    """What happened to one field of an imported server that was not copied as it was.

    Attributes:
        field: the source field, dotted for a member (``env.API_KEY``, ``headers.Authorization``).
        message: what was done and, for a credential, how to reference it instead.
    """

    field: str
    message: str


@dataclass(frozen=True)
class PlannedServer:
    """One server entry, converted or not.

    Attributes:
        source_name: its name in the host's config.
        name: the definition name (``config:NAME``), None when it cannot be made one.
        definition: the canonical JSON bytes, None when skipped.
        reason: why it is skipped, None when converted.
        notes: fields not copied as they were.
    """

    source_name: str
    name: str | None
    definition: bytes | None
    reason: str | None
    notes: tuple[FieldNote, ...] = ()


class _Skip(Exception):
    pass


@dataclass
class _Plan:
    name: str
    doc: dict[str, Any]
    dialect: Dialect = DOLLAR
    notes: list[FieldNote] = field(default_factory=list[FieldNote])

    def note(self, where: str, message: str) -> None:
        self.notes.append(FieldNote(where, message))


def server_name(source_name: str) -> str | None:
    """A valid definition name made of ``source_name`` (other characters as ``-``, at most 32), or None."""
    name = _NAME_BAD.sub("-", source_name)
    name = re.sub(r"__+", "_", name).lstrip("-_")[:32].rstrip("_")
    return name or None


def plan_server(source_name: str, entry: Any, dialect: Dialect = DOLLAR) -> PlannedServer:
    """Convert one server entry of a host's config (CW-01).

    Args:
        source_name: the entry's key in the host's server map.
        entry: the entry (a JSON, TOML or YAML object) in the common field names (see
            :mod:`~shadowcode.mcp.client.imports.shapes`).
        dialect: how the host spells a variable reference (default: the ``${...}`` family).

    Returns:
        The definition bytes and notes, or the reason it is skipped: no object, no valid name,
        an SSE-only or unknown transport, neither or both of ``command`` and ``url``, a
        variable reference in the command path, arguments or URL, or a definition the parser
        refuses.
    """
    name = server_name(source_name)
    if name is None:
        return PlannedServer(source_name, None, None, f"{source_name!r} cannot be made a server name")
    plan = _Plan(name, {"name": name, "description": DESCRIPTION}, dialect)
    if name != source_name:
        plan.note("name", f"renamed to {name!r}: names use letters, digits, '-' or single '_' (at most 32)")
    try:
        fields = json_object(entry)
        if fields is None:
            raise _Skip("its entry is not an object")
        _transport(plan, fields)
        _other_fields(plan, fields)
        data = (json.dumps(plan.doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        parse_definition(data, f"{source_name} as converted", fmt="json")
    except _Skip as exc:
        return PlannedServer(source_name, name, None, str(exc), tuple(plan.notes))
    except ConfigError as exc:
        return PlannedServer(source_name, name, None, exc.message, tuple(plan.notes))
    return PlannedServer(source_name, name, data, None, tuple(plan.notes))


def _transport(plan: _Plan, entry: dict[str, Any]) -> None:
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and not isinstance(kind, str):
        raise _Skip("field 'type' is not a string")
    kind = kind.lower() if kind else None
    if kind == "sse":
        raise _Skip(SSE_REASON)
    if kind is not None and kind not in _STDIO_KINDS | _HTTP_KINDS:
        raise _Skip(f"not importable: transport {kind!r} is not stdio or Streamable HTTP")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command and has_url:
        raise _Skip("both 'command' and 'url' are set; a server has one transport")
    if not has_command and not has_url:
        raise _Skip("neither 'command' (a stdio server) nor 'url' (a Streamable HTTP server) is set")
    if (kind in _STDIO_KINDS and has_url) or (kind in _HTTP_KINDS and has_command):
        raise _Skip(f"'type: {kind}' does not match its {'url' if has_url else 'command'}")
    if has_command:
        _stdio(plan, entry)
    else:
        _http(plan, entry)


def _strings(value: object, what: str) -> list[str]:
    items = json_array(value)
    strings = [v for v in items if isinstance(v, str)] if items is not None else []
    if items is None or len(strings) != len(items):
        raise _Skip(f"field {what!r} is not a list of strings")
    return strings


def _stdio(plan: _Plan, entry: dict[str, Any]) -> None:
    command = entry["command"]
    argv = [command] if isinstance(command, str) else _strings(command, "command")
    argv += _strings(entry.get("args", []), "args")
    if not argv or not argv[0]:
        raise _Skip("field 'command' is empty")
    if plan.dialect.has_reference(argv[0]):
        raise _Skip(
            "a variable reference in the command path cannot be carried: the program is run as written, "
            "never expanded; write its path out"
        )
    for index, arg in enumerate(argv[1:]):
        if plan.dialect.has_reference(arg):
            raise _Skip(
                f"args[{index}] holds a variable reference: arguments are passed literally, never expanded; "
                "write the value out, or let the server read it from a variable named in env_refs"
            )
    for index, arg in enumerate(argv[1:]):
        if argument_looks_like_credential(argv[index] if index else None, arg):
            raise _Skip(
                f"args[{index}] looks like a literal credential: it is not copied, and arguments cannot reference "
                "a secret; if the server reads it from an environment variable, add the server by hand with that "
                "variable in env_refs (`shadowcode secret set NAME`)"
            )
    plan.doc["command"] = argv
    env, refs = _env(plan, entry.get("env", {}))
    env_vars = json_array(entry.get("env_vars", []))
    if env_vars is None:
        raise _Skip("field 'env_vars' is not a list of variable names")
    for item in env_vars:
        named = json_object(item)
        var = named.get("name") if named is not None else item
        if isinstance(var, str):
            refs[var] = var
        else:
            plan.note("env_vars", "an entry that is not a variable name was not imported")
    if env:
        plan.doc["env"] = env
    if refs:
        plan.doc["env_refs"] = refs
    for key in ("headers", "http_headers", "env_http_headers"):
        if key in entry:
            plan.note(key, "not imported: headers apply to HTTP servers only")


def _env(plan: _Plan, given: object) -> tuple[dict[str, str], dict[str, str]]:
    env = json_object(given)
    if env is None:
        raise _Skip("field 'env' is not an object")
    literal: dict[str, str] = {}
    refs: dict[str, str] = {}
    for key, value in env.items():
        where = f"env.{key}"
        if not isinstance(value, str):
            plan.note(where, "not imported: the value is not a string")
            continue
        kind = plan.dialect.classify(value)
        if isinstance(kind, Reference):
            refs[key] = kind.name
            _reference_notes(plan, where, kind)
        elif isinstance(kind, Literal) and looks_like_credential(key, value):
            refs[key] = variable_name(key)
            plan.note(where, _credential_note(refs[key]))
        elif isinstance(kind, Literal):
            literal[key] = value
        else:
            plan.note(where, "not imported: it mixes text and a variable reference; store the whole value as a "
                             "secret and name it in env_refs")  # fmt: skip
    return literal, refs


def _reference_notes(plan: _Plan, where: str, ref: Reference) -> None:
    if ref.input_id is not None:
        plan.note(where, f"VS Code prompts for input {ref.input_id!r}; store its value once with "
                         f"`shadowcode secret set {ref.name}` (the definition references {ref.name})")  # fmt: skip
    if ref.has_default:
        plan.note(where, f"its default value is not carried: set {ref.name} in the environment or store it "
                         f"with `shadowcode secret set {ref.name}`")  # fmt: skip


def _credential_note(name: str) -> str:
    return (
        f"holds a literal credential: not copied; the definition references {name} instead: store the value "
        f"with `shadowcode secret set {name}` (read from stdin) or set it in the environment"
    )


def _http(plan: _Plan, entry: dict[str, Any]) -> None:
    url = entry["url"]
    if not isinstance(url, str):
        raise _Skip("field 'url' is not a string")
    if plan.dialect.has_reference(url):
        raise _Skip("a variable reference in the URL cannot be carried: write the URL out")
    plan.doc["url"] = url
    literal: dict[str, str] = {}
    from_env: dict[str, str] = {}
    for source in ("headers", "http_headers"):
        headers = json_object(entry.get(source, {}))
        if headers is None:
            raise _Skip(f"field {source!r} is not an object")
        for key, value in headers.items():
            _header(plan, f"{source}.{key}", key, value, literal, from_env)
    env_headers = json_object(entry.get("env_http_headers", {}))
    if env_headers is None:
        raise _Skip("field 'env_http_headers' is not an object")
    from_env.update({k: str(v) for k, v in env_headers.items()})
    for target, values in (("headers", literal), ("env_headers", from_env)):
        rule = FIELDS[target]
        if values and rule.supported:
            plan.doc[rule.target] = rule.convert(values)
        for key in sorted(values) if not rule.supported else ():
            plan.note(f"{target}.{key}", f"{NOT_SUPPORTED} (it would become {rule.target}.{key})")
    for key in ("env", "env_vars"):
        if key in entry:
            plan.note(key, "not imported: environment variables apply to stdio servers only")


def _header(plan: _Plan, where: str, key: str, value: Any, literal: dict[str, str], from_env: dict[str, str]) -> None:
    if not isinstance(value, str):
        plan.note(where, "not imported: the value is not a string")
        return
    bearer = _BEARER.fullmatch(value.strip())
    token = plan.dialect.classify(bearer.group(1)) if bearer else None
    plain = isinstance(token, Reference) and token.input_id is None and not token.has_default
    if key.lower() == "authorization" and plain and isinstance(token, Reference):
        plan.doc["api_key_env"] = token.name
        return
    kind = plan.dialect.classify(value)
    if isinstance(kind, Reference):
        from_env[key] = kind.name
        _reference_notes(plan, where, kind)
    elif isinstance(kind, Literal) and looks_like_credential(key, value):
        if key.lower() == "authorization" and value.strip().lower().startswith("bearer "):
            plan.doc["api_key_env"] = variable_name(f"{plan.name}_TOKEN")
            plan.note(where, _credential_note(plan.doc["api_key_env"]) + " (sent as 'Authorization: Bearer')")
        else:
            plan.note(where, "holds a literal credential: not copied; put it in an environment variable or a "
                             "stored secret and reference that variable (env_headers)")  # fmt: skip
    elif isinstance(kind, Literal):
        literal[key] = value
    else:
        plan.note(where, "not imported: it mixes text and a variable reference")


def _other_fields(plan: _Plan, entry: dict[str, Any]) -> None:
    for key, value in entry.items():
        if (
            key in _HANDLED
            or key in _SILENT
            or (key == "enabled" and value is True)
            or (key == "disabled" and value is False)
        ):
            continue
        rule = FIELDS.get(key)
        if rule is not None and rule.supported:
            plan.doc[rule.target] = rule.convert(value)
        elif rule is not None:
            more = f"; {rule.consequence}" if rule.consequence else ""
            plan.note(key, f"{NOT_SUPPORTED} (it would become {rule.target}){more}")
        else:
            plan.note(key, UNCARRIED.get(key, "not imported: unknown field"))
