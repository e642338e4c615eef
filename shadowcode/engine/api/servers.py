"""The engine API: external MCP server definitions, their grants, and reports on them.

Covers CLI-01, CLI-02, CLI-05, CW-01, CW-03, CW-04, CW-08.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.servers` and handled in process in :mod:`shadowcode.engine.verbs.servers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired

from pydantic import JsonValue
from typing_extensions import TypedDict

__all__ = [
    "McpAdd",
    "McpCatalog",
    "McpConnectReport",
    "McpDoctorReport",
    "McpEnable",
    "McpFinding",
    "McpGrantChange",
    "McpGrantState",
    "McpImport",
    "McpImportEntry",
    "McpImportFile",
    "McpImportNote",
    "McpImportReport",
    "McpRef",
    "McpRemoval",
    "McpRemove",
    "McpServerInfo",
    "McpServerQuery",
    "McpServerTools",
    "McpSignIn",
    "McpSignInRef",
    "McpSignInStarted",
    "McpSignedIn",
    "McpSignedOut",
    "McpTool",
    "McpValidate",
    "McpValidation",
]


class McpGrantState(TypedDict):
    """A definition's grant in the caller's project."""

    state: str
    hash: str | None


class McpServerInfo(TypedDict):
    """A definition as the catalog shows it: everything but environment values (CLI-01, CLI-04).

    Transport-specific keys appear where they apply; ``grant`` only in a catalog; ``error``
    for a project file (or a plugin's server) that is not a usable definition; ``plugin`` for a
    server a plugin contributed and ``shadowed_by`` for one an enabled definition of the same
    name wins over (CW-12).
    """

    id: str
    name: NotRequired[str]
    scope: NotRequired[str]
    path: NotRequired[str | None]
    hash: str | None
    transport: NotRequired[str]
    description: NotRequired[str | None]
    timeout_sec: NotRequired[float | None]
    enabled_tools: NotRequired[list[str] | None]
    disabled_tools: NotRequired[list[str]]
    connect_timeout: NotRequired[float | None]
    call_timeout: NotRequired[float | None]
    read_timeout: NotRequired[float | None]
    required: NotRequired[bool]
    command: NotRequired[list[str]]
    env_names: NotRequired[list[str]]
    env_refs: NotRequired[dict[str, str]]
    url: NotRequired[str]
    api_key_env: NotRequired[str | None]
    bearer_token_env_var: NotRequired[str | None]
    env_headers: NotRequired[dict[str, str]]
    header_names: NotRequired[list[str]]
    oauth: NotRequired[dict[str, Any] | None]
    oauth_resource: NotRequired[str | None]
    error: NotRequired[str]
    grant: NotRequired[McpGrantState]
    plugin: NotRequired[str]
    shadowed_by: NotRequired[str]


class McpCatalog(TypedDict):
    """The ``--json mcp`` document: definitions with hashes and grant states; nothing is started (CLI-01)."""

    project: str
    trusted: bool
    enabled_max: int
    servers: list[McpServerInfo]


@dataclass(frozen=True, slots=True)
class McpAdd:
    """Register the definition file at ``path`` globally; replacing one needs its current hash (CLI-05)."""

    path: str
    replace_hash: str | None = None


@dataclass(frozen=True, slots=True)
class McpRef:
    """One definition by id: ``config:NAME`` or ``project:PATH`` (CLI-05)."""

    server_id: str


@dataclass(frozen=True, slots=True)
class McpEnable:
    """Enable a definition for the caller's project at its reviewed hash (CLI-02)."""

    server_id: str
    hash: str


@dataclass(frozen=True, slots=True)
class McpRemove:
    """Remove a global definition at its current hash, revoking its grants (CLI-05)."""

    server_id: str
    hash: str


class McpGrantChange(TypedDict):
    """An enable or disable: the definition, the project, the new state, and the granted hash when enabled."""

    id: str
    project: str
    state: Literal["enabled", "disabled"]
    hash: NotRequired[str]


@dataclass(frozen=True, slots=True)
class McpRemoval:
    """A removed global definition and how many project grants its removal revoked (CLI-05)."""

    id: str
    removed: bool
    grants_revoked: int


@dataclass(frozen=True, slots=True)
class McpServerQuery:
    """One server visible to the caller's project, by id (``config:NAME``, ``project:PATH``) or name (CW-04)."""

    server: str


@dataclass(frozen=True, slots=True)
class McpValidate:
    """Connect the caller's project's enabled servers, or only ``server`` (an id or a name) (CW-03)."""

    server: str | None = None


@dataclass(frozen=True, slots=True)
class McpConnectReport:
    """What one live connection attempt found; never an environment value (CW-03, CW-04, CLI-04).

    Attributes:
        id: the definition id.
        name: the server name, None when the definition is missing or invalid.
        transport: ``stdio`` or ``http``, None when unknown.
        hash: the definition's current hash, None when it could not be read.
        connected: True when initialization and discovery both succeeded.
        protocol_version: the revision the connection negotiated, when connected.
        tools: how many tools discovery listed, when connected.
        error: why it failed or was not started, when not connected (redacted).
        cleanup: how the server's process group ended (``exited``, ``terminated``, ``killed``,
            ``unreaped``); None when nothing was started.
        skipped: True when it was not started because a Build task would not start it (not
            enabled at its current hash, missing, invalid, or the project is untrusted or
            read_only); ``error`` says which.
        warnings: what deserves a look but is no failure: ``enabled_tools`` entries naming no
            tool the server listed (CW-02).
        auth: ``"authorization_required"`` when the server asked for a sign-in (HTTP 401) or
            the stored sign-in cannot be used: run ``shadowcode mcp login`` (CW-08); else None.
    """

    id: str
    name: str | None
    transport: str | None
    hash: str | None
    connected: bool
    protocol_version: str | None = None
    tools: int | None = None
    error: str | None = None
    cleanup: str | None = None
    skipped: bool = False
    warnings: list[str] = field(default_factory=list[str])
    auth: str | None = None


@dataclass(frozen=True, slots=True)
class McpValidation:
    """The ``mcp validate`` report: one entry per server, enabled ones in catalog order (CW-03).

    Attributes:
        project: the canonical project.
        ok: True when every entry connected (also when no server is enabled).
        servers: the entries.
    """

    project: str
    ok: bool
    servers: list[McpConnectReport]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One discovered tool as the server listed it, configured values redacted (CW-04, CLI-04).

    Attributes:
        name: the tool name.
        title: its display title (``title``, else ``annotations.title``), or None.
        description: its description, or None.
        annotations: its annotations object, or None.
        input_schema: its input JSON Schema.
        output_schema: its output JSON Schema, or None.
    """

    name: str
    title: str | None
    description: str | None
    annotations: dict[str, JsonValue] | None
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None


@dataclass(frozen=True, slots=True)
class McpServerTools:
    """The ``mcp tools SERVER`` report: the connection and the tools it discovered (CW-04)."""

    server: McpConnectReport
    tools: list[McpTool]


@dataclass(frozen=True, slots=True)
class McpFinding:
    """One problem a static check found (CW-03).

    Attributes:
        server: the definition id, or None for a problem of the project's grants as a whole.
        check: ``definition``, ``command``, ``env``, ``url``, ``grant`` or ``limit``.
        message: one sentence naming names only, never a value.
    """

    server: str | None
    check: str
    message: str


@dataclass(frozen=True, slots=True)
class McpDoctorReport:
    """The ``mcp doctor`` report: static checks only, nothing started or contacted (CW-03).

    Attributes:
        project: the canonical project.
        trusted: whether the project is trusted.
        servers: every definition id checked (global, project files, granted ones that are missing).
        problems: what was found, in server order; empty when all is well.
        warnings: findings that are no problem (check ``filter``: an ``enabled_tools`` entry
            naming no tool of the server's last cached listing, CW-02); they do not fail the check.
    """

    project: str
    trusted: bool
    servers: list[str]
    problems: list[McpFinding]
    warnings: list[McpFinding] = field(default_factory=list[McpFinding])


@dataclass(frozen=True, slots=True)
class McpImport:
    """Import other hosts' MCP configs as global definitions; enables, starts and contacts nothing (CW-01).

    Attributes:
        path: an absolute config file path; None: every well-known location of each host
            for ``home`` and the caller's project.
        host: ``claude``, ``cursor``, ``codex``, ``vscode`` or ``generic``; None: guessed from the
            file's name (a well-known location names its own).
        dry_run: report what would be imported, write nothing.
        home: the user's home folder (the well-known user locations); None: the engine's.
        codex_home: ``CODEX_HOME`` when it is set.
    """

    path: str | None = None
    host: str | None = None
    dry_run: bool = False
    home: str | None = None
    codex_home: str | None = None


@dataclass(frozen=True, slots=True)
class McpImportNote:
    """One field of an imported server not copied as it was, and why (a credential: how to reference it)."""

    field: str
    message: str


@dataclass(frozen=True, slots=True)
class McpImportFile:
    """One config file read: its path, host, scope (``user``, ``project`` or ``given``) and server entries."""

    path: str
    host: str
    scope: str
    servers: int


@dataclass(frozen=True, slots=True)
class McpImportEntry:
    """What became of one server entry (CW-01).

    Attributes:
        file: the config file it came from.
        host: that file's host.
        source_name: its name there.
        outcome: ``imported``, ``would_import`` (a dry run), ``unchanged`` (registered with
            these exact bytes already) or ``skipped``.
        id: ``config:NAME`` when it was or would be imported or is unchanged, else None.
        hash: the definition's hash (review it, then ``mcp enable ID --hash HASH``), else None.
        reason: why it was skipped, else None.
        notes: fields not copied as they were.
    """

    file: str
    host: str
    source_name: str
    outcome: Literal["imported", "would_import", "unchanged", "skipped"]
    id: str | None
    hash: str | None
    reason: str | None
    notes: list[McpImportNote]


@dataclass(frozen=True, slots=True)
class McpImportReport:
    """The ``mcp import`` report: the files read, then one entry per server entry in file order (CW-01)."""

    dry_run: bool
    files: list[McpImportFile]
    servers: list[McpImportEntry]


@dataclass(frozen=True, slots=True)
class McpSignIn:
    """Start signing in with OAuth to an HTTP server of the caller's project (CW-08).

    Attributes:
        server: the server's id (``config:NAME``) or its unique name.
        scopes: scopes to ask for; empty: the definition's.
        browser: open the user's browser when one is available where the engine runs.
    """

    server: str
    scopes: list[str] = field(default_factory=list[str])
    browser: bool = True


@dataclass(frozen=True, slots=True)
class McpSignInStarted:
    """A sign-in waiting for its redirect: show the URL, then wait with ``mcp_sign_in_wait`` (CW-08).

    Attributes:
        sign_in: names this sign-in for ``mcp_sign_in_wait``.
        server: the server's id.
        authorization_url: where the person signs in.
        callback_url: the loopback address the redirect must reach.
        seconds: how long the engine waits for it.
    """

    sign_in: str
    server: str
    authorization_url: str
    callback_url: str
    seconds: float


@dataclass(frozen=True, slots=True)
class McpSignInRef:
    """A started sign-in, by the ``sign_in`` its start returned (CW-08)."""

    sign_in: str


@dataclass(frozen=True, slots=True)
class McpSignedIn:
    """A stored sign-in, never its token (CW-08).

    Attributes:
        server: the server's id.
        signed_in: always True (a failed sign-in is an error).
        issuer: the authorization server it is bound to.
        resource: the resource it is bound to.
        scopes: the granted scopes as the token reply named them, or None.
    """

    server: str
    signed_in: bool
    issuer: str
    resource: str
    scopes: str | None


@dataclass(frozen=True, slots=True)
class McpSignedOut:
    """A forgotten sign-in: ``removed`` False when none was stored; the provider may keep its grant (CW-08)."""

    server: str
    removed: bool
