"""Text others wrote, as the CLI shows it: inert, one line per value, bounded.

Covers CW-04, ENG-07, ENG-08.
"""

from __future__ import annotations

import unicodedata
from types import SimpleNamespace
from typing import Any

import pytest

from shadowcode.cli.render import action_text, event_line, job_line, terminal_text, visible, visible_lines
from shadowcode.limits import CLI_SHOWN_TEXT_MAX_CHARS

pytestmark = pytest.mark.req("CW-04")

ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[41m\rRED\u202eevil\x9b2J\napprove with: yes"
"""Clear screen, window title, colour, carriage return, bidi override, C1 CSI, a faked line."""


def _raw_controls(text: str, allowed: str = "") -> list[str]:
    """Characters a terminal would act on or hide, other than ``allowed``."""
    hidden = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
    return [c for c in text if c not in allowed and unicodedata.category(c) in hidden]


def test_visible_escapes_every_control_format_and_separator_character() -> None:
    shown = visible(ESCAPES)
    assert _raw_controls(shown) == []
    assert shown == ("\\x1b[2J\\x1b[H\\x1b]0;owned\\x07\\x1b[41m\\x0dRED\\u202eevil\\x9b2J\\x0aapprove with: yes")
    assert visible("tab\there\x7f\u2028\ufeff\U000e0001") == "tab\\x09here\\x7f\\u2028\\ufeff\\U000e0001"
    assert visible("Zürich — 東京 ✓") == "Zürich — 東京 ✓"


def test_a_string_of_the_limit_is_shown_whole_and_one_character_more_is_cut() -> None:
    at_limit = "x" * CLI_SHOWN_TEXT_MAX_CHARS
    assert visible(at_limit) == at_limit
    cut = visible(at_limit + "y")
    assert len(cut) == CLI_SHOWN_TEXT_MAX_CHARS and cut.endswith("x…")
    assert len(visible("\x1b" * CLI_SHOWN_TEXT_MAX_CHARS)) == CLI_SHOWN_TEXT_MAX_CHARS
    assert [len(line) for line in visible_lines("a" * 5000 + "\nb")] == [CLI_SHOWN_TEXT_MAX_CHARS, 1]


def test_blocks_keep_their_lines_and_tabs_and_nothing_else() -> None:
    assert visible_lines("one\r\ntwo\tcols\rover\n\x1b[31m") == ["one", "two\tcols\\x0dover", "\\x1b[31m"]
    assert terminal_text("a\nb\tc\x1b[2J\u202e") == "a\nb\tc\\x1b[2J\\u202e"


def _event(kind: str, **data: Any) -> Any:
    return SimpleNamespace(kind=kind, data=data)


@pytest.mark.req("CW-04", "ENG-08")
@pytest.mark.parametrize(
    ("kind", "data", "lines"),
    [
        ("model.request", {"model": ESCAPES, "step": 1}, 1),
        ("model.reply", {"content": ESCAPES, "tool_calls": [{}]}, 1),
        ("tool.call", {"name": "mcp__h__echo" + ESCAPES, "arguments": {"text": ESCAPES}}, 1),
        ("tool.result", {"name": ESCAPES, "ok": False, "summary": ESCAPES}, 1),
        ("approval.waiting", {"approval_id": "ap" + ESCAPES, "server": ESCAPES, "tool": ESCAPES, "cwd": ESCAPES}, 2),
        ("approval.resolved", {"approval_id": ESCAPES, "status": ESCAPES}, 1),
        ("command.result", {"argv": [ESCAPES], "exit_code": 0, "output": f"ok\n{ESCAPES}"}, 4),
        ("task.note", {"note": ESCAPES}, 1),
        ("task.done", {"answer": f"answer{ESCAPES}"}, 3),
        ("task.failed", {"error": ESCAPES}, 1),
        ("task.cancelled", {"reason": ESCAPES}, 1),
    ],
)
def test_every_event_line_shows_server_and_model_text_inert(kind: str, data: dict[str, Any], lines: int) -> None:
    line = event_line(_event(kind, **data))
    assert line is not None
    assert _raw_controls(line, allowed="\n") == []
    assert len(line.split("\n")) == lines
    assert "\\x1b[2J" in line or "\\\\u001b[2J" in line or "\\u001b[2J" in line


def test_approvals_and_job_lines_show_arguments_inert() -> None:
    command = SimpleNamespace(action={"argv": ["echo", ESCAPES], "cwd": "/p\n"})
    mcp = SimpleNamespace(action={"server": ESCAPES, "tool": "t\r", "arguments": {"a": "\u202e"}})
    for text in (action_text(command), action_text(mcp)):  # type: ignore[arg-type]
        assert _raw_controls(text) == [] and "\n" not in text
    job = SimpleNamespace(id="j1", status="done", mode="build", permission_level="workspace", prompt=ESCAPES)
    assert _raw_controls(job_line(job)) == []  # type: ignore[arg-type]
