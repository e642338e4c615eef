"""A pending approval as a host's question and its answer as a decision (mcp/server/approval_questions.py).

Covers SRV-29, SRV-30.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from shadowcode.engine.api import ApprovalAsked
from shadowcode.mcp.server.approval_questions import AskMode, decision_of, form_params, url_params
from shadowcode.mcp.server.host_approvals import ask_mode

pytestmark = pytest.mark.req("SRV-29")


def asked(**changes: Any) -> ApprovalAsked:
    base: dict[str, Any] = {
        "approval_id": "appr_1",
        "task_id": "task_1",
        "kind": "command",
        "action": {"argv": ["make", "test"], "cwd": "/p"},
        "prompt": "run the tests",
        "project": "/p",
        "changed_files": ["a.py"],
        "state": "STATE",
        "expires_at": 0,
    }
    return ApprovalAsked(**(base | changes))


def test_the_form_names_the_exact_argv_folder_job_and_changed_files_and_is_a_valid_form_request() -> None:
    params = form_params(asked())
    types.ElicitRequestFormParams.model_validate(params)
    message = params["message"]
    assert '["make", "test"]' in message and "in folder: /p" in message
    assert "task_1" in message and "run the tests" in message and "a.py" in message
    assert "shadowcode approve appr_1" in message and "STATE" not in message
    assert params["requestedSchema"]["properties"]["approve"]["type"] == "boolean"


def test_the_url_question_is_a_valid_url_request_with_the_same_message() -> None:
    params = url_params(asked(), "http://127.0.0.1:1/approval/T", "appr_1-x")
    types.ElicitRequestURLParams.model_validate(params)
    assert params["message"].startswith(form_params(asked())["message"])


def test_control_and_bidirectional_characters_from_the_job_are_shown_inert() -> None:
    hostile = asked(
        action={"argv": ["echo", "ok\x1b[2J\u202erm -rf"], "cwd": "/p\nfake line"},
        prompt="hi\x07\u2066there",
        changed_files=["x\x00y"],
    )
    message = form_params(hostile)["message"]
    for raw in ("\x1b", "\u202e", "\x07", "\u2066", "\x00", "/p\nfake"):
        assert raw not in message
    assert "\\u001b" in message and "\\u202e" in message and "/p\\x0afake line" in message
    assert "hi\\x07\\u2066there" in message and "x\\x00y" in message
    assert "plain ascii é ✓" in form_params(asked(prompt="plain ascii é ✓"))["message"]


@pytest.mark.parametrize(
    ("result", "decision"),
    [
        ({"action": "accept", "content": {"approve": True}}, "approve"),
        ({"action": "accept"}, "approve"),
        ({"action": "accept", "content": {}}, "approve"),
        ({"action": "accept", "content": {"approve": False}}, "deny"),
        ({"action": "decline"}, "deny"),
        ({"action": "cancel"}, "deny"),
    ],
)
def test_form_answers_decide(result: dict[str, Any], decision: str) -> None:
    assert decision_of(result, AskMode.FORM) == decision


@pytest.mark.parametrize(
    "result",
    [
        "accept",
        {"action": "approve"},
        {},
        {"action": "accept", "content": {"approve": "yes"}},
        {"action": "accept", "content": ["approve"]},
    ],
)
def test_an_answer_of_another_shape_is_refused(result: Any) -> None:
    with pytest.raises(ValueError):
        decision_of(result, AskMode.FORM)


def test_a_url_accept_decides_nothing_and_decline_denies() -> None:
    assert decision_of({"action": "accept"}, AskMode.URL) is None
    assert decision_of({"action": "decline"}, AskMode.URL) == "deny"
    assert decision_of({"action": "cancel"}, AskMode.URL) == "deny"


@pytest.mark.req("SRV-30")
def test_the_mode_follows_the_clients_declared_elicitation_and_the_page_flag() -> None:
    def caps(**elicitation: Any) -> types.ClientCapabilities:
        return types.ClientCapabilities.model_validate({"elicitation": elicitation})

    assert ask_mode(None, page_preferred=True) is None
    assert ask_mode(types.ClientCapabilities(), page_preferred=True) is None
    assert ask_mode(caps(), page_preferred=True) is AskMode.FORM  # {} is form mode
    assert ask_mode(caps(form={}), page_preferred=True) is AskMode.FORM
    assert ask_mode(caps(url={}), page_preferred=False) is AskMode.URL
    assert ask_mode(caps(form={}, url={}), page_preferred=False) is AskMode.FORM
    assert ask_mode(caps(form={}, url={}), page_preferred=True) is AskMode.URL
