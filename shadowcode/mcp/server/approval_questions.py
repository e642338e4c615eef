"""One pending approval as the question a host shows a person, and its answer as a decision (SRV-29, SRV-30).

The question is an ``elicitation/create`` request's params: in form mode a message naming the
exact argv, the folder, the job and the files it changed so far, with one boolean field
``approve`` (default true); in URL mode the same message and the loopback approval page's
address. Everything in the message that a project, a model or a server wrote (argv, folder,
prompt, file names) is data, made inert by :func:`shadowcode.inert_text.inert`: control,
format (bidirectional overrides, zero widths) and separator characters are shown as escapes,
never passed through.

The answer, an ``ElicitResult``, decides (:func:`decision_of`):

- form mode: ``accept`` approves unless its content says ``"approve": false`` (then it
  denies); ``decline`` and ``cancel`` deny;
- URL mode: ``accept`` only says the person opened the page, where they decide; ``decline``
  and ``cancel`` deny.

An answer in any other shape raises :class:`ValueError`: over ``tasks/update`` it is refused
and changes nothing; to a legacy ``elicitation/create`` it counts as a denial.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

from shadowcode.engine.api import ApprovalAsked
from shadowcode.inert_text import cut, inert
from shadowcode.json_values import json_object

__all__ = ["AskMode", "decision_of", "form_params", "question_text", "url_params"]

_PROMPT_SHOWN_CHARS = 300
_FILES_SHOWN = 20

Decision = Literal["approve", "deny"]


class AskMode(enum.Enum):
    """How an approval is asked: a form in the host, or a link to the loopback approval page."""

    FORM = "form"
    URL = "url"


def _quoted(values: list[str]) -> str:
    return inert(json.dumps(values, ensure_ascii=False))


def question_text(asked: ApprovalAsked) -> str:
    """The message a person reads: the exact action, the folder, the job, the files it changed so far.

    Returns:
        Several lines of plain text; every value from the job is made inert.
    """
    action = asked.action
    prompt = cut(" ".join(asked.prompt.split()), _PROMPT_SHOWN_CHARS)
    if isinstance(action.get("argv"), list):
        what = f"run this exact command:\n  argv: {_quoted([str(a) for a in action['argv']])}"
        where = f"  in folder: {inert(str(action.get('cwd')))}"
    else:
        what = f"do this exact action ({inert(asked.kind)}):\n  {inert(json.dumps(action, ensure_ascii=False))}"
        where = f"  project: {inert(asked.project)}"
    files = asked.changed_files
    shown = ", ".join(inert(f) for f in files[:_FILES_SHOWN]) or "none"
    if len(files) > _FILES_SHOWN:
        shown += f" and {len(files) - _FILES_SHOWN} more"
    return (
        f"ShadowCode job {asked.task_id} asks to {what}\n{where}\n"
        f"  job: {inert(prompt)}\n"
        f"  files the job changed so far: {shown}\n"
        f"Approval {asked.approval_id}. Accept allows exactly this, once; decline or cancel denies it. "
        f"`shadowcode approve {asked.approval_id}` (or deny) at a terminal answers it too; the first answer counts."
    )


def form_params(asked: ApprovalAsked) -> dict[str, Any]:
    """``elicitation/create`` params asking in a form: the message and one boolean field ``approve``."""
    return {
        "mode": "form",
        "message": question_text(asked),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "Allow exactly this action once (false, decline or cancel denies it).",
                    "default": True,
                }
            },
            "required": ["approve"],
        },
    }


def url_params(asked: ApprovalAsked, url: str, elicitation_id: str) -> dict[str, Any]:
    """``elicitation/create`` params pointing at the approval page, where the person decides."""
    return {
        "mode": "url",
        "message": question_text(asked) + "\nOpen the approval page to approve or deny.",
        "url": url,
        "elicitationId": elicitation_id,
    }


def decision_of(result: Any, mode: AskMode) -> Decision | None:
    """What an ``ElicitResult`` (as JSON) decides; None for a URL-mode accept (the page decides).

    Raises:
        ValueError: not an ``ElicitResult`` this question can take: naming what is wrong.
    """
    answer = json_object(result)
    if answer is None:
        raise ValueError("an elicitation answer is an object with an action")
    action = answer.get("action")
    if action in ("decline", "cancel"):
        return "deny"
    if action != "accept":
        raise ValueError("an elicitation answer's action is accept, decline or cancel")
    if mode is AskMode.URL:
        return None
    content = json_object(answer.get("content"))
    if answer.get("content") is None:
        return "approve"
    if content is None:
        raise ValueError("an accepted answer's content is an object")
    approve = content.get("approve", True)
    if not isinstance(approve, bool):
        raise ValueError("the field approve is true or false")
    return "approve" if approve else "deny"
