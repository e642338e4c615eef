"""Approvals asked in the host (``mcp serve --approve-in-host``): one connection's side (SRV-29, SRV-30).

Opt-in, because a host may answer without a person: with ``--approve-in-host`` the host's
answer counts as the person's. Without it nothing here exists and nothing is asked. An
approval stays the engine's record: this module only renders a pending approval of the
connection's own jobs as an elicitation and turns the answer into the engine's
``approval/answer``, carrying the state the engine signed (``approval/ask``); the first answer
wins, whichever door it came through (this one, ``shadowcode approve``, ``shadow_approve``).

Two ways to reach the host, by protocol revision:

- 2026-07-28 task connections: :class:`HostApprovals` is the connection's
  :class:`~shadowcode.mcp.server.input_broker.InputBroker` (chosen by
  :func:`shadowcode.mcp.server.app.input_broker`).
  For a task (the job) waiting for an approval, when the request's client capabilities
  declare elicitation, :meth:`~HostApprovals.input_requests` lists one ``elicitation/create``
  input request per pending approval, keyed by the engine-signed state (keys are stable while
  the state lives, so a client can deduplicate them across polls);
  :meth:`~HostApprovals.input_responses` has the engine verify every key and answer before any
  is applied: a key that is unknown, altered, used, expired or another connection's, or an
  answer in a wrong shape, is refused with -32602 and nothing changes.
- handshake revisions over stdio: once the client's ``notifications/initialized`` arrives and
  its capabilities declare elicitation, the connection watches its owner's pending approvals
  (every APPROVAL_ASK_POLL_SECONDS) and sends ``elicitation/create`` to the client for each new
  one. The request is withdrawn (``notifications/cancelled``) when the approval is decided
  another way, and asked again with a new state when its state expires unanswered. An answer
  that cannot be decoded counts as a denial; an error response leaves the approval pending
  (the terminal still answers it). The stateless HTTP gateway has no channel for a
  server-to-client request on these revisions, so nothing is asked there.

Form mode asks accept or decline (:mod:`shadowcode.mcp.server.approval_questions`). URL mode,
used when the client declares only URL-mode elicitation or when ``--approval-page`` is given
and the client declares it, hands the host a one-time link to the loopback approval page
(:mod:`shadowcode.mcp.server.approval_page`), where the person approves or denies; the link is
in the elicitation only, never in a tool result, a task's status or an event.
"""

from __future__ import annotations

import logging
import secrets
import sys
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError

from shadowcode.engine.api import ApprovalAnswer, ApprovalAsk, ApprovalAsked, Empty
from shadowcode.errors import ShadowcodeError
from shadowcode.limits import APPROVAL_ASK_POLL_SECONDS
from shadowcode.mcp.server.approval_page import ApprovalPage, PageLink
from shadowcode.mcp.server.approval_questions import AskMode, decision_of, form_params, url_params
from shadowcode.mcp.server.context import ServerContext

__all__ = ["HostApprovals", "ask_mode"]

logger = logging.getLogger(__name__)

_RENEW_MARGIN_SECONDS = 5
"""A question whose state has less than this left is asked again with a new state."""

_WAITING = frozenset(("waiting", "input_required"))

Decision = Literal["approve", "deny"]


class _NotAnswered(Exception):
    """The client answered a question with an error: it is not asked again on this connection."""


def ask_mode(capabilities: types.ClientCapabilities | None, *, page_preferred: bool) -> AskMode | None:
    """How to ask a client with these capabilities; None when it declares no elicitation.

    An empty ``elicitation`` object means form mode (the revisions before URL mode). URL mode
    when the client declares only it, or declares it and the server prefers the page.
    """
    declared = capabilities.elicitation if capabilities is not None else None
    if declared is None:
        return None
    url = declared.url is not None
    form = declared.form is not None or not url
    if url and (page_preferred or not form):
        return AskMode.URL
    return AskMode.FORM


@dataclass
class _Question:
    """One approval as currently asked: the engine's question, how it is asked, its params."""

    asked: ApprovalAsked
    mode: AskMode
    params: dict[str, Any]
    link: PageLink | None = None


class HostApprovals:
    """One connection's approvals asked in the host; enter :meth:`running` for the connection's life.

    Implements the Tasks extension's ``InputBroker`` (:meth:`input_requests`,
    :meth:`input_responses`, :meth:`job_changed`) and the legacy ``elicitation/create`` path
    (:meth:`attach_legacy`).

    Args:
        ctx: the connection; ``ctx.access.approve_in_host`` must be set (SRV-29).
        page_preferred: ``--approval-page``: use URL mode whenever the client declares it.

    Attributes:
        asks_legacy: True once a handshake-era client declaring elicitation is being asked.
    """

    def __init__(self, ctx: ServerContext, *, page_preferred: bool = False) -> None:
        self.ctx = ctx
        self.page_preferred = page_preferred
        self._questions: dict[str, _Question] = {}  # by approval id
        self._opened: set[str] = set()  # states of URL-mode questions the person accepted: not asked again
        self._tg: anyio.abc.TaskGroup | None = None
        self._page: ApprovalPage | None = None
        self._page_lock = anyio.Lock()
        self.asks_legacy = False

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[dict[str, Any], None]:
        """Hold the connection's background work (the page, the legacy watcher); leaving cancels it.

        A nested entry (the gateway enters the server's lifespan once per HTTP manager) shares
        the outer one's work.

        Yields:
            An empty dict: the SDK server's lifespan state.
        """
        if self._tg is not None:
            yield {}
            return
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield {}
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    # -- the Tasks extension's input broker (2026-07-28) ------------------------------------

    async def input_requests(
        self, job_id: str, client_capabilities: types.ClientCapabilities | None
    ) -> dict[str, dict[str, Any]]:
        """The outstanding input requests of a job waiting for approvals; {} when none (SRV-29).

        Returns:
            ``{state: {"method": "elicitation/create", "params": {...}}}``, one per pending
            approval of the job, keyed by its engine-signed state; {} when the client declares
            no elicitation or the job waits for nothing.
        """
        mode = ask_mode(client_capabilities, page_preferred=self.page_preferred)
        if mode is None or self.ctx.owner is None:
            return {}
        approvals = [a for a in await self.ctx.api.approvals(Empty(), self.ctx.caller()) if a.task_id == job_id]
        self._retire_job(job_id, keep={a.id for a in approvals})
        requests: dict[str, dict[str, Any]] = {}
        for approval in approvals:
            question = await self._question(approval.id, mode)
            if question is not None:
                requests[question.asked.state] = {"method": "elicitation/create", "params": question.params}
        return requests

    async def input_responses(self, job_id: str, responses: dict[str, Any]) -> None:
        """Apply the client's answers to a job's input requests, all or none (SRV-29).

        Every key is verified by the engine (signed by it, unexpired, this connection's, unused,
        for a pending approval of this job) and must be one this broker issued and still
        holds; every answer is decoded before the first is applied. An empty map changes nothing.

        Raises:
            MCPError: ``INVALID_PARAMS`` naming why the first refused key was refused; nothing changed.
        """
        caller = self.ctx.caller()
        plans: list[tuple[str, str | None]] = []
        for key, value in responses.items():
            question = self._by_state(key)
            mode = question.mode if question is not None else AskMode.FORM
            try:
                decision = decision_of(value, mode)
            except ValueError as exc:
                raise MCPError(types.INVALID_PARAMS, f"inputResponses: {exc}; nothing was decided") from None
            check = ApprovalAnswer(key, decision or "deny", job_id, check_only=True)
            try:
                await self.ctx.api.approval_answer(check, caller)
            except ShadowcodeError as exc:
                raise MCPError(types.INVALID_PARAMS, f"inputResponses: {exc.message}") from None
            if question is None or question.asked.task_id != job_id:
                raise MCPError(
                    types.INVALID_PARAMS, f"inputResponses: no outstanding input request of task {job_id} has this key"
                )
            plans.append((key, decision))
        for key, decision in plans:
            if decision is None:
                continue  # URL mode: the person opened the page and decides there
            answer = ApprovalAnswer(key, cast(Decision, decision), job_id)
            try:
                record = await self.ctx.api.approval_answer(answer, caller)
            except ShadowcodeError as exc:  # decided another way in between
                raise MCPError(types.INVALID_PARAMS, f"inputResponses: {exc.message}") from None
            self._retire(record.id)

    async def call_input(
        self, params: types.CallToolRequestParams, capabilities: types.ClientCapabilities | None, *, tasks: bool
    ) -> dict[str, Any] | None:
        """Ask within one 2026-07-28 ``shadow_jobs get`` call: an ``input_required`` result, or None (SRV-29).

        A client that declared elicitation but not the Tasks extension follows a job with
        ``shadow_jobs``; while the job waits for an approval, its ``get`` answers
        ``{"resultType": "input_required", "inputRequests": {approval_id: elicitation},
        "requestState": state}``, one approval at a time, the state being the engine's. The
        client asks, then repeats the call with ``inputResponses`` and that ``requestState``:
        the answer is verified and applied exactly as one from ``tasks/update``, and the call is
        answered as usual. A URL-mode question the person accepted (the page is open) is not
        asked again.

        Returns:
            The ``input_required`` result to answer with; None to answer the call as usual.

        Raises:
            MCPError: ``INVALID_PARAMS`` for a repeated call whose state or answer is refused;
                nothing changed.
        """
        arguments = params.arguments or {}
        job_id = arguments.get("job_id")
        if tasks or arguments.get("action") != "get" or not isinstance(job_id, str):
            return None
        if params.request_state is not None:
            question = self._by_state(params.request_state)
            responses: dict[str, Any] = dict(params.input_responses or {})
            if question is not None:
                key = question.asked.approval_id
            else:  # a state this connection no longer holds: the engine says why (used, altered, expired)
                key = next(iter(responses), "")
            if key not in responses:
                raise MCPError(types.INVALID_PARAMS, "inputResponses holds no answer to the approval asked")
            answer: Any = responses[key]
            if hasattr(answer, "model_dump"):  # the SDK has parsed it into a result model
                answer = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            await self.input_responses(job_id, {params.request_state: answer})
            if question is not None and question.mode is AskMode.URL:
                self._opened.add(params.request_state)
            return None
        requests = await self.input_requests(job_id, capabilities)
        for state, request in requests.items():
            question = self._by_state(state)
            if question is not None and state not in self._opened:
                return {
                    "resultType": "input_required",
                    "inputRequests": {question.asked.approval_id: request},
                    "requestState": state,
                }
        return None

    async def job_changed(self, job_id: str, status: str) -> None:
        """Forget the questions of a job that no longer waits (its approvals were decided or expired); never raises."""
        if status not in _WAITING:
            self._retire_job(job_id, keep=set())

    # -- handshake revisions: elicitation/create to the owning client -------------------------

    def attach_legacy(self, session: Any) -> bool:
        """Start asking the client of a handshake-era stdio session in the host, when it declares elicitation.

        Args:
            session: the SDK ``ServerSession`` of the client's ``notifications/initialized``.

        Returns:
            True when the connection will ask; False when the client declares no elicitation,
            the connection is the HTTP gateway, or it already asks.
        """
        mode = ask_mode(session.client_capabilities, page_preferred=self.page_preferred)
        if mode is None or self.ctx.owner_kind == "gateway" or self._tg is None or self.asks_legacy:
            return False
        self.asks_legacy = True
        self._tg.start_soon(self._watch, session, mode)
        return True

    async def _watch(self, session: Any, mode: AskMode) -> None:
        """Ask each new pending approval of the owner's jobs; withdraw questions decided elsewhere."""
        asking: dict[str, anyio.CancelScope] = {}
        async with anyio.create_task_group() as tg:
            while True:
                await anyio.sleep(APPROVAL_ASK_POLL_SECONDS)
                if self.ctx.owner is None:
                    continue
                try:
                    pending = {a.id for a in await self.ctx.api.approvals(Empty(), self.ctx.caller())}
                except ShadowcodeError:
                    logger.exception("listing the connection's approvals failed")
                    continue
                for approval_id, scope in list(asking.items()):
                    if approval_id not in pending:
                        scope.cancel()
                        del asking[approval_id]
                        self._retire(approval_id)
                for approval_id in pending - asking.keys():
                    asking[approval_id] = anyio.CancelScope()
                    tg.start_soon(self._ask, session, mode, approval_id, asking[approval_id])

    async def _ask(self, session: Any, mode: AskMode, approval_id: str, scope: anyio.CancelScope) -> None:
        """Ask one approval until it is answered or decided elsewhere (the scope is cancelled then)."""
        with scope:
            while True:
                question = await self._question(approval_id, mode)
                if question is None:
                    return
                decision: str | None = None
                with anyio.move_on_after(max(question.asked.expires_at - self._now(), 0)) as round_scope:
                    try:
                        decision = await self._one_round(session, question)
                    except _NotAnswered:
                        return
                if not round_scope.cancelled_caught:
                    if decision is not None:
                        await self._apply(question, decision)
                    return
                self._retire(approval_id)  # expired unanswered: ask again with a new state

    async def _one_round(self, session: Any, question: _Question) -> str | None:
        """Send the elicitation and wait for its decision; None when nothing is to be applied here.

        Raises:
            _NotAnswered: the client answered with an error.
        """
        params = question.params
        try:
            if question.mode is AskMode.FORM:
                result = await session.elicit_form(params["message"], params["requestedSchema"])
            else:
                result = await session.elicit_url(params["message"], params["url"], params["elicitationId"])
        except MCPError as exc:
            sys.stderr.write(
                f"shadowcode: the client answered the question about approval {question.asked.approval_id} with "
                f"an error ({exc.error.code}); it stays pending for `shadowcode approve`\n"
            )
            raise _NotAnswered from None
        try:
            decision = decision_of(result.model_dump(by_alias=True, mode="json", exclude_none=True), question.mode)
        except ValueError:
            decision = "deny"  # an answer that cannot be decoded counts as a denial
        if decision is None and question.link is not None:  # URL mode: the person decides on the page
            await question.link.decided.wait()
            await session.send_elicit_complete(params["elicitationId"])
        return decision

    async def _apply(self, question: _Question, decision: str) -> None:
        asked = question.asked
        answer = ApprovalAnswer(asked.state, cast(Decision, decision), asked.task_id)
        try:
            await self.ctx.api.approval_answer(answer, self.ctx.caller())
        except ShadowcodeError as exc:
            sys.stderr.write(
                f"shadowcode: the host's answer to approval {asked.approval_id} was refused: {exc.message}\n"
            )
        self._retire(asked.approval_id)

    # -- questions ----------------------------------------------------------------------

    async def _question(self, approval_id: str, mode: AskMode) -> _Question | None:
        """The current question of an approval, asked of the engine anew when its state is near expiry.

        Returns:
            None when the approval is no longer pending (the engine refused to ask).
        """
        current = self._questions.get(approval_id)
        fresh = current is not None and current.asked.expires_at - self._now() > _RENEW_MARGIN_SECONDS
        if current is not None and fresh and current.mode is mode:
            return current
        self._retire(approval_id)
        try:
            asked = await self.ctx.api.approval_ask(ApprovalAsk(approval_id), self.ctx.caller())
        except ShadowcodeError:
            return None
        if mode is AskMode.FORM:
            question = _Question(asked, mode, form_params(asked))
        else:
            page = await self._ensure_page()
            elicitation_id = f"{asked.approval_id}-{secrets.token_hex(4)}"
            url, link = page.open(asked, elicitation_id)
            question = _Question(asked, mode, url_params(asked, url, elicitation_id), link)
        self._questions[approval_id] = question
        return question

    def _by_state(self, state: str) -> _Question | None:
        return next((q for q in self._questions.values() if q.asked.state == state), None)

    def _retire(self, approval_id: str) -> None:
        self._questions.pop(approval_id, None)
        if self._page is not None:
            self._page.forget(approval_id)

    def _retire_job(self, job_id: str, *, keep: set[str]) -> None:
        for approval_id, question in list(self._questions.items()):
            if question.asked.task_id == job_id and approval_id not in keep:
                self._retire(approval_id)

    def _now(self) -> int:
        return int(time.time())

    # -- the approval page (URL mode) ---------------------------------------------------

    async def _ensure_page(self) -> ApprovalPage:
        async with self._page_lock:
            if self._page is None:
                if self._tg is None:
                    raise MCPError(types.INTERNAL_ERROR, "the approval page is not available: the server is closing")
                page = ApprovalPage(self._judge)
                await self._tg.start(page.serve)
                self._page = page
            return self._page

    async def _judge(self, link: PageLink, decision: str, check_only: bool) -> None:
        asked = link.asked
        answer = ApprovalAnswer(asked.state, cast(Decision, decision), asked.task_id, via="page", check_only=check_only)
        record = await self.ctx.api.approval_answer(answer, self.ctx.caller())
        if not check_only:
            self._questions.pop(record.id, None)
