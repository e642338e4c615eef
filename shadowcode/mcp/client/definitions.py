"""External MCP server definitions: their shape, ids, content hashes and the parser of their bytes (CLI-01, CLI-03).

A definition is a small JSON or YAML object naming one server:

- stdio: ``name``, ``command`` (an array of literal arguments, never a shell string),
  optional ``description``, ``timeout_sec``, ``env_refs`` (child variable → secret or
  environment name) and the legacy literal ``env`` (child variable → value);
- Streamable HTTP: ``name``, ``url``, optional ``timeout_sec``, ``description`` and its
  credentials by reference (CLI-04, CW-08): ``api_key_env`` or its alias ``bearer_token_env_var``
  (a secret or environment name sent as ``Authorization: Bearer``), ``env_headers`` (header name
  → secret or environment name), literal ``headers`` for non-secret values (a literal
  ``Authorization`` is refused), and the OAuth settings ``oauth`` (``client_id`` with its exact
  ``issuer`` and optionally ``client_secret_env``, ``client_metadata_url``, ``scopes``,
  ``callback_port``) and ``oauth_resource``.
- either transport: optional ``enabled_tools`` / ``disabled_tools`` (tool filters, CW-02),
  ``connect_timeout``, ``call_timeout``, ``read_timeout`` (CW-07), ``required`` and ``lazy``
  (CW-10) (:class:`ServerOptions`). They are part of the bytes, hence of the hash: changing one needs
  review like any other change.

Unknown fields, a definition with both ``command`` and ``url`` (or neither), and ``env`` /
``env_refs`` on an HTTP definition are refused with the source and the field named.

Ids: ``config:NAME`` for a global registration (``shadowcode mcp add FILE``), and
``project:<relative path>`` for a file directly inside ``.shadowcode/mcp/`` or ``.shadow/mcp/``
of the project (``.json``, ``.yaml`` or ``.yml``; sub-folders are not read and a link must not
lead outside its folder). A definition's hash is the SHA-256 of its exact bytes. Files are read
by :mod:`shadowcode.engine.mcp.definition_files`; this module only validates bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from shadowcode.errors import ConfigError
from shadowcode.limits import (
    MCP_CALL_TIMEOUT_MAX_SECONDS,
    MCP_CONNECT_TIMEOUT_MAX_SECONDS,
    MCP_DEFINITION_MAX_BYTES,
    MCP_READ_TIMEOUT_MAX_SECONDS,
    MCP_TIMEOUT_MAX_SECONDS,
    MCP_TIMEOUT_MIN_SECONDS,
    MCP_TOOL_FILTER_NAMES_MAX,
    MCP_TOOL_NAME_MAX_CHARS,
)
from shadowcode.mcp.client.endpoint import check_url

__all__ = [
    "PROJECT_FOLDERS",
    "DefinitionProblem",
    "HttpSpec",
    "OAuthSpec",
    "ServerDefinition",
    "ServerOptions",
    "StdioSpec",
    "parse_definition",
    "sha256_hex",
]

PROJECT_FOLDERS: tuple[str, ...] = (".shadowcode/mcp", ".shadow/mcp")
"""Folders of a project whose files are server definitions (CLI-03)."""

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_ERRORS_SHOWN = 3


def _check_name(value: str) -> str:
    if not _NAME.fullmatch(value) or value.endswith("_"):
        raise ValueError(
            "use 1-32 letters, digits, '-' or single '_' (not at the end), starting with a letter or digit"
        )
    return value


def _check_vars(value: dict[str, str], what: str) -> dict[str, str]:
    for key, item in value.items():
        if not _VAR.fullmatch(key):
            raise ValueError(f"{key!r} is not a valid environment variable name")
        if "\x00" in item:
            raise ValueError(f"the {what} of {key!r} contains a NUL byte")
    return value


_TIMEOUT_RANGES: dict[str, float] = {
    "connect_timeout": MCP_CONNECT_TIMEOUT_MAX_SECONDS,
    "call_timeout": MCP_CALL_TIMEOUT_MAX_SECONDS,
    "read_timeout": MCP_READ_TIMEOUT_MAX_SECONDS,
}


class ServerOptions(BaseModel):
    """What every definition may add, whatever its transport: tool filters, timeouts, required, lazy
    (CW-02, CW-07, CW-10).

    Timeouts are seconds from MCP_TIMEOUT_MIN_SECONDS up to their own maximum; an out-of-range
    value is refused naming the allowed range. Tool names are 1-MCP_TOOL_NAME_MAX_CHARS characters,
    at most MCP_TOOL_FILTER_NAMES_MAX a list, no repeats.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled_tools: tuple[str, ...] | None = None
    """Allowlist of tool names; None: every listed tool (CW-02)."""
    disabled_tools: tuple[str, ...] = ()
    """Denylist of tool names, applied after ``enabled_tools`` (CW-02)."""
    connect_timeout: float | None = None
    """Seconds to start or reach the server, initialize and list its tools (CW-07); None: see
    :func:`shadowcode.mcp.client.timeouts.timeouts_of`."""
    call_timeout: float | None = None
    """Seconds for each ``tools/call`` and ``prompts/get`` (CW-07); None: ``timeout_sec``."""
    read_timeout: float | None = None
    """Seconds for each other reply (CW-07); None: ``timeout_sec``."""
    required: StrictBool = False
    """A Build task fails at start, before any model request, when this server cannot connect."""
    lazy: StrictBool = False
    """Not started when a Build task starts, only when the task needs it: a call of one of its
    tools, its tool list or its resources asked for (CW-10). A ``required`` server connects at
    start all the same."""

    @field_validator("connect_timeout", "call_timeout", "read_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return value
        top = _TIMEOUT_RANGES[str(info.field_name)]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (MCP_TIMEOUT_MIN_SECONDS <= value <= top)
        ):
            raise ValueError(f"must be a number of seconds from {MCP_TIMEOUT_MIN_SECONDS:g} to {top:g} (got {value!r})")
        return float(value)

    @field_validator("enabled_tools", "disabled_tools", mode="before")
    @classmethod
    def _tool_names(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, list | tuple):
            raise ValueError("must be an array of tool names")
        items = list(cast("list[object] | tuple[object, ...]", value))
        if len(items) > MCP_TOOL_FILTER_NAMES_MAX:
            raise ValueError(f"lists {len(items)} tool names; the limit is {MCP_TOOL_FILTER_NAMES_MAX}")
        for item in items:
            if not isinstance(item, str) or not item or len(item) > MCP_TOOL_NAME_MAX_CHARS or "\x00" in item:
                raise ValueError(f"every tool name must be a string of 1-{MCP_TOOL_NAME_MAX_CHARS} characters")
        if len(set(items)) != len(items):
            raise ValueError("names a tool twice")
        return tuple(items)

    def allows(self, tool: str) -> bool:
        """True when the filters let ``tool`` through: in ``enabled_tools`` (when set) and not disabled (CW-02)."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools


class StdioSpec(ServerOptions):
    """A stdio server: the literal command and what its environment gets (CLI-03, CLI-12)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Server name; tools appear as ``mcp__<name>__<tool>``."""
    command: tuple[str, ...] = Field(min_length=1)
    """Program and arguments, passed literally (no shell)."""
    description: str | None = None
    """What the server is for, shown in catalogs."""
    timeout_sec: float | None = Field(default=None, ge=MCP_TIMEOUT_MIN_SECONDS, le=MCP_TIMEOUT_MAX_SECONDS)
    """Seconds for initialization, discovery and each call; None: MCP_TIMEOUT_DEFAULT_SECONDS."""
    env_refs: dict[str, str] = Field(default_factory=dict)
    """Child variable name → name of a stored secret or environment variable (resolved at connection start)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Legacy literal child variables; catalogs show the names only."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError("must be an array of literal arguments, not a shell command string")
        given = value  # narrowed here, so the value returned keeps its own type
        items = cast("list[object] | tuple[object, ...]", given) if isinstance(given, list | tuple) else ()
        for arg in items:
            if not isinstance(arg, str) or not arg or "\x00" in arg:
                raise ValueError("every argument must be a non-empty string without NUL bytes")
        return value

    @field_validator("env_refs")
    @classmethod
    def _env_refs(cls, value: dict[str, str]) -> dict[str, str]:
        for ref in value.values():
            if not _VAR.fullmatch(ref):
                raise ValueError(f"{ref!r} is not a valid secret or variable name")
        return _check_vars(value, "reference")

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_vars(value, "value")


_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-type",
        "content-length",
        "accept",
        "accept-encoding",
        "connection",
        "transfer-encoding",
        "last-event-id",
        "te",
        "upgrade",
        "cookie",
        "proxy-authorization",
    }
)
"""Headers the transport owns; a definition may not set them (nor any ``Mcp-*`` header)."""


def _check_header_names(value: dict[str, str], field: str) -> None:
    seen: set[str] = set()
    for name in value:
        lower = name.lower()
        if not _HEADER.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid HTTP header name")
        if lower in _RESERVED_HEADERS or lower.startswith("mcp-"):
            raise ValueError(f"the header {name!r} is set by the client itself and cannot be configured")
        if lower in seen:
            raise ValueError(f"the header {name!r} appears twice (names compare without case)")
        seen.add(lower)


class OAuthSpec(BaseModel):
    """How ``shadowcode mcp login`` signs in to an HTTP server (CW-08); every field is optional.

    A pre-registered client names its ``client_id`` and the exact ``issuer`` of the
    authorization server that registered it (a confidential one also ``client_secret_env``); without one the client uses
    ``client_metadata_url`` (a client ID metadata document) when the server supports it, else
    dynamic client registration.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_id: str | None = Field(default=None, min_length=1, max_length=512)
    """A pre-registered public client id; requires ``issuer``."""
    issuer: str | None = Field(default=None, min_length=1, max_length=2048)
    """The exact issuer the pre-registered client belongs to."""
    client_secret_env: str | None = None
    """Name of the stored secret or environment variable holding a pre-registered confidential
    client's secret (resolved only at login and refresh, never stored); requires ``client_id``."""
    client_metadata_url: str | None = Field(default=None, min_length=1, max_length=2048)
    """An https URL of a client ID metadata document describing this client."""
    scopes: tuple[str, ...] = ()
    """Scopes to ask for; none: the ones the server advertises."""
    callback_port: int | None = Field(default=None, ge=1024, le=65535)
    """A fixed loopback port for the sign-in callback (a pre-registered redirect URI); None: any free port."""

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for scope in value:
            if not scope or any(ord(c) <= 0x20 or c in '"\\' or ord(c) == 0x7F for c in scope):
                raise ValueError(f"{scope!r} is not a valid scope")
        return value

    @field_validator("client_secret_env")
    @classmethod
    def _secret_env(cls, value: str | None) -> str | None:
        if value is not None and not _VAR.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid secret or variable name")
        return value

    @field_validator("issuer", "client_metadata_url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_url(value, bearer=True)
            except ValueError as exc:
                raise ValueError(str(exc).replace("sends a credential", "names a sign-in URL")) from None
        return value

    @model_validator(mode="after")
    def _pair(self) -> OAuthSpec:
        if self.client_id is not None and self.issuer is None:
            raise PydanticCustomError("oauth", "{reason}", {"reason": "'client_id' requires its exact 'issuer'"})
        if self.client_secret_env is not None and self.client_id is None:
            raise PydanticCustomError(
                "oauth", "{reason}", {"reason": "'client_secret_env' requires the pre-registered 'client_id'"}
            )
        return self


class HttpSpec(ServerOptions):
    """A Streamable HTTP server (CLI-03, CLI-11); URL rules: :func:`~shadowcode.mcp.client.endpoint.check_url`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Server name."""
    url: str = Field(min_length=1, max_length=2048)
    """The endpoint: http(s), no user info, query or fragment; https for a bearer credential off loopback."""
    description: str | None = None
    """What the server is for."""
    api_key_env: str | None = None
    """Name of the stored secret or environment variable holding a bearer token."""
    bearer_token_env_var: str | None = None
    """The same as ``api_key_env`` (the peer's spelling); at most one of the two."""
    env_headers: dict[str, str] = Field(default_factory=dict)
    """Header name → name of a stored secret or environment variable (resolved at connection start)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Literal, non-secret headers; ``Authorization`` is refused here."""
    oauth: OAuthSpec | None = None
    """Sign-in settings for ``shadowcode mcp login`` (CW-08)."""
    oauth_resource: str | None = Field(default=None, min_length=1, max_length=2048)
    """An exact pin for the resource the server's metadata names (CW-08)."""
    allow_private_network: StrictBool = False
    """The URL's host name may resolve to addresses that are not public (private, loopback,
    link-local ...); without it such a name is refused when the connection starts (CW-11)."""
    timeout_sec: float | None = Field(default=None, ge=MCP_TIMEOUT_MIN_SECONDS, le=MCP_TIMEOUT_MAX_SECONDS)
    """Seconds for initialization, discovery and each call."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("api_key_env", "bearer_token_env_var")
    @classmethod
    def _key_env(cls, value: str | None) -> str | None:
        if value is not None and not _VAR.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid secret or variable name")
        return value

    @field_validator("env_headers")
    @classmethod
    def _env_headers(cls, value: dict[str, str]) -> dict[str, str]:
        _check_header_names(value, "env_headers")
        for ref in value.values():
            if not _VAR.fullmatch(ref):
                raise ValueError(f"{ref!r} is not a valid secret or variable name")
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        _check_header_names(value, "headers")
        for name, item in value.items():
            if name.lower() == "authorization":
                raise ValueError(
                    "a literal 'Authorization' header would store a credential in the definition; name it by "
                    "reference instead: 'bearer_token_env_var' (or 'api_key_env') for a bearer token, "
                    "'env_headers' for another scheme, or sign in with `shadowcode mcp login`"
                )
            if any(ord(c) < 0x20 and c != "\t" or ord(c) == 0x7F for c in item) or len(item) > 4096:
                raise ValueError(f"the value of {name!r} contains control characters or is over 4096 characters")
        return value

    @property
    def bearer_ref(self) -> str | None:
        """The name holding the bearer token: ``bearer_token_env_var`` or ``api_key_env``."""
        return self.bearer_token_env_var or self.api_key_env

    @property
    def sends_credentials(self) -> bool:
        """True when a credential may be sent: a bearer reference, an env header, or OAuth."""
        return bool(self.bearer_ref or self.env_headers or self.oauth is not None or self.oauth_resource)

    @model_validator(mode="after")
    def _url(self) -> HttpSpec:
        if self.api_key_env is not None and self.bearer_token_env_var is not None:
            raise PydanticCustomError(
                "bearer", "{reason}", {"reason": "give either 'api_key_env' or 'bearer_token_env_var', not both"}
            )
        both = {n.lower() for n in self.headers} & {n.lower() for n in self.env_headers}
        if both:
            raise PydanticCustomError(
                "bearer",
                "{reason}",
                {"reason": f"the header {sorted(both)[0]!r} is in both 'headers' and 'env_headers'"},
            )
        if self.oauth_resource is not None:
            try:
                check_url(self.oauth_resource, bearer=False)
            except ValueError as exc:
                raise PydanticCustomError("oauth_resource", "{reason}", {"reason": f"oauth_resource {exc}"}) from None
        try:
            check_url(self.url, bearer=self.sends_credentials)
        except ValueError as exc:
            raise PydanticCustomError("url", "{reason}", {"reason": str(exc)}) from None
        return self


@dataclass(frozen=True)
class ServerDefinition:
    """A valid definition and where it came from.

    Attributes:
        id: ``config:NAME``, ``project:<relative path>`` or ``plugin:<identity>``.
        scope: ``"config"`` (global registration), ``"project"`` (a project file) or
            ``"plugin"`` (contributed by a trusted plugin bundle, CW-12).
        path: the project-relative file path for project definitions, else None.
        sha256: hex SHA-256 of the definition's exact bytes; for a plugin server, the content
            digest of its whole bundle (CW-12).
        spec: the validated content; a plugin server's name is its identity
            ``plugin-<byte length of the plugin name>-<plugin>-<server>``.
        plugin: the name of the plugin that contributed it, else None.
    """

    id: str
    scope: Literal["config", "project", "plugin"]
    path: str | None
    sha256: str
    spec: StdioSpec | HttpSpec
    plugin: str | None = None

    @property
    def name(self) -> str:
        """The server name."""
        return self.spec.name

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if isinstance(self.spec, StdioSpec) else "http"

    def describe(self) -> dict[str, Any]:
        """The catalog view: everything but environment values (CLI-01, CLI-04).

        Returns:
            ``{"id", "name", "scope", "path", "hash", "transport", "description", "timeout_sec",
            "enabled_tools", "disabled_tools", "connect_timeout", "call_timeout", "read_timeout",
            "required", "lazy", "plugin"?, "command" | "url", "env_names": [str], "env_refs": {var: reference name},
            "api_key_env", "bearer_token_env_var", "env_headers": {header: reference name},
            "header_names": [str], "oauth": {...} | None, "oauth_resource", "allow_private_network"}``
            (transport-specific keys only where they apply; literal header values are never shown).
        """
        spec = self.spec
        doc: dict[str, Any] = {
            "id": self.id,
            "name": spec.name,
            "scope": self.scope,
            "path": self.path,
            "hash": self.sha256,
            "transport": self.transport,
            "description": spec.description,
            "timeout_sec": spec.timeout_sec,
            "enabled_tools": None if spec.enabled_tools is None else list(spec.enabled_tools),
            "disabled_tools": list(spec.disabled_tools),
            "connect_timeout": spec.connect_timeout,
            "call_timeout": spec.call_timeout,
            "read_timeout": spec.read_timeout,
            "required": spec.required,
            "lazy": spec.lazy,
        }
        if self.plugin is not None:
            doc["plugin"] = self.plugin
        if isinstance(spec, StdioSpec):
            doc["command"] = list(spec.command)
            doc["env_names"] = sorted(set(spec.env) | set(spec.env_refs))
            doc["env_refs"] = dict(sorted(spec.env_refs.items()))
        else:
            doc["url"] = spec.url
            doc["api_key_env"] = spec.api_key_env
            doc["bearer_token_env_var"] = spec.bearer_token_env_var
            doc["env_headers"] = dict(sorted(spec.env_headers.items()))
            doc["header_names"] = sorted(spec.headers)
            doc["oauth"] = spec.oauth.model_dump(mode="json") if spec.oauth is not None else None
            doc["oauth_resource"] = spec.oauth_resource
            doc["allow_private_network"] = spec.allow_private_network
        return doc


@dataclass(frozen=True)
class DefinitionProblem:
    """A project file, or a trusted plugin's server, that is not a usable definition.

    Attributes:
        id: ``project:<relative path>`` or ``plugin:<identity>`` (CW-12).
        path: the project-relative path, or the plugin bundle's folder.
        sha256: hash of its bytes, or None when they could not be read.
        error: why it is refused (names the file and field).
    """

    id: str
    path: str
    sha256: str | None
    error: str


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data`` (the definition hash, CLI-02)."""
    return hashlib.sha256(data).hexdigest()


def _format_errors(source: str, exc: ValidationError) -> str:
    parts: list[str] = []
    for err in exc.errors()[:_ERRORS_SHOWN]:
        named = err["type"] if err["type"] in ("url", "bearer", "oauth_resource") else "(top level)"
        where = ".".join(str(p) for p in err["loc"]) or named
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        parts.append(f"field {where!r}: {message}")
    more = len(exc.errors()) - _ERRORS_SHOWN
    return f"{source}: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class _BadYaml(ValueError):
    """YAML the safe loader refused; its cause is the loader's own error."""


def _yaml_document(text: str) -> object:
    """``text`` read by YAML's safe loader, imported on first use (a start that reads no YAML file never loads it).

    Raises:
        _BadYaml: not valid YAML.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise _BadYaml(type(exc).__name__) from exc


def parse_definition(data: bytes, source: str, *, fmt: str) -> StdioSpec | HttpSpec:
    """Validate one definition's bytes (CLI-03).

    Args:
        data: the exact bytes (UTF-8 JSON or YAML).
        source: how to name it in errors (a file name or id).
        fmt: ``"json"`` or ``"yaml"``.

    Returns:
        The stdio or HTTP spec.

    Raises:
        ConfigError: too large, not JSON/YAML, not an object, unknown fields, an ambiguous
            or missing transport, ``env``/``env_refs`` on HTTP, or an invalid field (named).
    """
    if len(data) > MCP_DEFINITION_MAX_BYTES:
        raise ConfigError(f"{source}: the definition is {len(data)} bytes; the limit is {MCP_DEFINITION_MAX_BYTES}")
    try:
        text = data.decode("utf-8")
        doc = json.loads(text) if fmt == "json" else _yaml_document(text)
    except (UnicodeDecodeError, ValueError) as exc:
        cause = exc.__cause__ if isinstance(exc, _BadYaml) else exc
        raise ConfigError(f"{source}: not valid {fmt.upper()} ({type(cause).__name__})") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: a definition must be an object")
    has_command, has_url = "command" in doc, "url" in doc
    if has_command and has_url:
        raise ConfigError(f"{source}: fields 'command' and 'url' both present; a definition has one transport")
    if not has_command and not has_url:
        raise ConfigError(f"{source}: field 'command' (stdio) or 'url' (Streamable HTTP) is required")
    if has_url:
        for field in ("env", "env_refs"):
            if field in doc:
                raise ConfigError(f"{source}: field {field!r} applies to stdio servers only, not to an HTTP 'url'")
    try:
        return HttpSpec.model_validate(doc) if has_url else StdioSpec.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from exc
