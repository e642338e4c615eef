"""Operation limits of the server: operations in flight, the operation deadline, the result size (SRV-25).

In process through the SDK client with ``build_server`` overrides and stand-in handlers where
the real values would only add waiting; one live ``mcp serve`` process proves the real eight
with slow ``shadow_sqlite`` queries.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from shadowcode.engine.api import Access
from shadowcode.engine.local import LocalEngine
from shadowcode.limits import OPERATIONS_IN_FLIGHT_MAX, RESULT_MAX_BYTES, SQLITE_QUERY_TIMEOUT_SECONDS
from shadowcode.mcp.server import app
from shadowcode.mcp.server.app import build_server, result_too_large
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.tools import tool_named
from tests.support.process import ServerProcess

ENDLESS_QUERY = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def _client(api: LocalEngine, project_dir: Path, **limits: Any) -> AsyncIterator[Client]:
    ctx = ServerContext(api=api, root=api.state.project_at(project_dir).path, access=Access())
    with anyio.fail_after(20):
        async with Client(build_server(ctx, **limits), mode="legacy") as client:
            yield client


def _stand_in(monkeypatch: pytest.MonkeyPatch, handler: Callable[..., Any]) -> None:
    """Make ``shadow_status`` run ``handler`` instead of its own code, listed without its outputSchema
    (the stand-in answers another shape, which the client would otherwise refuse)."""
    spec = dataclasses.replace(tool_named("shadow_status"), handler=handler)  # type: ignore[type-var]
    monkeypatch.setattr(app, "tool_named", lambda name: spec if name == "shadow_status" else tool_named(name))
    listed = tuple(
        t.model_copy(update={"output_schema": None}) if t.name == "shadow_status" else t for t in app._tool_list()
    )
    monkeypatch.setattr(app, "_tool_list", lambda: listed)


# --- result size -------------------------------------------------------------------------


@pytest.mark.req("SRV-25")
def test_result_of_exactly_2_mb_is_allowed_and_one_byte_more_is_not() -> None:
    assert RESULT_MAX_BYTES == 2_000_000
    at_limit = json.dumps({"data": "x" * (RESULT_MAX_BYTES - len('{"data": ""}'))})
    assert len(at_limit.encode("utf-8")) == RESULT_MAX_BYTES
    assert not result_too_large(at_limit)
    assert result_too_large(at_limit[:-2] + 'x"}')


@pytest.mark.req("SRV-25")
def test_result_size_counts_utf8_bytes_not_characters() -> None:
    assert not result_too_large("é" * 5, max_bytes=10)
    assert result_too_large("é" * 5 + "a", max_bytes=10)
    assert result_too_large("a" * 11, max_bytes=10)


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_a_tool_result_at_the_limit_is_returned_and_one_byte_past_is_a_tool_error(
    api: LocalEngine, project_dir: Path
) -> None:
    async with _client(api, project_dir) as client:
        result = await client.call_tool("shadow_status", {})
        assert not result.is_error
        size = len(json.dumps(result.structured_content, ensure_ascii=False).encode("utf-8"))
    async with _client(api, project_dir, result_max_bytes=size) as client:
        result = await client.call_tool("shadow_status", {})
        assert not result.is_error and result.structured_content
    async with _client(api, project_dir, result_max_bytes=size - 1) as client:
        result = await client.call_tool("shadow_status", {})
        assert result.is_error
        assert result.structured_content is None
        text = result.content[0].text  # type: ignore[union-attr]
        assert "too large" in text and str(size - 1) in text


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_a_resource_over_the_result_limit_is_a_json_rpc_error(api: LocalEngine, project_dir: Path) -> None:
    async with _client(api, project_dir) as client:
        text = (await client.read_resource("shadow://project")).contents[0].text  # type: ignore[union-attr]
    size = len(text.encode("utf-8"))
    async with _client(api, project_dir, result_max_bytes=size) as client:
        assert (await client.read_resource("shadow://project")).contents
    async with _client(api, project_dir, result_max_bytes=size - 1) as client:
        with pytest.raises(MCPError, match="too large"):
            await client.read_resource("shadow://project")


# --- operations in flight ----------------------------------------------------------------


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_eight_operations_run_at_once_and_a_ninth_is_refused_with_a_json_rpc_error(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    release = anyio.Event()
    entered: list[int] = []
    all_in = anyio.Event()

    async def held(_ctx: Any, _args: Any) -> dict[str, Any]:
        entered.append(1)
        if len(entered) == OPERATIONS_IN_FLIGHT_MAX:
            all_in.set()
        await release.wait()
        return {"ok": True}

    _stand_in(monkeypatch, held)
    outcomes: list[bool] = []
    async with _client(api, project_dir) as client:

        async def one() -> None:
            result = await client.call_tool("shadow_status", {})
            outcomes.append(not result.is_error)

        async with anyio.create_task_group() as tg:
            for _ in range(OPERATIONS_IN_FLIGHT_MAX):
                tg.start_soon(one)
            await all_in.wait()
            with pytest.raises(MCPError, match="too many operations in flight") as refused:
                await client.call_tool("shadow_status", {})
            assert refused.value.error.code == -32600
            with pytest.raises(MCPError, match="too many operations in flight"):
                await client.read_resource("shadow://project")  # resources share the same count
            release.set()
        assert outcomes == [True] * OPERATIONS_IN_FLIGHT_MAX
        assert not (await client.call_tool("shadow_status", {})).is_error  # room again
    assert f"more than {OPERATIONS_IN_FLIGHT_MAX} operations in flight" in capsys.readouterr().err


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_an_operation_past_its_deadline_becomes_a_tool_error_and_frees_its_slot(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def endless(_ctx: Any, _args: Any) -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    _stand_in(monkeypatch, endless)
    async with _client(api, project_dir, operation_deadline_seconds=0.2, operations_max=1) as client:
        result = await client.call_tool("shadow_status", {})
        assert result.is_error
        assert "did not finish within 0.2 seconds" in result.content[0].text  # type: ignore[union-attr]
        second = await client.call_tool("shadow_status", {})  # the one slot was given back
        assert second.is_error and "did not finish" in second.content[0].text  # type: ignore[union-attr]


@pytest.mark.req("SRV-25")
@pytest.mark.anyio
async def test_an_operation_within_its_deadline_is_answered(
    api: LocalEngine, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def quick(_ctx: Any, _args: Any) -> dict[str, Any]:
        await anyio.sleep(0)
        return {"ok": True}

    _stand_in(monkeypatch, quick)
    async with _client(api, project_dir, operation_deadline_seconds=5) as client:
        result = await client.call_tool("shadow_status", {})
        assert not result.is_error and result.structured_content == {"ok": True}


# --- the real eight, live ----------------------------------------------------------------


@pytest.mark.req("SRV-25")
def test_live_server_runs_eight_slow_queries_and_refuses_a_ninth(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with sqlite3.connect(project / "slow.db") as db:
        db.execute("CREATE TABLE t(x)")
    db.close()
    server = ServerProcess(project, tmp_path / "home")
    try:
        server.initialize()
        total = OPERATIONS_IN_FLIGHT_MAX + 1
        for i in range(1, total + 1):
            args = {"action": "query", "path": "slow.db", "sql": ENDLESS_QUERY}
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "shadow_sqlite", "arguments": args},
                }
            )
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < total:
            line = server.read_line(timeout=SQLITE_QUERY_TIMEOUT_SECONDS * 4)
            assert line is not None, "the server closed the connection"
            doc = json.loads(line)
            assert doc["jsonrpc"] == "2.0"
            answers[doc["id"]] = doc
            if len(answers) == 1:
                first = doc  # the refusal comes at once, before any query reaches its deadline
        refused = [d for d in answers.values() if "error" in d]
        served = [d for d in answers.values() if "result" in d]
        assert len(refused) == 1 and len(served) == OPERATIONS_IN_FLIGHT_MAX
        assert first is refused[0]
        assert refused[0]["error"]["code"] == -32600
        assert "too many operations in flight" in refused[0]["error"]["message"]
        for doc in served:  # each ran until the query deadline: a tool error, not a refusal
            assert doc["result"]["isError"] is True
        server.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "shadow_status"}})
        assert "result" in server.read_until_response(99)
        assert server.peak_rss_kib() < 200 * 1024
        assert server.child_pids() == []
    finally:
        server.close()
