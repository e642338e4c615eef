"""The MCP servers repository: registrations, grants and cached catalogs (store/mcp_servers.py)."""

from __future__ import annotations

import pytest

from shadowcode.errors import StoreError
from shadowcode.store import Store
from shadowcode.store.mcp_servers import McpDefinitionRecord

from .conftest import OTHER, PROJECT

pytestmark = pytest.mark.req("ENG-03")

CONTENT = b'{"name": "tools", "command": ["server"]}\n'
TOOLS = [{"name": "search", "description": "Find é", "inputSchema": {"type": "object"}, "annotations": None}]


@pytest.mark.req("CLI-01", "CLI-05")
def test_a_registration_keeps_its_exact_bytes_and_is_replaced_in_place(store: Store) -> None:
    assert store.mcp_servers.definition_hash("tools") is None
    store.mcp_servers.put_definition("tools", CONTENT, "json", "h1")
    (first,) = store.mcp_servers.definitions()
    assert isinstance(first, McpDefinitionRecord)
    assert (first.name, first.content, first.format, first.sha256) == ("tools", CONTENT, "json", "h1")
    assert type(first.content) is bytes
    store.mcp_servers.put_definition("tools", b"name: tools\n", "yaml", "h2")
    (second,) = store.mcp_servers.definitions()
    assert (second.content, second.format, second.sha256, second.added_at) == (
        b"name: tools\n",
        "yaml",
        "h2",
        first.added_at,
    )
    assert store.mcp_servers.definition_hash("tools") == "h2"


@pytest.mark.req("CLI-02")
def test_grants_are_per_project_and_re_granting_moves_the_hash(store: Store) -> None:
    assert store.mcp_servers.grants(PROJECT) == {}
    store.mcp_servers.grant(PROJECT, "config:tools", "h1")
    store.mcp_servers.grant(PROJECT, "project:.shadowcode/mcp/a.json", "h9")
    store.mcp_servers.grant(PROJECT, "config:tools", "h2")
    store.mcp_servers.grant(OTHER, "config:tools", "h1")
    assert store.mcp_servers.grants(PROJECT) == {"config:tools": "h2", "project:.shadowcode/mcp/a.json": "h9"}
    assert store.mcp_servers.revoke(PROJECT, "config:tools") is True
    assert store.mcp_servers.revoke(PROJECT, "config:tools") is False
    assert store.mcp_servers.grants(OTHER) == {"config:tools": "h1"}


def test_a_grant_for_an_unrecorded_project_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError):
        store.mcp_servers.grant("/projects/unknown", "config:tools", "h1")


@pytest.mark.req("CLI-08")
def test_catalogs_round_trip_their_json_by_project_definition_and_hash(store: Store) -> None:
    assert store.mcp_servers.cached_tools("", "config:tools", "h1") is None
    store.mcp_servers.save_tools("", "config:tools", "h1", TOOLS)
    assert store.mcp_servers.cached_tools("", "config:tools", "h1") == TOOLS
    assert store.mcp_servers.cached_tools("", "config:tools", "h2") is None
    assert store.mcp_servers.cached_tools(PROJECT, "config:tools", "h1") is None
    store.mcp_servers.save_tools("", "config:tools", "h1", [])
    assert store.mcp_servers.cached_tools("", "config:tools", "h1") == []


def test_a_stored_catalog_that_is_not_json_is_a_store_error(store: Store) -> None:
    store.execute(
        "INSERT INTO mcp_catalogs (project, definition_id, sha256, tools, fetched_at) "
        "VALUES ('', 'config:x', 'h', '[', 0)"
    )
    with pytest.raises(StoreError, match="tool catalog"):
        store.mcp_servers.cached_tools("", "config:x", "h")


@pytest.mark.req("CLI-05")
def test_removing_a_registration_revokes_its_grants_everywhere_and_drops_its_catalogs(store: Store) -> None:
    store.mcp_servers.put_definition("tools", CONTENT, "json", "h1")
    store.mcp_servers.grant(PROJECT, "config:tools", "h1")
    store.mcp_servers.grant(OTHER, "config:tools", "h1")
    store.mcp_servers.grant(OTHER, "config:else", "h3")
    store.mcp_servers.save_tools("", "config:tools", "h1", TOOLS)
    assert store.mcp_servers.remove_definition("tools", "config:tools") == 2
    assert store.mcp_servers.definitions() == []
    assert store.mcp_servers.grants(PROJECT) == {} and store.mcp_servers.grants(OTHER) == {"config:else": "h3"}
    assert store.mcp_servers.cached_tools("", "config:tools", "h1") is None
