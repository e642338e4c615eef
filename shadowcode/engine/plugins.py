"""Plugin bundles that contribute MCP servers: review, trust, enable, disable, revoke, list (CW-12).

The life of a bundle:

- **review** reads the bundle now and shows what trusting it would allow: its content digest,
  each server's identity, argv or endpoint, where every environment value comes from, the
  names of its credential sources and its tool filters; never a secret's value. It changes
  nothing.
- **trust** stages the reviewed snapshot (the folder, the digest given, which must be the
  bundle's digest now, and the manifest bytes) in the store. It enables nothing; trusting a
  plugin again at other content revokes the grants of the old snapshot everywhere.
- **enable** attaches the trusted snapshot to a trusted project: one grant per server
  (``plugin:<identity>`` at the digest) in the same grant table as user-configured servers,
  within MCP_ENABLED_SERVERS_MAX; a bundle that drifted since trust is refused.
- **disable** deletes those grants for the project; **revoke** forgets the snapshot and deletes
  its grants in every project with its cached catalogs.

From then on the servers are ordinary definitions of :class:`~shadowcode.engine.mcp.registry.McpRegistry`
(one manager, one approval system, one network policy). A running task re-checks a plugin
server before every dispatch (its bundle hashed again) and watches its grant, so disable,
revoke or drift stops its connection, and the next call is refused before anything is sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shadowcode.engine.api import PluginChange, PluginInfo, PluginReview
from shadowcode.engine.mcp.bundles import bundle_digest, read_bundle
from shadowcode.engine.mcp.registry import McpRegistry
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX
from shadowcode.mcp.client.definitions import HttpSpec, StdioSpec
from shadowcode.mcp.client.plugins import PluginManifest, parse_manifest
from shadowcode.store import Store
from shadowcode.store.plugins import PluginRecord

__all__ = ["AUTHORITY", "PluginRegistry"]

AUTHORITY = (
    "a stdio server runs as your user, with your files and network; a remote server is reached with "
    "the credentials its references name"
)
"""What a review says trusting a plugin hands over (CW-12)."""


def _server_review(manifest: PluginManifest) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    for server in manifest.servers:
        spec = server.spec
        doc: dict[str, Any] = {
            "id": f"plugin:{server.identity}",
            "identity": server.identity,
            "server": server.name,
            "description": spec.description,
            "enabled_tools": None if spec.enabled_tools is None else list(spec.enabled_tools),
            "disabled_tools": list(spec.disabled_tools),
            "required": spec.required,
            "timeouts": {
                "timeout_sec": spec.timeout_sec,
                "connect_timeout": spec.connect_timeout,
                "call_timeout": spec.call_timeout,
                "read_timeout": spec.read_timeout,
            },
        }
        if isinstance(spec, StdioSpec):
            doc["transport"] = "stdio"
            doc["argv"] = list(spec.command)
            doc["env"] = [{"variable": var, "source": ref} for var, ref in sorted(server.env_sources.items())]
        else:
            assert isinstance(spec, HttpSpec)
            doc["transport"] = "http"
            doc["url"] = spec.url
            doc["network_hosts"] = list(server.network_hosts)
            doc["auth"] = {
                "bearer_token_env_var": spec.bearer_ref,
                "env_headers": dict(sorted(spec.env_headers.items())),
            }
        shown.append(doc)
    return shown


class PluginRegistry:
    """Trusted plugins in the profile store and their grants (CW-12)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows = store.plugins
        self._mcp = McpRegistry(store)

    def review(self, path: Path) -> PluginReview:
        """What trusting the bundle at ``path`` would allow; changes nothing, starts nothing (CW-12).

        Returns:
            ``{"name", "version", "description", "root", "digest", "files", "authority",
            "trusted_digest" (None when not trusted), "servers": [{"id", "identity", "server",
            "transport", "argv" + "env": [{"variable", "source"}] | "url" + "network_hosts" +
            "auth": {"bearer_token_env_var", "env_headers"}, "enabled_tools", "disabled_tools",
            "required", "timeouts"}]}``; reference names only, never a value.

        Raises:
            ConfigError: the bundle cannot be read or its manifest breaks a rule (named).
        """
        bundle = read_bundle(path)
        row = self._rows.get(bundle.manifest.name)
        return PluginReview(
            name=bundle.manifest.name,
            version=bundle.manifest.version,
            description=bundle.manifest.description,
            root=str(bundle.root),
            digest=bundle.digest,
            files=bundle.files,
            authority=AUTHORITY,
            trusted_digest=None if row is None else row.digest,
            servers=_server_review(bundle.manifest),
        )

    def trust(self, path: Path, digest: str) -> PluginChange:
        """Stage the reviewed snapshot of the bundle at ``path``; enables nothing (CW-12).

        Raises:
            ConfigError: the bundle is unreadable or invalid.
            ConflictError: ``digest`` is not the bundle's digest now (review it again).
        """
        bundle = read_bundle(path)
        name = bundle.manifest.name
        if bundle.digest != digest:
            raise ConflictError(
                f"plugin {name}: --digest is not the bundle's content now; review it again "
                "(`shadowcode plugin review PATH`)"
            )
        revoked = 0
        with self._store.atomic():
            old = self._rows.get(name)
            if old is not None and old.digest != digest:
                revoked = self._store.mcp_servers.revoke_ids(self._ids(old))
            self._rows.put(name, str(bundle.root), digest, bundle.manifest_bytes)
        return PluginChange(
            name=name,
            state="trusted",
            digest=digest,
            servers=[f"plugin:{s.identity}" for s in bundle.manifest.servers],
            grants_revoked=revoked,
        )

    def _row(self, name: str) -> PluginRecord:
        row = self._rows.get(name)
        if row is None:
            raise NotFound(f"no trusted plugin {name!r}; review and trust its bundle first")
        return row

    @staticmethod
    def _manifest(row: PluginRecord) -> PluginManifest:
        return parse_manifest(row.manifest, Path(row.root), f"plugin {row.name}")

    def _ids(self, row: PluginRecord) -> list[str]:
        return [f"plugin:{s.identity}" for s in self._manifest(row).servers]

    def enable(self, project: Path, name: str, *, trusted: bool) -> PluginChange:
        """Attach the trusted snapshot of plugin ``name`` to a trusted project (CW-12).

        Raises:
            PolicyError: the project is not trusted.
            NotFound: no trusted plugin ``name``.
            ConflictError: the bundle drifted since trust, or the project would have more than
                MCP_ENABLED_SERVERS_MAX servers enabled.
        """
        if not trusted:
            raise PolicyError(f"enabling a plugin needs a trusted project: run `shadowcode trust {project}`")
        row = self._row(name)
        try:
            current = bundle_digest(Path(row.root))[0]
        except ConfigError as exc:
            raise ConflictError(f"plugin {name}: its bundle can no longer be read ({exc.message})") from exc
        if current != row.digest:
            raise ConflictError(
                f"plugin {name}: its bundle changed since it was trusted (drift); review it and trust it again"
            )
        ids = self._ids(row)
        with self._store.atomic():
            grants = self._mcp.grants(project)
            others = [k for k in grants if k not in ids]
            if len(others) + len(ids) > MCP_ENABLED_SERVERS_MAX:
                raise ConflictError(
                    f"plugin {name} has {len(ids)} servers and this project already has {len(others)} enabled; "
                    f"the limit is {MCP_ENABLED_SERVERS_MAX} (disable one first)"
                )
            for def_id in ids:
                self._store.mcp_servers.grant(project, def_id, row.digest)
        shadowed = McpRegistry.shadowed(self._mcp.definitions(project), self._mcp.grants(project))
        return PluginChange(
            name=name,
            state="enabled",
            digest=row.digest,
            servers=ids,
            project=str(project),
            shadowed={k: v for k, v in shadowed.items() if k in ids},
        )

    def disable(self, project: Path, name: str) -> PluginChange:
        """Detach plugin ``name`` from the project: delete its grants there (CW-12).

        A running task's connections to its servers are stopped and its next call refused.

        Raises:
            NotFound: no trusted plugin ``name``, or it is not enabled for the project.
        """
        row = self._row(name)
        ids = self._ids(row)
        revoked = self._store.mcp_servers.revoke_ids(ids, project)
        if not revoked:
            raise NotFound(f"plugin {name} is not enabled for {project}")
        return PluginChange(name=name, state="disabled", digest=row.digest, servers=ids, project=str(project),
                            grants_revoked=revoked)  # fmt: skip

    def revoke(self, name: str) -> PluginChange:
        """Forget plugin ``name``: its snapshot, its grants in every project and its cached catalogs (CW-12).

        Raises:
            NotFound: no trusted plugin ``name``.
        """
        row = self._row(name)
        ids = self._ids(row)
        with self._store.atomic():
            revoked = self._store.mcp_servers.revoke_ids(ids)
            self._rows.remove(name)
        return PluginChange(name=name, state="revoked", digest=row.digest, servers=ids, grants_revoked=revoked)

    def list(self, project: Path | None) -> list[PluginInfo]:
        """Every trusted plugin with its state for ``project`` (CW-12).

        States: ``drifted`` (the bundle's content is no longer the trusted digest, or it is
        unreadable), ``enabled`` (every server granted at the digest in ``project``), else ``trusted``.
        """
        grants = self._mcp.grants(project) if project is not None else {}
        found: list[PluginInfo] = []
        for row in self._rows.all():
            ids = self._ids(row)
            try:
                drifted = bundle_digest(Path(row.root))[0] != row.digest
            except ConfigError:
                drifted = True
            if drifted:
                state = "drifted"
            elif ids and all(grants.get(i) == row.digest for i in ids):
                state = "enabled"
            else:
                state = "trusted"
            found.append(PluginInfo(name=row.name, root=row.root, digest=row.digest, state=state, servers=ids,
                                    trusted_at=row.trusted_at))  # fmt: skip
        return found
