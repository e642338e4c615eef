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
  --workspace <canonical project> mcp serve [--allow-write] [--allow-approvals]
  [--approve-in-host] [--approval-page]``, with
  ``SHADOWCODE_HOME=<absolute root>`` in its environment when a root was chosen. Every
  path is absolute; a packaged build names its ``.pyz`` archive, never the folder shiv
  extracts it into (REG-02).
* **HTTP** — the host connects to an already running loopback gateway at ``/mcp`` and sends
  ``Authorization: Bearer <value of an environment variable>``; only the variable's name
  appears in the output (REG-06).

Each client's shape, file, literal rules and HTTP form are one row of the table in
:mod:`shadowcode.mcp.host_entries` (REG-03, REG-04): the functions here pick the row, check
the values against it (REG-05) and render. Besides the text to print, a snippet carries the
host's own line for stderr: where the entry goes and what else the host asks (trust, an
approval mode).
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shadowcode.errors import ConfigError, UsageError
from shadowcode.mcp.host_entries import (
    HOSTS,
    Client,
    Host,
    Remote,
    Stdio,
    refuse_substitution,
    render_text,
    require_unicode,
    toml_string,
)

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
        text: what to print on stdout: JSON, TOML (codex) or YAML (continue).
        document: the same content as a JSON object, or None for the TOML and YAML hosts.
        note: the host's own line for stderr: where the entry goes, what else it asks.
    """

    client: Client
    text: str
    document: dict[str, Any] | None = field(default=None)
    note: str = ""


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
    approve_in_host: bool = False,
    approval_page: bool = False,
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
        approve_in_host: append ``--approve-in-host`` after ``serve`` (SRV-29).
        approval_page: append ``--approval-page`` after ``serve`` (SRV-30).
        executable: the interpreter; default ``sys.executable`` (made absolute, links kept so
            a virtualenv's interpreter stays that virtualenv's).
        archive: the zipapp to run; default :func:`archive_path`. When None the command runs
            ``-m shadowcode`` from the interpreter's installed package.
        home: the profiles root to pin (``SHADOWCODE_HOME`` as the user set it), or None to
            let the server use the host's ``HOME``; made absolute.

    Returns:
        A :class:`Launch`; ``args`` is ``[archive | -m shadowcode] [--profile NAME] --workspace
        DIR mcp serve [--allow-write] [--allow-approvals] [--approve-in-host] [--approval-page]``; ``env`` holds
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
    if approve_in_host:
        args.append("--approve-in-host")
    if approval_page:
        args.append("--approval-page")
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


# --- snippets ---------------------------------------------------------------------------


def _note(host: Host, *, token_env: str | None = None) -> str:
    """The host's own line for stderr: where the entry goes and what else it asks."""
    parts = [host.where]
    if token_env is not None:
        parts.append(f"set {token_env} in the environment {host.label} runs in")
    if host.needs:
        parts.append(host.needs)
    return f"{host.label}: " + "; ".join(parts) + "."


def stdio_snippet(client: Client, launch: Launch, *, name: str = DEFAULT_SERVER_NAME) -> Snippet:
    """Render the stdio entry for ``client`` (REG-01, REG-03, REG-04, REG-05).

    Args:
        client: the host format (its row in :data:`~shadowcode.mcp.host_entries.HOSTS`).
        launch: the command from :func:`launch_command`.
        name: the server entry's name.

    Returns:
        A :class:`Snippet` in the host's own shape and language (see the module table); the
        launch's environment goes into the entry's environment field.

    Raises:
        UsageError: a bad name, a value that is not valid UTF-8, or a value the host would
            replace as a variable reference (``${`` for Claude Code, Cursor, VS Code and
            Windsurf; ``$NAME`` for Gemini CLI and Qwen Code; ``{env:`` and ``{file:`` for
            opencode and Kilo; ``${{`` for Continue).
    """
    validate_server_name(name)
    host = HOSTS[client]
    entry = Stdio(launch.command, launch.args, dict(launch.env))
    require_unicode(entry.values)
    refuse_substitution(host, entry.values)
    document = host.stdio(name, entry)
    return Snippet(client, render_text(host, document), document if host.syntax == "json" else None, _note(host))


def http_snippet(client: Client, target: HttpTarget, *, name: str = DEFAULT_SERVER_NAME) -> Snippet:
    """Render the HTTP entry for ``client``, naming the token variable only (REG-06, REG-07).

    Args:
        client: a host that sends a header read from the environment.
        target: validated URL and variable name (see :func:`validate_url`,
            :func:`validate_env_name`).
        name: the server entry's name.

    Returns:
        A :class:`Snippet` whose ``Authorization: Bearer`` header references the variable
        in the host's own syntax (codex ``bearer_token_env_var``; claude, gemini and qwen
        ``${NAME}``; cursor, vscode and windsurf ``${env:NAME}``; opencode and kilo
        ``{env:NAME}``; continue ``${{ secrets.NAME }}``).

    Raises:
        UsageError: the host cannot take a header from the environment (generic, cline,
            zed), or a bad name, URL or variable name.
    """
    validate_server_name(name)
    url = validate_url(target.url)
    token_env = validate_env_name(target.token_env)
    host = HOSTS[client]
    if host.http is None:
        able = ", ".join(c.value for c, h in HOSTS.items() if h.http is not None)
        raise UsageError(f"--url is refused for --client {client.value}: {host.no_http}; hosts that can: {able}")
    document = host.http(name, Remote(url, token_env))
    text = render_text(host, document)
    return Snippet(client, text, document if host.syntax == "json" else None, _note(host, token_env=token_env))


def build_snippet(
    client: Client,
    *,
    workspace: Path,
    profile: str | None = None,
    allow_write: bool = False,
    allow_approvals: bool = False,
    approve_in_host: bool = False,
    approval_page: bool = False,
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
        approve_in_host: ``--approve-in-host`` for the stdio launch command (SRV-29).
        approval_page: ``--approval-page`` for the stdio launch command; needs ``approve_in_host`` (SRV-30).
        url: ``--url`` of a running gateway; selects the HTTP form together with ``token_env``.
        token_env: ``--token-env``: the variable name holding the gateway's token.
        name: ``--name`` of the server entry.
        json_output: the global ``--json`` flag.
        home: ``SHADOWCODE_HOME`` as set for this command, pinned in the stdio entry's
            environment; None when unset.

    Returns:
        The :class:`Snippet` to print.

    Raises:
        UsageError: ``--json`` with a host whose configuration is TOML or YAML (codex,
            continue); ``--url`` without ``--token-env`` or the reverse;
            ``--allow-write``/``--allow-approvals``/``--approve-in-host`` with ``--url``;
            ``--approval-page`` without ``--approve-in-host``; ``--url`` for a host that
            cannot send a header from the environment (generic, cline, zed); a bad URL,
            variable name, entry name, or a value the host would substitute (exit 2).
        ConfigError: the workspace is missing or not a directory, or the profile name is
            invalid (exit 2). Implements REG-01, REG-02, REG-03, REG-04, REG-05, REG-06, REG-07.
    """
    syntax = HOSTS[client].syntax
    if json_output and syntax != "json":
        raise UsageError(f"--json cannot be used with --client {client.value}, whose configuration is {syntax.upper()}")
    if (url is None) != (token_env is None):
        raise UsageError("--url and --token-env go together: give both for HTTP, neither for stdio")
    if approval_page and not approve_in_host:
        raise UsageError("--approval-page goes with --approve-in-host")
    if url is not None and token_env is not None:
        if allow_write or allow_approvals or approve_in_host:
            raise UsageError(
                "--allow-write, --allow-approvals and --approve-in-host apply to the stdio launch command only; "
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
        approve_in_host=approve_in_host,
        approval_page=approval_page,
        home=home,
    )
    return stdio_snippet(client, launch, name=name)
