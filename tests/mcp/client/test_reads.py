"""Listing resources, templates and prompts, reading a resource and getting a prompt on real servers.

Covers CW-06.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.errors import ToolError, UpstreamServerError
from shadowcode.limits import MCP_FRAME_MAX_BYTES, MCP_HELPER_RESULT_MAX_BYTES
from shadowcode.mcp.client.catalog import CatalogLimits
from shadowcode.mcp.client.connection import CallRefused, Connection, ConnectionState
from shadowcode.mcp.client.reads import check_prompt_arguments, get_prompt, read_resource
from shadowcode.mcp.client.redaction import Redactor
from shadowcode.mcp.client.stdio import ClientLimits
from tests.support.mcp_client import PY, PYTHON_SDK_SERVER, REPO

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("CW-06"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

NODE_PROBES = REPO / "conformance/shadowcode_conformance/node_probes"
EVERYTHING = NODE_PROBES / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SECRET = "helper-secret-4b1d9e0c"
# Frames large enough that a result at MCP_HELPER_RESULT_MAX_BYTES reaches the helper limit.
BIG_FRAMES = ClientLimits(frame_max_bytes=4 * MCP_HELPER_RESULT_MAX_BYTES, lifetime_max_bytes=64 * 1024 * 1024)
REVIEW = {"name": "review", "arguments": [{"name": "code", "required": True}, {"name": "style", "required": False}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(argv: list[str], **kw: Any) -> AsyncIterator[Connection]:
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            env = child_env() | {"HELPER_SECRET": SECRET}
            conn = Connection(server_id="test:r", argv=argv, cwd=REPO, env=env, timeout_seconds=30, **kw)
            await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()


def _fixture() -> list[str]:
    return [PY, str(PYTHON_SDK_SERVER)]


async def test_resources_templates_and_prompts_are_listed_read_and_got_redacted() -> None:
    async with connected(_fixture(), redactor=Redactor([SECRET])) as conn:
        assert [r["uri"] for r in await conn.listing("resources")] == ["fixture://greeting"]
        templates = [t["uriTemplate"] for t in await conn.listing("templates")]
        assert templates == ["fixture://sized/{size}", "fixture://secret/{name}"]
        assert [p["name"] for p in await conn.listing("prompts")] == ["review"]
        read = await read_resource(conn, "fixture://greeting")
        assert read["contents"][0]["text"] == "hello from the fixture"
        secret = await read_resource(conn, "fixture://secret/HELPER_SECRET")
        assert secret["contents"][0]["text"] == "[redacted]"
        prompt = await get_prompt(conn, "review", {"code": f"token = '{SECRET}'"})
        text = prompt["messages"][0]["content"]["text"]
        assert text.startswith("Review this code (short)") and SECRET not in text and "[redacted]" in text
        with pytest.raises(CallRefused):
            await read_resource(conn, "fixture://missing")
        assert conn.state is ConnectionState.READY


async def test_a_resource_read_at_the_limit_is_returned_and_one_byte_more_is_refused_whole() -> None:
    async with connected(_fixture(), limits=BIG_FRAMES) as conn:
        at = await read_resource(conn, f"fixture://sized/{MCP_HELPER_RESULT_MAX_BYTES}")
        assert len(at["contents"][0]["text"]) == MCP_HELPER_RESULT_MAX_BYTES
        with pytest.raises(UpstreamServerError, match=f"the limit is {MCP_HELPER_RESULT_MAX_BYTES} bytes"):
            await read_resource(conn, f"fixture://sized/{MCP_HELPER_RESULT_MAX_BYTES + 1}")
        assert conn.state is ConnectionState.READY
        assert (await read_resource(conn, "fixture://greeting"))["contents"]


async def test_a_2_mb_plus_1_read_under_the_default_frame_limit_fails_the_connection_not_the_task() -> None:
    # With the default transport limits a reply this large never arrives whole: the frame limit ends it.
    assert MCP_FRAME_MAX_BYTES < MCP_HELPER_RESULT_MAX_BYTES
    async with connected(_fixture()) as conn:
        with pytest.raises(UpstreamServerError):
            await read_resource(conn, f"fixture://sized/{MCP_HELPER_RESULT_MAX_BYTES + 1}")
        assert conn.state is ConnectionState.FAILED


def test_prompt_arguments_that_do_not_match_the_declaration_are_refused() -> None:
    assert check_prompt_arguments(REVIEW, {"code": "x"}) == {"code": "x"}
    assert check_prompt_arguments(REVIEW, {"code": "x", "style": "long"}) == {"code": "x", "style": "long"}
    with pytest.raises(ToolError, match="requires 'code'; nothing was sent"):
        check_prompt_arguments(REVIEW, {})
    with pytest.raises(ToolError, match="requires 'code'"):
        check_prompt_arguments(REVIEW, None)
    with pytest.raises(ToolError, match="declares no argument 'colour'"):
        check_prompt_arguments(REVIEW, {"code": "x", "colour": "red"})
    with pytest.raises(ToolError, match="are strings"):
        check_prompt_arguments(REVIEW, {"code": 3})
    with pytest.raises(ToolError, match="must be a JSON object"):
        check_prompt_arguments(REVIEW, ["x"])
    assert check_prompt_arguments({"name": "bare"}, None) == {}


async def test_server_everything_lists_and_reads_resources_templates_and_prompts() -> None:
    if not EVERYTHING.exists():
        pytest.skip("server-everything is not installed in conformance/shadowcode_conformance/node_probes")
    async with connected(["node", str(EVERYTHING), "stdio"]) as conn:
        resources = await conn.listing("resources")
        assert "demo://resource/static/document/architecture.md" in [r["uri"] for r in resources]
        templates = [t["uriTemplate"] for t in await conn.listing("templates")]
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        prompts = {p["name"]: p for p in await conn.listing("prompts")}
        read = await read_resource(conn, "demo://resource/dynamic/text/1")
        assert read["contents"][0]["text"]
        args = check_prompt_arguments(prompts["args-prompt"], {"city": "Lisbon"})
        got = await get_prompt(conn, "args-prompt", args)
        assert "Lisbon" in str(got["messages"])
        with pytest.raises(ToolError, match="requires 'city'"):
            check_prompt_arguments(prompts["args-prompt"], {"state": "x"})


async def test_a_prompt_result_at_the_limit_is_returned_and_one_byte_more_is_refused_whole() -> None:
    async with connected(_fixture()) as conn:
        whole = await get_prompt(conn, "review", {"code": "y" * 1000})
        size = len(json.dumps(whole["messages"], ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    async with connected(_fixture(), catalog_limits=CatalogLimits(helper_result_max_bytes=size)) as conn:
        assert (await get_prompt(conn, "review", {"code": "y" * 1000}))["messages"] == whole["messages"]
        with pytest.raises(UpstreamServerError, match=f"is {size + 1} bytes; the limit is {size} bytes"):
            await get_prompt(conn, "review", {"code": "y" * 1001})
        assert conn.state is ConnectionState.READY
