"""Every tool declares the shape of its structured content, and its text block is a summary (SRV-04).

The real calls are checked where they are made (tests/mcp/server/test_server.py and
test_job_tools.py validate each result against its tool's outputSchema with
``tests.support.tool_results``); this file checks the declarations themselves.
"""

from __future__ import annotations

import jsonschema
import pytest

from shadowcode.mcp.server.app import _tool_list
from shadowcode.mcp.server.outputs import OUTPUTS, output_schema, summary
from shadowcode.mcp.server.tools import TOOLS


@pytest.mark.req("SRV-04")
def test_every_tool_lists_a_valid_output_schema_with_an_object_root() -> None:
    assert set(OUTPUTS) == {t.name for t in TOOLS}
    for tool in _tool_list():
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object", tool.name
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "Attributes:" not in str(schema), f"{tool.name}: a docstring leaked into the schema"


@pytest.mark.req("SRV-04")
def test_a_union_result_accepts_each_branch_and_refuses_another_shape() -> None:
    goal = {"id": "g1", "title": "t", "status": "active", "progress": [], "created_at": 1, "updated_at": 2}
    validator = jsonschema.Draft202012Validator(output_schema("shadow_goal"))
    assert validator.is_valid({"goals": []}) and validator.is_valid({"goal": goal})
    assert not validator.is_valid({"goal": {**goal, "status": "lost"}})
    assert not validator.is_valid({"jobs": []})


@pytest.mark.req("SRV-04")
def test_the_models_schema_has_no_key_variable_only_whether_one_is_set() -> None:
    item = next(iter(output_schema("shadow_models")["$defs"].values()))
    assert "api_key_env" not in item["properties"] and item["properties"]["has_api_key_env"] == {"type": "boolean"}


@pytest.mark.req("SRV-04")
def test_a_summary_is_one_short_line_and_never_fails() -> None:
    status = {
        "version": "0.1.0",
        "profile": "default",
        "engine": {"mode": "temporary"},
        "project": {"path": "/p", "trusted": True, "level": "workspace"},
        "server": {"allow_write": False, "allow_approvals": False},
        "models": {"configured": 1, "default": "m"},
    }
    text = summary("shadow_status", status)
    assert text.startswith("Project /p (trusted at workspace); profile default; engine temporary; server read-only")
    assert "\n" not in text
    fallback = summary("shadow_status", {"unexpected": 1})
    assert fallback == "shadow_status answered; the full result is in structuredContent."
