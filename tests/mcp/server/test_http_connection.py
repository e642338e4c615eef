"""The gateway's connection module stands below the server that uses it: no import back, not even for types."""

from __future__ import annotations

import ast
from pathlib import Path

import shadowcode.mcp.server.http_connection as http_connection


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_connection_module_never_imports_the_gateway_server_modules() -> None:
    source = Path(http_connection.__file__)
    assert source.name == "http_connection.py"
    servers = {"shadowcode.mcp.server.streamable_http", "shadowcode.mcp.server.gateway"}
    assert _imported(source) & servers == set()  # module, function and TYPE_CHECKING imports alike


def test_the_gateway_server_satisfies_the_front_a_connection_needs() -> None:
    from shadowcode.mcp.server.streamable_http import GatewayServer

    front = http_connection.ConnectionFront
    wanted = set(front.__annotations__) | {"forget", "start_call"}
    server = GatewayServer(lambda *_: None, token=b"t" * 32, bound_host="127.0.0.1", port=1)
    assert all(hasattr(server, name) for name in wanted), wanted - {n for n in wanted if hasattr(server, n)}
