"""Approvals asked in the host (mcp/server/host_approvals.py) over a running temporary engine.

The legacy path through the SDK's own client (initialize handshake, elicitation declared), and
the Tasks extension's input broker called as the tasks layer calls it.

Covers SRV-29, SRV-30, ENG-07.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from shadowcode.engine.api import Access, ApprovalAsk, ApprovalDecision, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import ApprovalStatus, PermissionLevel
from shadowcode.errors import PolicyError
from shadowcode.mcp.server.app import build_server, build_session, input_broker
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.host_approvals import HostApprovals
from shadowcode.mcp.server.input_broker import NoInputBroker
from tests.support.engine import scripted_model, wait_approval, wait_for, wait_status
from tests.support.jobs import DONE_TURN, PARK_TURN, cli_caller, kinds

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("SRV-29"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
]

HOST = Access(allow_write=True, approve_in_host=True)
FORM_CAPS = types.ClientCapabilities.model_validate({"elicitation": {"form": {}}})
URL_CAPS = types.ClientCapabilities.model_validate({"elicitation": {"url": {}}})

Answer = Callable[[types.ElicitRequestParams], Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def api(engine: LocalEngine, project_dir: Path, tmp_path: Path) -> AsyncIterator[LocalEngine]:
    scripted_model(engine.state.profile, tmp_path / "script.json", [{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    engine.state.projects.trust(engine.state.project_at(project_dir).path, PermissionLevel.WORKSPACE)
    with anyio.fail_after(60):
        async with engine.running():
            yield engine


def context(api: LocalEngine, project_dir: Path, access: Access = HOST, *, page: bool = False) -> ServerContext:
    return ServerContext(api=api, root=api.state.project_at(project_dir).path, access=access, approval_page=page)


@asynccontextmanager
async def legacy_client(ctx: ServerContext, answer: Answer | None) -> AsyncIterator[Client]:
    """An SDK client on the handshake revisions; with ``answer`` it declares elicitation and answers with it."""
    kwargs: dict[str, Any] = {}
    if answer is not None:

        async def callback(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            return await answer(params)  # type: ignore[no-any-return]

        kwargs["elicitation_callback"] = callback
    async with Client(build_server(ctx), mode="legacy", **kwargs) as client:
        yield client


async def run_job(client: Client) -> str:
    result = await client.call_tool("shadow_run", {"prompt": "go", "permission_level": "workspace"})
    assert not result.is_error, result.content
    return str(result.structured_content["job_id"])  # type: ignore[index]


# -- handshake revisions: elicitation/create to the owning client ---------------------------------


async def test_accept_in_the_host_runs_the_exact_command_it_named(api: LocalEngine, project_dir: Path) -> None:
    ctx = context(api, project_dir)
    asked: list[types.ElicitRequestParams] = []

    async def accept(params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with legacy_client(ctx, accept) as client:
        job = await run_job(client)
        done = await wait_status(api.state.records, job)
    assert done.status == "done" and "command.result" in kinds(api.state, job)
    [params] = asked
    assert isinstance(params, types.ElicitRequestFormParams)
    assert '["true"]' in params.message and f"in folder: {ctx.root}" in params.message and job in params.message
    [approval] = [a for a in api.state.store.approvals.pending() if a.task_id == job] or [None]
    assert approval is None
    resolved = [e.data for e in api.state.records.events(job) if e.kind == "approval.resolved"]
    assert resolved[0]["status"] == "approved"
    record = api.state.approvals.get(resolved[0]["approval_id"])
    assert record.resolved_by == f"host:{ctx.owner.id}"  # type: ignore[union-attr]


async def test_decline_in_the_host_denies_and_the_job_says_so(api: LocalEngine, project_dir: Path) -> None:
    async def decline(_params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with legacy_client(context(api, project_dir), decline) as client:
        job = await run_job(client)
        await wait_status(api.state.records, job)
        page = await client.call_tool("shadow_jobs", {"action": "get", "job_id": job})
    resolved = [e["data"] for e in page.structured_content["events"] if e["kind"] == "approval.resolved"]  # type: ignore[index]
    assert [r["status"] for r in resolved] == ["denied"]
    assert "command.started" not in kinds(api.state, job)


async def test_an_answer_that_cannot_be_decoded_counts_as_a_denial(api: LocalEngine, project_dir: Path) -> None:
    async def odd(_params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": "sure"})

    async with legacy_client(context(api, project_dir), odd) as client:
        job = await run_job(client)
        await wait_status(api.state.records, job)
    assert "command.started" not in kinds(api.state, job)


async def test_the_terminal_answering_first_withdraws_the_question_and_the_host_answer_is_never_applied(
    api: LocalEngine, project_dir: Path
) -> None:
    seen = anyio.Event()
    withdrawn = anyio.Event()

    async def wait_forever(_params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.set()
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()
        raise AssertionError("unreachable")

    async with legacy_client(context(api, project_dir), wait_forever) as client:
        job = await run_job(client)
        with anyio.fail_after(20):
            await seen.wait()
        pending = await wait_approval(api.state.approvals, job)
        await api.approval_resolve(ApprovalDecision(pending.id, "approve"), cli_caller())
        with anyio.fail_after(20):
            await withdrawn.wait()  # notifications/cancelled reached the client
        assert (await wait_status(api.state.records, job)).status == "done"
    assert api.state.approvals.get(pending.id).resolved_by == "cli"


async def test_nothing_is_asked_without_the_flag_or_without_declared_elicitation(
    api: LocalEngine, project_dir: Path
) -> None:
    async def never(_params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("asked without --approve-in-host")

    plain = context(api, project_dir, Access(allow_write=True, allow_approvals=True))
    assert isinstance(input_broker(plain), NoInputBroker)
    async with legacy_client(plain, never) as client:
        job = await run_job(client)
        pending = await wait_approval(api.state.approvals, job)
        await api.approval_resolve(ApprovalDecision(pending.id, "deny"), cli_caller())
        await wait_status(api.state.records, job)

    silent = context(api, project_dir)
    host = input_broker(silent)
    assert isinstance(host, HostApprovals)
    async with Client(build_session(silent, broker=host)[0], mode="legacy") as client:
        await run_job(client)
        assert not host.asks_legacy


# -- the Tasks extension's input broker (2026-07-28) ----------------------------------------------


@asynccontextmanager
async def broker(
    api: LocalEngine, project_dir: Path, *, page: bool = False
) -> AsyncIterator[tuple[HostApprovals, str]]:
    """A running broker and a job of its connection's owner waiting on the approval of ``true``."""
    ctx = context(api, project_dir, page=page)
    host = HostApprovals(ctx, page_preferred=page)
    async with host.running():
        caller = await ctx.owning_caller()
        job = (await api.task_submit(TaskRequest("go", level=PermissionLevel.WORKSPACE), caller)).job_id
        await wait_approval(api.state.approvals, job)
        yield host, job


def pending_of(api: LocalEngine, job: str) -> list[str]:
    return [a.id for a in api.state.approvals.pending(task_id=job)]


async def test_a_waiting_task_lists_one_elicitation_keyed_by_its_state_stable_across_polls(
    api: LocalEngine, project_dir: Path
) -> None:
    async with broker(api, project_dir) as (host, job):
        assert await host.input_requests(job, None) == {}
        assert await host.input_requests(job, types.ClientCapabilities()) == {}
        first = await host.input_requests(job, FORM_CAPS)
        assert await host.input_requests(job, FORM_CAPS) == first
        [(key, request)] = first.items()
        assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
        assert '["true"]' in request["params"]["message"] and job in request["params"]["message"]
        assert key not in request["params"]["message"]
        await host.input_responses(job, {key: {"action": "accept", "content": {"approve": True}}})
        assert (await wait_status(api.state.records, job)).status == "done"
        assert "command.result" in kinds(api.state, job)
        assert await host.input_requests(job, FORM_CAPS) == {}


async def test_decline_through_input_responses_denies(api: LocalEngine, project_dir: Path) -> None:
    async with broker(api, project_dir) as (host, job):
        [key] = await host.input_requests(job, FORM_CAPS)
        await host.input_responses(job, {key: {"action": "decline"}})
        await wait_status(api.state.records, job)
        assert "command.started" not in kinds(api.state, job)


async def test_a_tampered_unknown_or_malformed_response_is_refused_and_changes_nothing(
    api: LocalEngine, project_dir: Path
) -> None:
    async with broker(api, project_dir) as (host, job):
        [key] = await host.input_requests(job, FORM_CAPS)
        before = pending_of(api, job)
        bad = {
            "tampered": {key[:-2] + ("AA" if not key.endswith("AA") else "BB"): {"action": "accept"}},
            "unknown": {"not-a-state": {"action": "accept"}},
            "empty answer": {key: None},
            "malformed": {key: {"action": "approve"}},
            "one bad of two": {key: {"action": "accept"}, key + "x": {"action": "accept"}},
        }
        for why, responses in bad.items():
            with pytest.raises(MCPError) as refused:
                await host.input_responses(job, responses)
            assert refused.value.error.code == types.INVALID_PARAMS, why
            assert pending_of(api, job) == before, why
        with pytest.raises(MCPError, match="belongs to another job"):
            await host.input_responses("task_0000000000000000", {key: {"action": "accept"}})
        minted = await api.approval_ask(ApprovalAsk(before[0]), host.ctx.caller())  # genuine, never offered
        with pytest.raises(MCPError, match="no outstanding input request of task"):
            await host.input_responses(job, {minted.state: {"action": "accept"}})
        await host.input_responses(job, {})  # nothing to apply
        assert pending_of(api, job) == before


async def test_a_replayed_key_is_refused_and_the_next_approval_stays_pending(
    api: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    scripted_model(
        api.state.profile, tmp_path / "script.json", [{"match": "", "turns": [PARK_TURN, PARK_TURN, DONE_TURN]}]
    )
    async with broker(api, project_dir) as (host, job):
        [key] = await host.input_requests(job, FORM_CAPS)
        first = pending_of(api, job)
        await host.input_responses(job, {key: {"action": "accept"}})
        second = await wait_for(lambda: [a for a in pending_of(api, job) if a not in first], what="a second approval")
        with pytest.raises(MCPError, match="already used") as refused:
            await host.input_responses(job, {key: {"action": "accept"}})
        assert refused.value.error.code == types.INVALID_PARAMS
        assert pending_of(api, job) == second


async def test_the_terminal_first_makes_the_hosts_late_answer_refused_naming_the_terminal(
    api: LocalEngine, project_dir: Path
) -> None:
    async with broker(api, project_dir) as (host, job):
        [key] = await host.input_requests(job, FORM_CAPS)
        [approval] = pending_of(api, job)
        await api.approval_resolve(ApprovalDecision(approval, "deny"), cli_caller())
        with pytest.raises(MCPError, match="already denied by the command line"):
            await host.input_responses(job, {key: {"action": "accept"}})
        assert api.state.approvals.get(approval).status is ApprovalStatus.DENIED


async def test_the_host_first_makes_the_terminal_refused_naming_the_host(api: LocalEngine, project_dir: Path) -> None:
    async with broker(api, project_dir) as (host, job):
        [key] = await host.input_requests(job, FORM_CAPS)
        [approval] = pending_of(api, job)
        await host.input_responses(job, {key: {"action": "accept"}})
        with pytest.raises(PolicyError, match="already approved by the host's answer"):
            await api.approval_resolve(ApprovalDecision(approval, "deny"), cli_caller())


@pytest.mark.req("SRV-30")
async def test_url_mode_points_at_the_page_where_the_person_decides_once(api: LocalEngine, project_dir: Path) -> None:
    async with broker(api, project_dir, page=True) as (host, job):
        [(key, request)] = (await host.input_requests(job, URL_CAPS)).items()
        params = request["params"]
        assert params["mode"] == "url" and params["url"].startswith("http://127.0.0.1:")
        url = params["url"]
        token = url.rsplit("/", 1)[1]
        assert token not in params["message"] and token not in key
        await host.input_responses(job, {key: {"action": "accept"}})  # opened the page: decides nothing
        [approval] = pending_of(api, job)
        origin = url.split("/approval/")[0]
        async with httpx2.AsyncClient(timeout=10) as http:
            page = await http.get(url)
            assert page.status_code == 200 and "<code>true</code>" in page.text and job in page.text
            refused = await http.post(url, data={"decision": "approve"}, headers={"Origin": "http://evil.test"})
            assert refused.status_code == 403
            assert (await http.get(origin + "/approval/" + "x" * len(token))).status_code == 404
            assert pending_of(api, job) == [approval]
            done = await http.post(url, data={"decision": "approve"}, headers={"Origin": origin})
            assert done.status_code == 200 and "Approved" in done.text
            again = await http.post(url, data={"decision": "deny"}, headers={"Origin": origin})
            assert again.status_code == 410
        assert api.state.approvals.get(approval).resolved_by.startswith("page:")  # type: ignore[union-attr]
        assert (await wait_status(api.state.records, job)).status == "done"
        assert all(token not in str(e.data) for e in api.state.records.events(job, limit=1000))


async def test_a_nested_lifespan_shares_the_outer_ones_work(api: LocalEngine, project_dir: Path) -> None:
    host = HostApprovals(context(api, project_dir), page_preferred=True)
    async with host.running():
        outer = host._tg  # noqa: SLF001 - the test looks at the running work
        async with host.running():
            assert host._tg is outer  # noqa: SLF001
        assert host._tg is outer  # noqa: SLF001 - leaving the inner entry stopped nothing
    assert host._tg is None  # noqa: SLF001


# -- 2026-07-28 without the Tasks extension: asked within a shadow_jobs call ----------------------


async def test_a_modern_client_is_asked_within_shadow_jobs_and_its_answer_is_applied(
    api: LocalEngine, project_dir: Path
) -> None:
    ctx = context(api, project_dir)
    asked: list[types.ElicitRequestParams] = []

    async def accept(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Client(build_server(ctx), elicitation_callback=accept) as client:
        job = await run_job(client)
        await wait_approval(api.state.approvals, job)
        got = await client.call_tool("shadow_jobs", {"action": "get", "job_id": job})
        assert not got.is_error
        done = await wait_status(api.state.records, job)
    assert done.status == "done" and "command.result" in kinds(api.state, job)
    [params] = asked
    assert '["true"]' in params.message
    resolved = [e.data for e in api.state.records.events(job) if e.kind == "approval.resolved"]
    assert api.state.approvals.get(resolved[0]["approval_id"]).resolved_by == f"host:{ctx.owner.id}"  # type: ignore[union-attr]


def jobs_get(
    job: str, state: str | None = None, responses: dict[str, Any] | None = None
) -> types.CallToolRequestParams:
    doc: dict[str, Any] = {"name": "shadow_jobs", "arguments": {"action": "get", "job_id": job}}
    if state is not None:
        doc |= {"requestState": state, "inputResponses": responses or {}}
    return types.CallToolRequestParams.model_validate(doc)


async def test_within_shadow_jobs_an_altered_or_replayed_state_is_refused_and_nothing_changes(
    api: LocalEngine, project_dir: Path
) -> None:
    async with broker(api, project_dir) as (host, job):
        assert await host.call_input(jobs_get(job), FORM_CAPS, tasks=True) is None  # tasks/update asks instead
        assert await host.call_input(jobs_get(job), None, tasks=False) is None  # no elicitation declared
        asked = await host.call_input(jobs_get(job), FORM_CAPS, tasks=False)
        assert asked is not None and asked["resultType"] == "input_required"
        [(key, request)] = asked["inputRequests"].items()
        state = asked["requestState"]
        assert key.startswith("appr_") and request["method"] == "elicitation/create" and state not in str(request)
        before = pending_of(api, job)
        accept = {key: {"action": "accept", "content": {"approve": True}}}
        for why, params in {
            "altered": jobs_get(job, state[:-2] + ("AA" if not state.endswith("AA") else "BB"), accept),
            "no answer": jobs_get(job, state, {}),
            "another key": jobs_get(job, state, {"appr_other": {"action": "accept"}}),
        }.items():
            with pytest.raises(MCPError) as refused:
                await host.call_input(params, FORM_CAPS, tasks=False)
            assert refused.value.error.code == types.INVALID_PARAMS, why
            assert pending_of(api, job) == before, why
        assert await host.call_input(jobs_get(job, state, accept), FORM_CAPS, tasks=False) is None
        with pytest.raises(MCPError, match="already used"):
            await host.call_input(jobs_get(job, state, accept), FORM_CAPS, tasks=False)
        assert (await wait_status(api.state.records, job)).status == "done"


@pytest.mark.req("SRV-30")
async def test_within_shadow_jobs_an_opened_page_is_not_asked_again(api: LocalEngine, project_dir: Path) -> None:
    async with broker(api, project_dir, page=True) as (host, job):
        asked = await host.call_input(jobs_get(job), URL_CAPS, tasks=False)
        assert asked is not None
        [(key, request)] = asked["inputRequests"].items()
        assert request["params"]["mode"] == "url"
        opened = jobs_get(job, asked["requestState"], {key: {"action": "accept"}})
        assert await host.call_input(opened, URL_CAPS, tasks=False) is None
        assert await host.call_input(jobs_get(job), URL_CAPS, tasks=False) is None  # the page decides now
        assert len(pending_of(api, job)) == 1
