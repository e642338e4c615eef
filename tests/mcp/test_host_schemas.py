"""The entries for hosts that cannot run here, checked against each host's published shape.

Covers REG-04, REG-05, REG-06.

VS Code, Zed, Windsurf and Cursor are desktop editors: no headless run proves their entry, so
each printed entry is validated against a small JSON Schema written from the host's own
documentation or settings types (tests/fixtures/host_schemas; each names its source in
``$comment``). A schema allows only the fields ShadowCode prints, so a change of shape fails
here before it reaches a user.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from shadowcode.mcp.host_entries import Client
from shadowcode.mcp.register import build_snippet

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "host_schemas"
EDITORS = [Client.VSCODE, Client.ZED, Client.WINDSURF, Client.CURSOR]


def _validator(client: Client) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{client.value}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "$comment" in schema and "http" in schema["$comment"], "each schema names its source"
    return jsonschema.Draft202012Validator(schema)


def _errors(client: Client, document: Any) -> list[str]:
    return [error.message for error in _validator(client).iter_errors(document)]


@pytest.mark.req("REG-04", "REG-05")
@pytest.mark.parametrize("client", EDITORS)
def test_the_stdio_entry_has_the_host_documented_shape(client: Client, tmp_path: Path) -> None:
    project = tmp_path / 'a "quoted" project'
    project.mkdir()
    for home in (None, str(tmp_path / "root")):
        snippet = build_snippet(client, workspace=project, profile="p", allow_write=True, home=home)
        assert _errors(client, json.loads(snippet.text)) == []


@pytest.mark.req("REG-06")
@pytest.mark.parametrize("client", [Client.VSCODE, Client.WINDSURF, Client.CURSOR])
def test_the_http_entry_has_the_host_documented_shape(client: Client) -> None:
    snippet = build_snippet(client, workspace=Path("."), url="http://127.0.0.1:8765/mcp", token_env="TOKEN_VAR")
    assert _errors(client, json.loads(snippet.text)) == []


@pytest.mark.req("REG-04")
@pytest.mark.parametrize("client", EDITORS)
def test_the_schema_refuses_a_shape_the_host_would_not_read(client: Client, tmp_path: Path) -> None:
    document = json.loads(build_snippet(client, workspace=tmp_path).text)
    (outer,) = document
    entry = document[outer]["shadowcode"]
    wrong_key = {("mcpServers" if outer != "mcpServers" else "servers"): document[outer]}
    assert _errors(client, wrong_key), "a file with another host's top-level key must not validate"
    entry["args"] = " ".join(entry["args"])
    assert _errors(client, document), "args as one string must not validate"
