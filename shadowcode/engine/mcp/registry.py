"""Global registrations, per-project grants and cached tool catalogs (CLI-01, CLI-02, CLI-05, CLI-06, CLI-08).

A grant binds a canonical project path, a definition id and the SHA-256 of the definition's
content at review time. A definition whose current hash differs from its grant (``changed``),
or that is gone (``missing``) or no longer valid (``invalid``), is not given to new Build tasks
until it is enabled again with the new hash or disabled. At most MCP_ENABLED_SERVERS_MAX grants
exist per project, whatever their state. Removing a global definition revokes its grants in
every project, so registering identical content again starts disabled. Project files cannot
grant anything: only :meth:`McpRegistry.enable` writes grants, for a trusted project.

Grant states in the catalog: ``enabled``, ``disabled``, ``changed``, ``missing``, ``invalid``.
The rows live in :attr:`Store.mcp_servers <shadowcode.store.Store>`; this module holds the
policy: parsing, hash review, the grant limit, name clashes and the catalog view.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from shadowcode.engine.api import McpCatalog, McpGrantChange, McpRemoval, McpServerInfo
from shadowcode.engine.mcp.bundles import bundle_digest
from shadowcode.engine.mcp.definition_files import project_definitions, read_definition_file
from shadowcode.errors import ConfigError, ConflictError, NotFound, PolicyError
from shadowcode.limits import MCP_ENABLED_SERVERS_MAX
from shadowcode.mcp.client.definitions import (
    DefinitionProblem,
    ServerDefinition,
    parse_definition,
    sha256_hex,
)
from shadowcode.mcp.client.plugins import parse_manifest
from shadowcode.store import Store
from shadowcode.store.mcp_servers import McpDefinitionRecord

__all__ = ["McpRegistry", "Snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """The servers a new Build task may use, fixed when the task is submitted (CLI-06).

    Attributes:
        project: the canonical project.
        servers: enabled definitions whose current hash matches their grant, by id.
        notes: one sentence per enabled server left out (changed, missing, invalid).
    """

    project: Path
    servers: tuple[ServerDefinition, ...]
    notes: tuple[str, ...]


class McpRegistry:
    """Reads and changes MCP registrations and grants in the profile store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows = store.mcp_servers

    # -- global definitions (CLI-01, CLI-05) --------------------------------------------

    @staticmethod
    def _global(row: McpDefinitionRecord) -> ServerDefinition:
        spec = parse_definition(row.content, f"config:{row.name}", fmt=row.format)
        return ServerDefinition(id=f"config:{row.name}", scope="config", path=None, sha256=row.sha256, spec=spec)

    def globals(self) -> list[ServerDefinition]:
        """Every global registration, by name."""
        return [self._global(r) for r in self._rows.definitions()]

    def add(self, path: Path, *, replace_hash: str | None = None) -> ServerDefinition:
        """Register the definition file at ``path`` as ``config:NAME``; reads it, runs nothing (CLI-01, CLI-05).

        Args:
            path: a ``.json``, ``.yaml`` or ``.yml`` file.
            replace_hash: the current hash, required when NAME is already registered with
                other content.

        Returns:
            The stored definition.

        Raises:
            ConfigError: the file cannot be read or is not a valid definition.
            ConflictError: NAME exists with different content and ``replace_hash`` is not its hash.
        """
        data, fmt = read_definition_file(path)
        spec = parse_definition(data, path.name, fmt=fmt)
        digest = sha256_hex(data)
        with self._store.atomic():
            current = self._rows.definition_hash(spec.name)
            if current is None:
                self._rows.put_definition(spec.name, data, fmt, digest)
            elif current != digest:
                if replace_hash != current:
                    raise ConflictError(
                        f"config:{spec.name} is already registered with other content; replace it with "
                        "--hash set to its current hash (see `shadowcode --json mcp`)",
                        definition_id=f"config:{spec.name}",
                    )
                self._rows.put_definition(spec.name, data, fmt, digest)
        return ServerDefinition(id=f"config:{spec.name}", scope="config", path=None, sha256=digest, spec=spec)

    def register_new(self, data: bytes, source: str, *, write: bool) -> tuple[ServerDefinition, str | None]:
        """Register definition bytes as ``config:NAME`` unless NAME holds other content (CW-01).

        Args:
            data: the definition's exact bytes (JSON).
            source: how to name it in errors.
            write: False to only look (a dry run).

        Returns:
            The definition and the hash NAME is registered with now, None when it was free
            (and is now registered when ``write``). Equal to the definition's hash: unchanged.

        Raises:
            ConfigError: not a valid definition.
        """
        spec = parse_definition(data, source, fmt="json")
        digest = sha256_hex(data)
        with self._store.atomic():
            current = self._rows.definition_hash(spec.name)
            if current is None and write:
                self._rows.put_definition(spec.name, data, "json", digest)
        definition = ServerDefinition(id=f"config:{spec.name}", scope="config", path=None, sha256=digest, spec=spec)
        return definition, current

    def remove(self, def_id: str, sha256: str) -> McpRemoval:
        """Delete a global definition, its grants in every project and its cached catalogs (CLI-05).

        Returns:
            The removal: its id, ``removed`` True and how many project grants it revoked.

        Raises:
            ConfigError: not a ``config:`` id (project files are removed by deleting them).
            NotFound: no such registration.
            ConflictError: ``sha256`` is not its current hash.
        """
        if not def_id.startswith("config:"):
            raise ConfigError(f"{def_id!r}: only global (config:) definitions are removed here; delete the file")
        name = def_id.removeprefix("config:")
        with self._store.atomic():
            current = self._rows.definition_hash(name)
            if current is None:
                raise NotFound(f"no registered server {def_id!r}", definition_id=def_id)
            if current != sha256:
                raise ConflictError(f"{def_id}: --hash is not its current hash", definition_id=def_id)
            revoked = self._rows.remove_definition(name, def_id)
        return McpRemoval(def_id, True, revoked)

    # -- what a project sees (CLI-03, CLI-05) ------------------------------------------

    def definitions(self, project: Path) -> list[ServerDefinition | DefinitionProblem]:
        """Global definitions, the project's files, then the servers of trusted plugins, each by id (CW-12)."""
        return [*self.globals(), *project_definitions(project), *self.plugin_definitions()]

    # -- servers of trusted plugins (CW-12) ---------------------------------------------

    def plugin_definitions(self, name: str | None = None) -> list[ServerDefinition | DefinitionProblem]:
        """The servers of every trusted plugin (or of plugin ``name``), from its trusted snapshot (CW-12).

        The bundle is hashed again now: when its content differs from the trusted digest (drift),
        is gone or can no longer be read, each of its servers is a problem, never a definition.
        """
        found: list[ServerDefinition | DefinitionProblem] = []
        for row in self._store.plugins.all():
            if name is not None and row.name != name:
                continue
            manifest = parse_manifest(row.manifest, Path(row.root), f"plugin {row.name}")
            ids = [f"plugin:{s.identity}" for s in manifest.servers]
            try:
                digest: str | None = bundle_digest(Path(row.root))[0]
                problem = None if digest == row.digest else "its bundle changed since it was trusted (drift)"
            except ConfigError as exc:
                digest, problem = None, f"its bundle can no longer be read ({exc.message})"
            if problem is None:
                found.extend(manifest.definitions(row.digest))
            else:
                message = f"plugin {row.name}: {problem}; review it and trust it again, or revoke it"
                found.extend(DefinitionProblem(i, row.root, digest, message) for i in ids)
        return found

    def plugin_problem(self, project: Path, definition: ServerDefinition, *, check_bundle: bool = True) -> str | None:
        """Why a plugin server of a running task may no longer be used, or None (CW-12).

        Checks that its plugin is still trusted at the task's digest, still enabled for
        ``project`` at it, and (with ``check_bundle``) that the bundle's content is still that
        digest. A definition that is not a plugin's gives None.
        """
        if definition.scope != "plugin" or definition.plugin is None:
            return None
        row = self._store.plugins.get(definition.plugin)
        if row is None:
            return f"the plugin {definition.plugin} was revoked"
        if row.digest != definition.sha256:
            return f"the plugin {definition.plugin} was trusted again with other content"
        if self.grants(project).get(definition.id) != definition.sha256:
            return f"the plugin {definition.plugin} was disabled for this project"
        if check_bundle:
            try:
                digest = bundle_digest(Path(row.root))[0]
            except ConfigError as exc:
                return f"the bundle of plugin {definition.plugin} can no longer be read ({exc.message})"
            if digest != definition.sha256:
                return f"the bundle of plugin {definition.plugin} changed since it was trusted (drift)"
        return None

    @staticmethod
    def shadowed(items: list[ServerDefinition | DefinitionProblem], grants: dict[str, str]) -> dict[str, str]:
        """Plugin server id → the enabled global or project definition with the same name, which wins (CW-12)."""
        winners = {
            d.name: d.id
            for d in items
            if isinstance(d, ServerDefinition) and d.scope != "plugin" and grants.get(d.id) == d.sha256
        }
        return {
            d.id: winners[d.name]
            for d in items
            if isinstance(d, ServerDefinition) and d.scope == "plugin" and d.name in winners
        }

    def grants(self, project: Path) -> dict[str, str]:
        """The project's grants: definition id → granted hash."""
        return self._rows.grants(project)

    def catalog(self, project: Path, *, trusted: bool) -> McpCatalog:
        """The ``--json mcp`` document: definitions with hashes and grant states; nothing is started (CLI-01).

        Returns:
            ``{"project", "trusted", "enabled_max", "servers": [describe() + {"grant": {"state",
            "hash"}, "error"?, "shadowed_by"?}]}``. Grants whose definition is gone are listed as
            ``missing``; a plugin server whose name an enabled global or project definition also
            has names that winner in ``shadowed_by`` (CW-12).
        """
        grants = self.grants(project)
        items = self.definitions(project)
        shadowed = self.shadowed(items, grants)
        servers: list[dict[str, Any]] = []
        for item in items:
            granted = grants.pop(item.id, None)
            if isinstance(item, DefinitionProblem):
                scope = "plugin" if item.id.startswith("plugin:") else "project"
                doc: dict[str, Any] = {"id": item.id, "path": item.path, "scope": scope, "hash": item.sha256}
                doc["error"] = item.error
                state = "invalid" if granted else "disabled"
            else:
                doc = item.describe()
                state = "disabled" if granted is None else ("enabled" if granted == item.sha256 else "changed")
            doc["grant"] = {"state": state, "hash": granted}
            if item.id in shadowed:
                doc["shadowed_by"] = shadowed[item.id]
            servers.append(doc)
        for def_id, granted in sorted(grants.items()):
            servers.append({"id": def_id, "hash": None, "grant": {"state": "missing", "hash": granted}})
        # Each entry is describe()'s McpServerInfo shape (mcp.client cannot import engine.api's type).
        listed = cast("list[McpServerInfo]", servers)
        return McpCatalog(project=str(project), trusted=trusted, enabled_max=MCP_ENABLED_SERVERS_MAX, servers=listed)

    def _find(self, project: Path, def_id: str) -> ServerDefinition:
        for item in self.definitions(project):
            if item.id != def_id:
                continue
            if isinstance(item, DefinitionProblem):
                raise ConfigError(item.error, definition_id=def_id)
            return item
        raise NotFound(f"no server definition {def_id!r} for this project", definition_id=def_id)

    # -- grants (CLI-02, CLI-05, CLI-06) -------------------------------------------------

    def enable(self, project: Path, def_id: str, sha256: str, *, trusted: bool) -> McpGrantChange:
        """Grant ``def_id`` at its reviewed hash to a trusted project (CLI-02, CLI-05).

        Returns:
            ``{"id", "project", "hash", "state": "enabled"}``.

        Raises:
            PolicyError: the project is not trusted.
            NotFound: no such definition; ConfigError: it is invalid.
            ConflictError: ``sha256`` is not its current hash, the project already has
                MCP_ENABLED_SERVERS_MAX other grants, or another enabled server has the same name.
        """
        if not trusted:
            raise PolicyError(f"enabling a server needs a trusted project: run `shadowcode trust {project}`")
        if def_id.startswith("plugin:"):
            raise ConfigError(
                f"{def_id} belongs to a plugin: enable the plugin with `shadowcode plugin enable NAME`",
                definition_id=def_id,
            )
        definition = self._find(project, def_id)
        if definition.sha256 != sha256:
            raise ConflictError(
                f"{def_id}: --hash does not match its current content (review it with `shadowcode --json mcp`)",
                definition_id=def_id,
            )
        with self._store.atomic():
            grants = self.grants(project)
            others = {k: v for k, v in grants.items() if k != def_id}
            if len(others) >= MCP_ENABLED_SERVERS_MAX:
                raise ConflictError(
                    f"this project already has {len(others)} servers enabled; the limit is "
                    f"{MCP_ENABLED_SERVERS_MAX} (disable one first)",
                    definition_id=def_id,
                )
            for item in self.definitions(project):
                if (
                    isinstance(item, ServerDefinition)
                    and item.scope != "plugin"  # a global or project entry wins over a plugin's (CW-12)
                    and item.id in others
                    and item.name == definition.name
                ):
                    raise ConflictError(
                        f"{item.id} is enabled under the same name {definition.name!r}", definition_id=def_id
                    )
            self._rows.grant(project, def_id, sha256)
        return McpGrantChange(id=def_id, project=str(project), hash=sha256, state="enabled")

    def disable(self, project: Path, def_id: str) -> McpGrantChange:
        """Revoke the project's grant of ``def_id``; running tasks keep their snapshot (CLI-05, CLI-06).

        Raises:
            NotFound: the project has no grant for it.
        """
        if not self._rows.revoke(project, def_id):
            raise NotFound(f"{def_id!r} is not enabled for this project", definition_id=def_id)
        return McpGrantChange(id=def_id, project=str(project), state="disabled")

    def snapshot(self, project: Path) -> Snapshot:
        """The enabled servers a new Build task gets, with notes on those left out (CLI-06).

        A plugin's server is left out when its bundle drifted (CW-12), or when an enabled global or
        project definition has the same name (that one wins).
        """
        grants = self.grants(project)
        servers: list[ServerDefinition] = []
        notes: list[str] = []
        if not grants:
            return Snapshot(project, (), ())
        items = self.definitions(project)
        shadowed = self.shadowed(items, grants)
        for item in items:
            granted = grants.pop(item.id, None)
            if granted is None:
                continue
            if item.id in shadowed:
                notes.append(f"MCP server {item.id} is left out: {shadowed[item.id]} has the same name and wins")
            elif isinstance(item, DefinitionProblem) and item.id.startswith("plugin:"):
                notes.append(f"MCP server {item.id} is left out: {item.error}")
            elif isinstance(item, DefinitionProblem):
                notes.append(f"MCP server {item.id} is enabled but invalid; review or disable it")
            elif item.sha256 != granted:
                notes.append(f"MCP server {item.id} changed since it was enabled; review it or disable it")
            else:
                servers.append(item)
        notes.extend(f"MCP server {def_id} is enabled but missing; review or disable it" for def_id in sorted(grants))
        return Snapshot(project, tuple(servers), tuple(notes))

    # -- cached tool catalogs (CLI-08) ---------------------------------------------------

    @staticmethod
    def _catalog_key(project: Path, definition: ServerDefinition) -> str:
        """The project for a project definition, ``""`` for a global one or a plugin's."""
        return str(project) if definition.scope == "project" else ""

    def cached_tools(self, project: Path, definition: ServerDefinition) -> list[dict[str, Any]] | None:
        """The tools last listed by a connection with this definition hash, or None."""
        return self._rows.cached_tools(self._catalog_key(project, definition), definition.id, definition.sha256)

    def save_tools(self, project: Path, definition: ServerDefinition, tools: list[dict[str, Any]]) -> None:
        """Remember the (already redacted) tools a connection listed for this definition hash."""
        self._rows.save_tools(self._catalog_key(project, definition), definition.id, definition.sha256, tools)
