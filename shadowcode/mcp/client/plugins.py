"""Plugin manifests: the MCP servers a reviewed local bundle contributes, validated strictly (CW-12).

A plugin bundle is a folder holding ``plugin.json`` (UTF-8 JSON, at most
MCP_DEFINITION_MAX_BYTES) and whatever files its servers need. The manifest::

    {
      "name": "notes",                        # 1-PLUGIN_NAME_MAX_BYTES of a-z, 0-9, '-'
      "version": "1.0.0",                     # optional, shown in reviews
      "description": "...",                   # optional
      "mcp_servers": {                        # 1-PLUGIN_SERVERS_MAX servers by name (same rule)
        "search": {                           # stdio
          "command": ["python3", "${PLUGIN_ROOT}/server.py"],
          "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"},
          "description", "timeout_sec", "connect_timeout", "call_timeout", "read_timeout",
          "enabled_tools", "disabled_tools", "required"
        },
        "remote": {                           # Streamable HTTP
          "url": "https://api.example.com/mcp",
          "network_hosts": ["api.example.com"],
          "bearer_token_env_var": "NAME", "env_headers": {"X-Key": "NAME"},
          ... the same options as stdio
        }
      }
    }

The rules are stricter than a user's own definitions (:mod:`shadowcode.mcp.client.definitions`):

- an unknown field anywhere, a server with both ``command`` and ``url`` or neither, is refused;
- a stdio ``env`` value must be exactly ``${NAME}``: a reference to a stored secret or an
  environment variable, never a literal or a template with other text;
- a remote may name its credentials only by reference (``bearer_token_env_var``,
  ``env_headers``); literal ``headers`` and a URL with user info, a query or a fragment are refused;
- a remote's ``network_hosts`` must be exactly its endpoint's host (lower case, no final dot);
- OAuth (``oauth``, ``oauth_resource``, ``scopes``) and proxies (``proxy``, ``http_proxy``,
  ``https_proxy``, ``no_proxy``, and the same names, or ``ALL_PROXY``, as a stdio ``env``
  variable) are refused, each with its own message; a plugin cannot claim
  ``allow_private_network``, ``lazy`` or ``always_allow_tools``.

``${PLUGIN_ROOT}`` in a command argument stands for the bundle's absolute folder. Each server
becomes a :class:`~shadowcode.mcp.client.definitions.ServerDefinition` with id
``plugin:<identity>`` and name ``<identity>`` = ``plugin-<byte length of the plugin
name>-<plugin>-<server>`` (:func:`plugin_identity`), and the bundle's content digest as its hash.
This module validates bytes only; the bundle is read by :mod:`shadowcode.engine.mcp.bundles`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from shadowcode.errors import ConfigError
from shadowcode.json_values import json_array, json_object
from shadowcode.limits import MCP_DEFINITION_MAX_BYTES, PLUGIN_NAME_MAX_BYTES, PLUGIN_SERVERS_MAX
from shadowcode.mcp.client.definitions import HttpSpec, ServerDefinition, StdioSpec

__all__ = [
    "MANIFEST_NAME",
    "PLUGIN_ROOT",
    "PluginManifest",
    "PluginServer",
    "parse_manifest",
    "plugin_identity",
]

MANIFEST_NAME = "plugin.json"
"""The manifest's file name at the top of a bundle (CW-12)."""

PLUGIN_ROOT = "${PLUGIN_ROOT}"
"""Stands for the bundle's absolute folder in a stdio command argument (CW-12)."""

_PLUGIN_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")
_TOP_FIELDS = frozenset({"name", "version", "description", "mcp_servers"})
_COMMON_FIELDS = frozenset(
    {
        "description",
        "timeout_sec",
        "connect_timeout",
        "call_timeout",
        "read_timeout",
        "enabled_tools",
        "disabled_tools",
        "required",
    }
)
_STDIO_FIELDS = _COMMON_FIELDS | {"command", "env"}
_HTTP_FIELDS = _COMMON_FIELDS | {"url", "network_hosts", "bearer_token_env_var", "env_headers"}
_OAUTH_FIELDS = ("oauth", "oauth_resource", "scopes")
_PROXY_FIELDS = ("proxy", "http_proxy", "https_proxy", "no_proxy")


def plugin_identity(plugin: str, server: str) -> str:
    """``plugin-<byte length of plugin>-<plugin>-<server>``: the name a plugin's server is known by (CW-12).

    The length prefix makes the identity collision-resistant: ``a-b`` + ``c`` and ``a`` + ``b-c``
    give ``plugin-3-a-b-c`` and ``plugin-1-a-b-c``.
    """
    return f"plugin-{len(plugin.encode('utf-8'))}-{plugin}-{server}"


@dataclass(frozen=True)
class PluginServer:
    """One server a manifest contributes: its name in the manifest, identity and validated spec (CW-12).

    Attributes:
        name: the key in ``mcp_servers``.
        identity: :func:`plugin_identity` of the plugin and ``name``.
        spec: the stdio or HTTP spec, named ``identity``, ``${PLUGIN_ROOT}`` replaced.
        env_sources: stdio only: child variable → the secret or environment name it comes from.
        network_hosts: HTTP only: the declared hosts (equal to the endpoint's host).
    """

    name: str
    identity: str
    spec: StdioSpec | HttpSpec
    env_sources: dict[str, str]
    network_hosts: tuple[str, ...]


@dataclass(frozen=True)
class PluginManifest:
    """A valid manifest (CW-12).

    Attributes:
        name: the plugin's name.
        version: its declared version, or None.
        description: its description, or None.
        servers: the servers, by manifest order.
    """

    name: str
    version: str | None
    description: str | None
    servers: tuple[PluginServer, ...]

    def definitions(self, digest: str) -> list[ServerDefinition]:
        """Each server as a definition ``plugin:<identity>`` hashed with the bundle's ``digest`` (CW-12)."""
        return [
            ServerDefinition(
                id=f"plugin:{s.identity}", scope="plugin", path=None, sha256=digest, spec=s.spec, plugin=self.name
            )
            for s in self.servers
        ]


def _check_plugin_name(value: Any, what: str, source: str) -> str:
    if not isinstance(value, str) or not _PLUGIN_NAME.fullmatch(value):
        raise ConfigError(f"{source}: {what} must be lower-case letters, digits and inner '-' (got {value!r})")
    size = len(value.encode("utf-8"))
    if size > PLUGIN_NAME_MAX_BYTES:
        raise ConfigError(f"{source}: {what} is {size} bytes; the limit is {PLUGIN_NAME_MAX_BYTES}")
    return value


def _refuse_fields(doc: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    for field in _OAUTH_FIELDS:
        if field in doc:
            raise ConfigError(
                f"{where}: field {field!r}: a plugin's server cannot use MCP OAuth; name a token with "
                "'bearer_token_env_var' or 'env_headers', or configure the server yourself to sign in"
            )
    for field in _PROXY_FIELDS:
        if field in doc:
            raise ConfigError(f"{where}: field {field!r}: a plugin's server never goes through a proxy")
    if "headers" in doc:
        raise ConfigError(
            f"{where}: field 'headers': literal headers are refused in a plugin; name each value by "
            "reference in 'env_headers'"
        )
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}: field {unknown[0]!r}: unknown field (a plugin manifest is read strictly)")


def _stdio(doc: dict[str, Any], root: Path, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    env = json_object(doc.get("env", {}))
    if env is None:
        raise ConfigError(f"{where}: field 'env' must be an object of variable → '${{NAME}}'")
    sources: dict[str, str] = {}
    for var, value in env.items():
        if str(var).lower() in _PROXY_FIELDS or str(var).lower() == "all_proxy":
            raise ConfigError(f"{where}: field 'env.{var}': a plugin's server never goes through a proxy")
        match = _ENV_REF.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise ConfigError(
                f"{where}: field 'env.{var}': a plugin's environment values must be exact references like "
                "'${NAME}' (a stored secret or an environment variable), never literal values"
            )
        sources[str(var)] = match.group(1)
    command: object = doc.get("command")
    if (argv := json_array(command)) is not None:
        command = [a.replace(PLUGIN_ROOT, str(root)) if isinstance(a, str) else a for a in argv]
    fields = {k: v for k, v in doc.items() if k != "env"} | {"command": command, "env_refs": sources}
    return fields, sources


def _http(doc: dict[str, Any], where: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    url = doc.get("url")
    listed = json_array(doc.get("network_hosts"))
    hosts = [h for h in listed if isinstance(h, str)] if listed is not None else None
    if not isinstance(url, str):
        raise ConfigError(f"{where}: field 'url' must be a string")
    if listed is None or hosts is None or len(hosts) != len(listed):
        raise ConfigError(f"{where}: field 'network_hosts' is required: the list of the endpoint's host")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        secret_bearing = parts.username is not None or parts.password is not None or bool(parts.query)
    except ValueError:
        host, secret_bearing = "", False
    if secret_bearing or "@" in url or "?" in url or "#" in url:
        raise ConfigError(
            f"{where}: field 'url': a plugin's endpoint may not carry user info, a query or a fragment "
            "(a credential there would be stored in the bundle)"
        )
    declared = {h.lower().rstrip(".") for h in hosts}
    if declared != {host} or len(hosts) != 1:
        raise ConfigError(
            f"{where}: field 'network_hosts' must be exactly [{host!r}], the endpoint's host (got {hosts!r})"
        )
    fields = {k: v for k, v in doc.items() if k != "network_hosts"}
    return fields, (host,)


def _server(plugin: str, name: Any, doc: Any, root: Path, source: str) -> PluginServer:
    server = _check_plugin_name(name, f"the server name {name!r}", source)
    where = f"{source}: mcp_servers.{server}"
    fields = json_object(doc)
    if fields is None:
        raise ConfigError(f"{where}: a server must be an object")
    doc = dict(fields)
    has_command, has_url = "command" in doc, "url" in doc
    if has_command == has_url:
        raise ConfigError(
            f"{where}: exactly one of 'command' (stdio) and 'url' (Streamable HTTP) is required; "
            "an ambiguous transport is refused"
        )
    _refuse_fields(doc, _STDIO_FIELDS if has_command else _HTTP_FIELDS, where)
    identity = plugin_identity(plugin, server)
    env_sources: dict[str, str] = {}
    hosts: tuple[str, ...] = ()
    if has_command:
        fields, env_sources = _stdio(doc, root, where)
    else:
        fields, hosts = _http(doc, where)
    fields["name"] = server
    try:
        spec: StdioSpec | HttpSpec = (
            StdioSpec.model_validate(fields) if has_command else HttpSpec.model_validate(fields)
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{where}: field {loc!r}: {str(err['msg']).removeprefix('Value error, ')}") from exc
    return PluginServer(server, identity, spec.model_copy(update={"name": identity}), env_sources, hosts)


def parse_manifest(data: bytes, root: Path, source: str = MANIFEST_NAME) -> PluginManifest:
    """Validate a plugin manifest's bytes strictly (CW-12).

    Args:
        data: the exact bytes of ``plugin.json``.
        root: the bundle's absolute folder (replaces ``${PLUGIN_ROOT}``).
        source: how to name the manifest in errors.

    Returns:
        The manifest with its servers.

    Raises:
        ConfigError: over MCP_DEFINITION_MAX_BYTES, not a JSON object, an unknown field, an
            ambiguous transport, a literal environment value or header, a secret-bearing URL,
            ``network_hosts`` other than the endpoint's host, OAuth, a proxy, a bad name, or more
            than PLUGIN_SERVERS_MAX servers; the message names the field.
    """
    if len(data) > MCP_DEFINITION_MAX_BYTES:
        raise ConfigError(f"{source}: the manifest is {len(data)} bytes; the limit is {MCP_DEFINITION_MAX_BYTES}")
    try:
        doc = json_object(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{source}: not valid JSON ({type(exc).__name__})") from exc
    if doc is None:
        raise ConfigError(f"{source}: a manifest must be an object")
    unknown = sorted(k for k in doc if k not in _TOP_FIELDS)
    if unknown:
        raise ConfigError(f"{source}: field {unknown[0]!r}: unknown field (a plugin manifest is read strictly)")
    name = _check_plugin_name(doc.get("name"), "field 'name'", source)
    for field in ("version", "description"):
        value = doc.get(field)
        if value is not None and (not isinstance(value, str) or len(value) > 1024):
            raise ConfigError(f"{source}: field {field!r} must be a string of at most 1024 characters")
    servers = json_object(doc.get("mcp_servers"))
    if not servers:
        raise ConfigError(f"{source}: field 'mcp_servers' must be an object naming at least one server")
    if len(servers) > PLUGIN_SERVERS_MAX:
        raise ConfigError(
            f"{source}: field 'mcp_servers' names {len(servers)} servers; the limit is {PLUGIN_SERVERS_MAX}"
        )
    parsed = tuple(_server(name, k, v, root, source) for k, v in servers.items())
    version, description = doc.get("version"), doc.get("description")  # checked above: text or absent
    return PluginManifest(
        name,
        version if isinstance(version, str) else None,
        description if isinstance(description, str) else None,
        parsed,
    )
