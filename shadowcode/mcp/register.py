"""Client configuration snippets for ``shadowcode mcp register``.

Covers REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.

The functions here only compute text: they edit no file of any other application, start
no process, look up no environment value and contact no endpoint. The caller prints the
result for a person to review and merge into the host's own configuration. The one value
the caller looks up for them is the profiles root when ``SHADOWCODE_HOME`` is set: hosts
start servers with an environment of their own (Codex passes a short fixed list), so the
stdio entry carries the root as an ``env`` value and the server opens the same profile
whatever environment the host passes.

Two shapes of server entry exist:

* **stdio** — the host spawns ``<interpreter> <archive or -m shadowcode> [--profile NAME]
  --workspace <canonical project> mcp serve [--allow-write] [--allow-approvals]``, with
  ``SHADOWCODE_HOME=<absolute root>`` in its environment when a root was chosen. Every
  path is absolute; a packaged build names its ``.pyz`` archive, never the folder shiv
  extracts it into (REG-02).
* **HTTP** — the host connects to an already running loopback gateway at ``/mcp`` and sends
  ``Authorization: Bearer <value of an environment variable>``; only the variable's name
  appears in the output (REG-06).

Output per client (REG-03, REG-04):

=========  ==========================================  =================================
client     stdio                                       HTTP
=========  ==========================================  =================================
generic    ``{"mcpServers": {name: {command, args}}}``  refused (REG-07)
claude     ``.mcp.json``: ``type: "stdio"``, ``env``    ``type: "http"``, ``${NAME}``
cursor     ``.cursor/mcp.json``: ``command``, ``args``  ``url``, ``${env:NAME}``
codex      ``[mcp_servers.<name>]`` TOML section        ``url``, ``bearer_token_env_var``
=========  ==========================================  =================================
"""

from __future__ import annotations

import enum
import json
import os
import re
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shadowcode.errors import ConfigError, UsageError

__all__ = [
    "Client",
    "HttpTarget",
    "Launch",
    "Snippet",
    "archive_path",
    "build_snippet",
    "canonical_workspace",
    "http_snippet",
    "launch_command",
    "stdio_snippet",
    "toml_string",
    "validate_env_name",
    "validate_server_name",
    "validate_url",
]

DEFAULT_SERVER_NAME = "shadowcode"

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOOPBACK_HOSTS = {"127.0.0.1": "127.0.0.1", "::1": "[::1]", "localhost": "localhost"}
_EXPANSION_MARK = "${"


class Client(enum.StrEnum):
    """The host application a snippet is written for (REG-03, REG-04)."""

    GENERIC = "generic"
    CODEX = "codex"
    CLAUDE = "claude"
    CURSOR = "cursor"


@dataclass(frozen=True)
class Launch:
    """The stdio launch command a host runs.

    Attributes:
        command: absolute path of the Python interpreter.
        args: the arguments after it, each a literal string (no shell quoting).
        env: environment entries the host sets for the command, as ``(name, value)`` pairs:
            ``SHADOWCODE_HOME`` when a profiles root was chosen, else empty.
    """

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class HttpTarget:
    """A running loopback gateway and the variable holding its bearer token.

    Attributes:
        url: the validated ``http://<loopback>:<port>/mcp`` URL, rebuilt in canonical form.
        token_env: name of the environment variable the host reads the token from.
    """

    url: str
    token_env: str


@dataclass(frozen=True)
class Snippet:
    """One printable configuration snippet.

    Attributes:
        client: the host it is for.
        text: what to print without ``--json``: JSON for generic/claude/cursor, TOML for codex.
        document: the same content as a JSON object, or None for codex (TOML only).
    """

    client: Client
    text: str
    document: dict[str, Any] | None = field(default=None)


# --- locating the executable (REG-01, REG-02) -------------------------------------------


def _is_archive(candidate: Path) -> bool:
    """True if ``candidate`` is a zipapp file: a ``.pyz`` zip, or any zip holding shiv's bootstrap."""
    try:
        if not candidate.is_file() or not zipfile.is_zipfile(candidate):
            return False
        if candidate.suffix == ".pyz":
            return True
        with zipfile.ZipFile(candidate) as archive:
            names = set(archive.namelist())
    except OSError:
        return False
    return "environment.json" in names and "_bootstrap/__init__.py" in names


def archive_path(argv0: str | None = None, main_file: str | None = None) -> Path | None:
    """The zipapp this process runs from, or None when it runs from source.

    shiv starts a build by running the archive itself: ``sys.argv[0]`` is the archive and
    the ``__main__`` module's file lies inside it (``.../shadowcode.pyz/__main__.py``). The
    package's own modules live in shiv's extraction folder, which is never returned.

    Args:
        argv0: the program path to inspect; default ``sys.argv[0]``.
        main_file: the ``__main__`` module's ``__file__``; default read from ``sys.modules``.

    Returns:
        The archive as an absolute, normalized path (symlinks kept, so a link the user chose
        stays the registered location), or None. Implements REG-02.
    """
    if argv0 is None:
        argv0 = sys.argv[0] if sys.argv else ""
    if main_file is None:
        main_module = sys.modules.get("__main__")
        main_file = getattr(main_module, "__file__", None) or ""
    for raw in (argv0, main_file):
        if not raw:
            continue
        path = Path(os.path.abspath(raw))
        for candidate in (path, *path.parents):
            if _is_archive(candidate):
                return candidate
    return None


def launch_command(
    workspace: Path,
    *,
    profile: str | None = None,
    allow_write: bool = False,
    allow_approvals: bool = False,
    executable: str | None = None,
    archive: Path | None = None,
    home: str | None = None,
) -> Launch:
    """Build the absolute stdio launch command for ``mcp serve``.

    Args:
        workspace: the canonical project directory (see :func:`canonical_workspace`).
        profile: ``--profile`` value to pass on, or None for the default profile.
        allow_write: append ``--allow-write`` after ``serve``.
        allow_approvals: append ``--allow-approvals`` after ``serve``.
        executable: the interpreter; default ``sys.executable`` (made absolute, links kept so
            a virtualenv's interpreter stays that virtualenv's).
        archive: the zipapp to run; default :func:`archive_path`. When None the command runs
            ``-m shadowcode`` from the interpreter's installed package.
        home: the profiles root to pin (``SHADOWCODE_HOME`` as the user set it), or None to
            let the server use the host's ``HOME``; made absolute.

    Returns:
        A :class:`Launch`; ``args`` is ``[archive | -m shadowcode] [--profile NAME] --workspace
        DIR mcp serve [--allow-write] [--allow-approvals]``; ``env`` holds
        ``SHADOWCODE_HOME`` when ``home`` is given.

    Raises:
        ConfigError: no interpreter path is known (embedded interpreters). Implements REG-01, REG-02.
    """
    interpreter = executable if executable is not None else sys.executable
    if not interpreter:
        raise ConfigError("cannot tell which Python interpreter runs shadowcode; run it with an explicit interpreter")
    if archive is None:
        archive = archive_path()
    args: list[str] = [str(archive)] if archive is not None else ["-m", "shadowcode"]
    if profile is not None:
        args += ["--profile", profile]
    args += ["--workspace", str(workspace), "mcp", "serve"]
    if allow_write:
        args.append("--allow-write")
    if allow_approvals:
        args.append("--allow-approvals")
    env = (("SHADOWCODE_HOME", os.path.abspath(os.path.expanduser(home))),) if home else ()
    return Launch(command=os.path.abspath(interpreter), args=tuple(args), env=env)


def canonical_workspace(path: Path) -> Path:
    """Resolve the project directory to its canonical path (symlinks resolved).

    Uses the engine's project identity rule, so registration and the server agree on what
    "this project" is.

    Args:
        path: the ``--workspace`` value as typed, or the current directory.

    Returns:
        The absolute canonical directory.

    Raises:
        ConfigError: the path does not exist or is not a directory (exit 2). Implements REG-01.
    """
    from shadowcode.project.paths import canonical_project

    return canonical_project(path)


# --- validation (REG-05, REG-07) --------------------------------------------------------


def validate_server_name(name: str) -> str:
    """Check the entry name: letters, digits, ``_`` and ``-`` only (a bare TOML key for codex).

    Raises:
        UsageError: any other character, or an empty name.
    """
    if not _SERVER_NAME.fullmatch(name):
        raise UsageError(f"--name {name!r}: use only letters, digits, '_' and '-'")
    return name


def validate_env_name(name: str) -> str:
    """Check ``--token-env``: a portable environment variable name (REG-06).

    Raises:
        UsageError: not ``[A-Za-z_][A-Za-z0-9_]*``.
    """
    if not _ENV_NAME.fullmatch(name):
        raise UsageError(f"--token-env {name!r} is not a valid environment variable name")
    return name


def validate_url(url: str) -> str:
    """Check a gateway URL and rebuild it in canonical form (REG-07).

    Accepted: ``http://127.0.0.1:PORT/mcp``, ``http://[::1]:PORT/mcp`` and
    ``http://localhost:PORT/mcp`` with an explicit port 1..65535; no user info, query or
    fragment (not even an empty ``?`` or ``#``), no other path.

    Returns:
        ``http://<host>:<port>/mcp``.

    Raises:
        UsageError: anything else.
    """
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise UsageError("--url must not contain spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise UsageError(f"--url {url!r}: use http:// on a loopback address (the gateway has no TLS)")
    if "@" in parts.netloc:
        raise UsageError("--url must not embed credentials; use --token-env")
    if "?" in url or parts.query:
        raise UsageError("--url must not carry a query string")
    if "#" in url or parts.fragment:
        raise UsageError("--url must not carry a fragment")
    host = parts.hostname or ""
    if host not in _LOOPBACK_HOSTS:
        raise UsageError(f"--url host {host!r} is not loopback; use 127.0.0.1, [::1] or localhost")
    try:
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"--url {url!r} has an invalid port") from exc
    if port is None or not 1 <= port <= 65535:
        raise UsageError(f"--url {url!r} needs the gateway's port (1-65535)")
    if parts.path != "/mcp":
        raise UsageError(f"--url must end in the /mcp endpoint, not {parts.path or '/'!r}")
    return f"http://{_LOOPBACK_HOSTS[host]}:{port}/mcp"


def _require_unicode(values: Sequence[str]) -> None:
    """Refuse values holding undecodable bytes (surrogate escapes): no format can carry them."""
    for value in values:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"{value!r} is not valid UTF-8; move the project to a path that is") from exc


def _refuse_expansion(client: Client, values: Sequence[str]) -> None:
    """Claude Code and Cursor expand ``${...}`` in their files: a literal one would change meaning (REG-05)."""
    for value in values:
        if _EXPANSION_MARK in value:
            raise UsageError(
                f"{client.value} expands '${{' in its configuration, so {value!r} cannot be written "
                "literally; use a location without '${'"
            )


# --- encoders ---------------------------------------------------------------------------

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(value: str) -> str:
    """Encode ``value`` as a TOML basic string, quotes included.

    Backslash, double quote and every control character (U+0000..U+001F, U+007F) are
    escaped; everything else is kept as UTF-8, so ``tomllib.loads(f"k = {toml_string(v)}")``
    gives back ``v`` exactly (REG-05).

    Raises:
        UsageError: ``value`` holds a lone surrogate, which TOML cannot represent.
    """
    _require_unicode([value])
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


def _toml_array(values: Sequence[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


def _json_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --- snippets ---------------------------------------------------------------------------


def stdio_snippet(client: Client, launch: Launch, *, name: str = DEFAULT_SERVER_NAME) -> Snippet:
    """Render the stdio entry for ``client`` (REG-01, REG-03, REG-04, REG-05).

    Args:
        client: the host format.
        launch: the command from :func:`launch_command`.
        name: the server entry's name.

    Returns:
        A :class:`Snippet`. JSON clients wrap the entry in ``{"mcpServers": {name: entry}}``;
        codex gets a ``[mcp_servers.<name>]`` section with ``command`` and ``args``. The
        launch's environment goes into the entry's ``env`` (an inline table for codex).

    Raises:
        UsageError: a bad name, a value that is not valid UTF-8, or ``${`` in any value for
            claude or cursor.
    """
    validate_server_name(name)
    env = dict(launch.env)
    values = [launch.command, *launch.args, *env.values()]
    _require_unicode(values)
    if client in (Client.CLAUDE, Client.CURSOR):
        _refuse_expansion(client, values)
    if client is Client.CODEX:
        text = f"[mcp_servers.{name}]\ncommand = {toml_string(launch.command)}\nargs = {_toml_array(launch.args)}\n"
        if env:
            pairs = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in env.items())
            text += f"env = {{ {pairs} }}\n"
        return Snippet(client=client, text=text)
    entry: dict[str, Any]
    if client is Client.CLAUDE:
        entry = {"type": "stdio", "command": launch.command, "args": list(launch.args), "env": env}
    elif client is Client.CURSOR:
        entry = {"type": "stdio", "command": launch.command, "args": list(launch.args)}
    else:
        entry = {"command": launch.command, "args": list(launch.args)}
    if env and client is not Client.CLAUDE:
        entry["env"] = env
    document = {"mcpServers": {name: entry}}
    return Snippet(client=client, text=_json_text(document), document=document)


def http_snippet(client: Client, target: HttpTarget, *, name: str = DEFAULT_SERVER_NAME) -> Snippet:
    """Render the HTTP entry for ``client``, naming the token variable only (REG-06, REG-07).

    Args:
        client: codex, claude or cursor.
        target: validated URL and variable name (see :func:`validate_url`,
            :func:`validate_env_name`).
        name: the server entry's name.

    Returns:
        A :class:`Snippet`: codex ``url`` + ``bearer_token_env_var``; claude ``type: "http"``
        with ``Authorization: Bearer ${NAME}``; cursor ``url`` with ``Bearer ${env:NAME}``.

    Raises:
        UsageError: ``client`` is generic (each host spells variables differently), or a bad
            name, URL or variable name.
    """
    validate_server_name(name)
    url = validate_url(target.url)
    token_env = validate_env_name(target.token_env)
    if client is Client.GENERIC:
        raise UsageError(
            "HTTP registration needs --client codex, claude or cursor: each writes the token variable differently"
        )
    if client is Client.CODEX:
        text = f"[mcp_servers.{name}]\nurl = {toml_string(url)}\nbearer_token_env_var = {toml_string(token_env)}\n"
        return Snippet(client=client, text=text)
    entry: dict[str, Any]
    if client is Client.CLAUDE:
        entry = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer ${{{token_env}}}"}}
    else:
        entry = {"url": url, "headers": {"Authorization": f"Bearer ${{env:{token_env}}}"}}
    document = {"mcpServers": {name: entry}}
    return Snippet(client=client, text=_json_text(document), document=document)


def build_snippet(
    client: Client,
    *,
    workspace: Path,
    profile: str | None = None,
    allow_write: bool = False,
    allow_approvals: bool = False,
    url: str | None = None,
    token_env: str | None = None,
    name: str = DEFAULT_SERVER_NAME,
    json_output: bool = False,
    home: str | None = None,
) -> Snippet:
    """Check the option combination of ``mcp register`` and render its snippet.

    Nothing is edited, started, looked up or contacted: the result is text to print.

    Args:
        client: host format.
        workspace: ``--workspace`` as typed (or the current directory); canonicalized for
            stdio, unused for HTTP.
        profile: ``--profile`` to pass on to the stdio launch command.
        allow_write: ``--allow-write`` for the stdio launch command.
        allow_approvals: ``--allow-approvals`` for the stdio launch command.
        url: ``--url`` of a running gateway; selects the HTTP form together with ``token_env``.
        token_env: ``--token-env``: the variable name holding the gateway's token.
        name: ``--name`` of the server entry.
        json_output: the global ``--json`` flag.
        home: ``SHADOWCODE_HOME`` as set for this command, pinned in the stdio entry's
            environment; None when unset.

    Returns:
        The :class:`Snippet` to print.

    Raises:
        UsageError: ``--json`` with codex; ``--url`` without ``--token-env`` or the reverse;
            ``--allow-write``/``--allow-approvals`` with ``--url``; generic with ``--url``;
            a bad URL, variable name, entry name, or ``${`` for claude/cursor (exit 2).
        ConfigError: the workspace is missing or not a directory, or the profile name is
            invalid (exit 2). Implements REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.
    """
    if json_output and client is Client.CODEX:
        raise UsageError("--json cannot be used with --client codex, whose configuration is TOML")
    if (url is None) != (token_env is None):
        raise UsageError("--url and --token-env go together: give both for HTTP, neither for stdio")
    if url is not None and token_env is not None:
        if allow_write or allow_approvals:
            raise UsageError(
                "--allow-write and --allow-approvals apply to the stdio launch command only; "
                "start the HTTP gateway with them instead"
            )
        return http_snippet(client, HttpTarget(url=url, token_env=token_env), name=name)
    if profile is not None:
        from shadowcode.profile import Profile

        Profile.select(profile)
    launch = launch_command(
        canonical_workspace(workspace),
        profile=profile,
        allow_write=allow_write,
        allow_approvals=allow_approvals,
        home=home,
    )
    return stdio_snippet(client, launch, name=name)
