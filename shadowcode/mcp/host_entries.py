"""Each host's server entry for ``shadowcode mcp register``: the one table of clients.

Covers REG-03, REG-04, REG-05, REG-06, REG-07.

A :class:`Host` row says, for one client, which file the host reads, how its entry is shaped
for a stdio launch and for a loopback gateway (or why the host cannot take the gateway), which
values the host would replace with something else (variable references: refused, so every
value is written literally), and the host's own sentence on what else it asks of the user.
Adding a client, or a per-client option, is a change to this table only.

Nothing here reads a file or the environment: documents go in, text comes out.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from shadowcode.errors import UsageError

__all__ = ["HOSTS", "Client", "Host", "Remote", "Stdio", "render_text", "require_unicode", "toml_string"]


class Client(enum.StrEnum):
    """The host application a snippet is written for (REG-03, REG-04)."""

    GENERIC = "generic"
    CODEX = "codex"
    CLAUDE = "claude"
    CURSOR = "cursor"
    GEMINI = "gemini"
    QWEN = "qwen"
    CLINE = "cline"
    OPENCODE = "opencode"
    KILO = "kilo"
    CONTINUE = "continue"
    VSCODE = "vscode"
    ZED = "zed"
    WINDSURF = "windsurf"


@dataclass(frozen=True)
class Stdio:
    """The launch command as a host runs it: absolute ``command``, literal ``args``, ``env`` to set."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def values(self) -> list[str]:
        """Every value the entry carries, for the literal checks (REG-05)."""
        return [self.command, *self.args, *self.env.values()]


@dataclass(frozen=True)
class Remote:
    """A running loopback gateway (canonical URL) and the variable naming its bearer token (REG-06)."""

    url: str
    token_env: str


Syntax = Literal["json", "toml", "yaml"]
Render = Callable[[str, Any], dict[str, Any]]


@dataclass(frozen=True)
class Host:
    """One client's row.

    Attributes:
        label: the host's name as people know it.
        syntax: the configuration language: ``json``, ``toml`` or ``yaml`` (``--json`` needs json).
        stdio: ``(name, Stdio) -> document`` for the stdio launch command.
        http: ``(name, Remote) -> document`` for a running gateway, None when the host cannot
            send a header read from the environment.
        where: the file the host reads the entry from and how to add it (stderr, docs).
        needs: what else the host asks before the entry works, or "" (stderr, docs).
        substitutes: a pattern of the text the host replaces in its values, None when it
            replaces nothing; a value matching it is refused (REG-05).
        substitution: how the host spells those references, for the refusal's message.
        no_http: why the HTTP form is refused, when ``http`` is None.
    """

    label: str
    syntax: Syntax
    stdio: Render
    http: Render | None
    where: str
    needs: str = ""
    substitutes: re.Pattern[str] | None = None
    substitution: str = ""
    no_http: str = ""


# --- entry shapes ------------------------------------------------------------------------


def _env(launch: Stdio, key: str = "env") -> dict[str, Any]:
    return {key: dict(launch.env)} if launch.env else {}


def _bearer(prefix: str, token_env: str, suffix: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {prefix}{token_env}{suffix}"}


def _mcp_servers(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": {name: entry}}


def _generic(name: str, launch: Stdio) -> dict[str, Any]:
    return _mcp_servers(name, {"command": launch.command, "args": list(launch.args), **_env(launch)})


def _claude(name: str, launch: Stdio) -> dict[str, Any]:
    entry = {"type": "stdio", "command": launch.command, "args": list(launch.args), "env": dict(launch.env)}
    return _mcp_servers(name, entry)


def _claude_http(name: str, remote: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"type": "http", "url": remote.url, "headers": _bearer("${", remote.token_env, "}")})


def _cursor(name: str, launch: Stdio) -> dict[str, Any]:
    return _mcp_servers(name, {"type": "stdio", "command": launch.command, "args": list(launch.args), **_env(launch)})


def _cursor_http(name: str, remote: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"url": remote.url, "headers": _bearer("${env:", remote.token_env, "}")})


def _codex(name: str, launch: Stdio) -> dict[str, Any]:
    return {"mcp_servers": {name: {"command": launch.command, "args": list(launch.args), **_env(launch)}}}


def _codex_http(name: str, remote: Remote) -> dict[str, Any]:
    return {"mcp_servers": {name: {"url": remote.url, "bearer_token_env_var": remote.token_env}}}


def _gemini_http(name: str, remote: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"httpUrl": remote.url, "headers": _bearer("${", remote.token_env, "}")})


def _qwen(name: str, launch: Stdio) -> dict[str, Any]:
    entry = {"command": launch.command, "args": list(launch.args), **_env(launch), "alwaysLoadTools": True}
    return _mcp_servers(name, entry)


def _qwen_http(name: str, remote: Remote) -> dict[str, Any]:
    entry = {"httpUrl": remote.url, "headers": _bearer("${", remote.token_env, "}"), "alwaysLoadTools": True}
    return _mcp_servers(name, entry)


def _opencode_like(schema: str) -> tuple[Render, Render]:
    def stdio(name: str, launch: Stdio) -> dict[str, Any]:
        entry = {"type": "local", "command": [launch.command, *launch.args], **_env(launch, "environment")}
        return {"$schema": schema, "mcp": {name: entry}}

    def http(name: str, remote: Remote) -> dict[str, Any]:
        entry = {"type": "remote", "url": remote.url, "headers": _bearer("{env:", remote.token_env, "}")}
        return {"$schema": schema, "mcp": {name: entry}}

    return stdio, http


_CONTINUE_HEAD = {"name": "ShadowCode", "version": "0.0.1", "schema": "v1"}


def _continue(name: str, launch: Stdio) -> dict[str, Any]:
    entry = {"name": name, "type": "stdio", "command": launch.command, "args": list(launch.args), **_env(launch)}
    return {**_CONTINUE_HEAD, "mcpServers": [entry]}


def _continue_http(name: str, remote: Remote) -> dict[str, Any]:
    headers = _bearer("${{ secrets.", remote.token_env, " }}")
    entry = {"name": name, "type": "streamable-http", "url": remote.url, "requestOptions": {"headers": headers}}
    return {**_CONTINUE_HEAD, "mcpServers": [entry]}


def _vscode(name: str, launch: Stdio) -> dict[str, Any]:
    entry = {"type": "stdio", "command": launch.command, "args": list(launch.args), **_env(launch)}
    return {"servers": {name: entry}}


def _vscode_http(name: str, remote: Remote) -> dict[str, Any]:
    return {"servers": {name: {"type": "http", "url": remote.url, "headers": _bearer("${env:", remote.token_env, "}")}}}


def _zed(name: str, launch: Stdio) -> dict[str, Any]:
    entry = {"source": "custom", "command": launch.command, "args": list(launch.args), **_env(launch)}
    return {"context_servers": {name: entry}}


def _windsurf_http(name: str, remote: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"serverUrl": remote.url, "headers": _bearer("${env:", remote.token_env, "}")})


_OPENCODE = _opencode_like("https://opencode.ai/config.json")
_KILO = _opencode_like("https://kilo.ai/config.json")
_DOLLAR_BRACE = re.compile(r"\$\{")


def _headers_literal(label: str) -> str:
    return (
        f"{label} sends header values as written and reads no environment variable in them, so the token "
        "would have to be written into its settings"
    )


HOSTS: dict[Client, Host] = {
    Client.GENERIC: Host(
        "MCP client",
        "json",
        _generic,
        None,
        where="merge the entry into the client's mcpServers map",
        no_http="each host spells a variable reference differently, so the host must be named",
    ),
    Client.CODEX: Host(
        "Codex",
        "toml",
        _codex,
        _codex_http,
        where="append the section to ~/.codex/config.toml (or $CODEX_HOME/config.toml)",
    ),
    Client.CLAUDE: Host(
        "Claude Code",
        "json",
        _claude,
        _claude_http,
        where="merge it into the project's .mcp.json, or add the inner entry with `claude mcp add-json NAME '<entry>'`",
        needs="Claude Code asks once to approve a project's .mcp.json servers",
        substitutes=_DOLLAR_BRACE,
        substitution="${NAME}",
    ),
    Client.CURSOR: Host(
        "Cursor",
        "json",
        _cursor,
        _cursor_http,
        where="merge it into the project's .cursor/mcp.json or ~/.cursor/mcp.json",
        needs="enable the server in Cursor's MCP settings",
        substitutes=_DOLLAR_BRACE,
        substitution="${env:NAME}",
    ),
    Client.GEMINI: Host(
        "Gemini CLI",
        "json",
        _generic,
        _gemini_http,
        where="merge it into the project's .gemini/settings.json",
        needs=(
            "the folder must be trusted (`gemini trust`, or GEMINI_CLI_TRUST_WORKSPACE=true; --skip-trust drops "
            'project servers); headless runs (-p) offer only tools that need no confirmation: add "trust": true to '
            "the entry or run with --approval-mode yolo"
        ),
        substitutes=re.compile(r"\$[A-Za-z0-9_{]"),
        substitution="$NAME and ${NAME}",
    ),
    Client.QWEN: Host(
        "Qwen Code",
        "json",
        _qwen,
        _qwen_http,
        where=(
            "merge it into the user file ~/.qwen/settings.json (a project's .qwen/settings.json waits for an "
            "approval that headless runs never give)"
        ),
        needs=(
            "alwaysLoadTools offers every tool on the first request; headless runs offer only tools that need no "
            'confirmation: add "trust": true to the entry or run with --approval-mode yolo'
        ),
        substitutes=re.compile(r"\$[A-Za-z0-9_{]"),
        substitution="$NAME and ${NAME}",
    ),
    Client.CLINE: Host(
        "Cline",
        "json",
        _generic,
        None,
        where="merge it into cline_mcp_settings.json (the CLI's is ~/.cline/data/settings/cline_mcp_settings.json)",
        needs="Cline asks before each tool call unless the tool is in the entry's autoApprove list",
        no_http=_headers_literal("Cline"),
    ),
    Client.OPENCODE: Host(
        "opencode",
        "json",
        _OPENCODE[0],
        _OPENCODE[1],
        where="merge the mcp entry into opencode.json in the project or ~/.config/opencode/opencode.json",
        substitutes=re.compile(r"\{(?:env|file):"),
        substitution="{env:NAME} and {file:PATH}",
    ),
    Client.KILO: Host(
        "Kilo",
        "json",
        _KILO[0],
        _KILO[1],
        where="merge the mcp entry into kilo.json (or .kilo/kilo.json) in the project or ~/.config/kilo/kilo.json",
        substitutes=re.compile(r"\{(?:env|file):"),
        substitution="{env:NAME} and {file:PATH}",
    ),
    Client.CONTINUE: Host(
        "Continue CLI",
        "yaml",
        _continue,
        _continue_http,
        where=(
            "merge the mcpServers item into ~/.continue/config.yaml, or run `cn --config` with this file "
            "(the JSON files in .continue/mcpServers/ are read by the IDE extension only)"
        ),
        substitutes=re.compile(r"\$\{\{"),
        substitution="${{ secrets.NAME }}",
    ),
    Client.VSCODE: Host(
        "VS Code",
        "json",
        _vscode,
        _vscode_http,
        where="merge it into the workspace's .vscode/mcp.json, or the user mcp.json (MCP: Open User Configuration)",
        needs="VS Code asks you to trust the server when it first starts it",
        substitutes=_DOLLAR_BRACE,
        substitution="${env:NAME}, ${workspaceFolder} and ${input:ID}",
    ),
    Client.ZED: Host(
        "Zed",
        "json",
        _zed,
        None,
        where="merge it into ~/.config/zed/settings.json, or the project's .zed/settings.json in a trusted worktree",
        no_http=_headers_literal("Zed"),
    ),
    Client.WINDSURF: Host(
        "Windsurf",
        "json",
        _generic,
        _windsurf_http,
        where="merge it into ~/.codeium/windsurf/mcp_config.json, then refresh the MCP servers in Cascade",
        substitutes=_DOLLAR_BRACE,
        substitution="${env:NAME}",
    ),
}
"""Client → its row; every :class:`Client` has one (a test checks)."""


# --- literal values (REG-05) --------------------------------------------------------------


def require_unicode(values: Sequence[str]) -> None:
    """Refuse values holding undecodable bytes (surrogate escapes): no format can carry them.

    Raises:
        UsageError: a value is not valid UTF-8 (exit 2).
    """
    for value in values:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"{value!r} is not valid UTF-8; move the project to a path that is") from exc


def refuse_substitution(host: Host, values: Sequence[str]) -> None:
    """Refuse a value the host would replace with an environment value or a file (REG-05).

    Raises:
        UsageError: a value holds the host's reference syntax (exit 2).
    """
    if host.substitutes is None:
        return
    for value in values:
        found = host.substitutes.search(value)
        if found:
            raise UsageError(
                f"{host.label} replaces {host.substitution} in its configuration, so {value!r} cannot be written "
                f"literally; use a location without {found.group(0)!r}"
            )


# --- encoders -----------------------------------------------------------------------------

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(value: str) -> str:
    """Encode ``value`` as a TOML basic string, quotes included.

    Backslash, double quote and every control character (U+0000..U+001F, U+007F) are
    escaped; everything else is kept as UTF-8, so ``tomllib.loads(f"k = {toml_string(v)}")``
    gives back ``v`` exactly (REG-05).

    Raises:
        UsageError: ``value`` holds a lone surrogate, which TOML cannot represent.
    """
    require_unicode([value])
    out: list[str] = ['"']
    for ch in value:
        escaped = _TOML_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in cast("list[object]", value)) + "]"
    pairs = ", ".join(f"{toml_string(k)} = {_toml_value(v)}" for k, v in value.items())
    return f"{{ {pairs} }}"


def _toml_text(document: dict[str, Any]) -> str:
    """``{"mcp_servers": {name: {key: str | list | table}}}`` as one ``[mcp_servers.NAME]`` section."""
    ((name, entry),) = document["mcp_servers"].items()
    return f"[mcp_servers.{name}]\n" + "".join(f"{key} = {_toml_value(value)}\n" for key, value in entry.items())


class _Quoted(str):
    """A YAML string written double-quoted: one spelling for YAML 1.1 and 1.2 readers alike (REG-05)."""


def _quote_values(value: Any) -> Any:
    if isinstance(value, str):
        return _Quoted(value)
    if isinstance(value, list):
        return [_quote_values(v) for v in cast("list[object]", value)]
    if isinstance(value, dict):
        return {k: _quote_values(v) for k, v in cast("dict[str, object]", value).items()}
    return value


def _yaml_text(document: dict[str, Any]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def quoted(dumper: yaml.SafeDumper, value: _Quoted) -> yaml.ScalarNode:
        # PyYAML's stubs leave represent_scalar's value parameter untyped.
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"')  # pyright: ignore[reportUnknownMemberType]

    Dumper.add_representer(_Quoted, quoted)
    return yaml.dump(_quote_values(document), Dumper=Dumper, allow_unicode=True, sort_keys=False, width=2**31, indent=2)


def render_text(host: Host, document: dict[str, Any]) -> str:
    """The text to print for ``document`` in the host's configuration language.

    JSON is indented and keeps non-ASCII characters; TOML is one ``[mcp_servers.NAME]``
    section of basic strings; YAML writes every string value double-quoted. Each parses back
    to ``document`` exactly (REG-05).
    """
    if host.syntax == "toml":
        return _toml_text(document)
    if host.syntax == "yaml":
        return _yaml_text(document)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
