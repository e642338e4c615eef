"""The model script format shared by the ``scripted`` provider and the test server (ENG-05).

A script is a YAML or JSON file (``.json`` is read as JSON, anything else as YAML)::

    tasks:
      - match: "regex searched in the task's first user message"
        turns:
          - content: "I'll read the file"
            tool_calls: [{name: read_file, arguments: {path: README.md}}]
            delay_seconds: 0.5     # optional: answer only after this long
          - content: "Done."

The first entry whose ``match`` is found (``re.search``) in the first user message serves
the conversation; its turns are answered in order, one per request. A tool call may give
an ``id`` (else ``call_<n>`` is used, n counting the conversation's calls from 1) and its
``arguments`` as an object or as raw text (to replay arguments that are not valid JSON).
A turn with ``error`` makes the request fail with that message. Unknown fields are refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shadowcode.agent.providers.base import ModelReply
from shadowcode.agent.providers.tool_calls import make_tool_call
from shadowcode.errors import ConfigError
from shadowcode.json_values import json_array, json_object
from shadowcode.limits import MODEL_SCRIPT_DELAY_MAX_SECONDS, MODEL_SCRIPT_MAX_BYTES

__all__ = ["ModelScript", "ScriptEntry", "ScriptToolCall", "ScriptTurn", "first_user_text", "load_script"]

_ERRORS_SHOWN = 3
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ScriptToolCall(BaseModel):
    """One tool call in a scripted turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    """The call id to report; None: ``call_<n>``."""
    name: str = Field(min_length=1)
    """The tool to call."""
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    """An object, or raw text passed through unparsed."""


class ScriptTurn(BaseModel):
    """One scripted model answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str | None = None
    """The assistant's text."""
    tool_calls: tuple[ScriptToolCall, ...] = ()
    """Tool calls, in order."""
    delay_seconds: float = Field(default=0.0, ge=0.0, le=MODEL_SCRIPT_DELAY_MAX_SECONDS)
    """Seconds to wait before answering, to play a busy model (at most MODEL_SCRIPT_DELAY_MAX_SECONDS)."""
    finish_reason: str | None = None
    """Reported finish reason; None: ``tool_calls`` when there are calls, else ``stop``."""
    error: str | None = None
    """When set, the request fails with this message instead of answering."""

    def reply(self, first_call_number: int) -> ModelReply:
        """The turn as a :class:`ModelReply`; calls without an id are numbered from ``first_call_number``."""
        calls = tuple(
            make_tool_call(call.id or f"call_{first_call_number + i}", call.name, call.arguments)
            for i, call in enumerate(self.tool_calls)
        )
        reason = self.finish_reason or ("tool_calls" if calls else "stop")
        return ModelReply(content=self.content, tool_calls=calls, finish_reason=reason)


class ScriptEntry(BaseModel):
    """The turns answering conversations whose first user message matches ``match``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str
    """A regular expression searched in the first user message."""
    turns: tuple[ScriptTurn, ...] = ()
    """Answers in order."""

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    def matches(self, text: str) -> bool:
        """Whether ``match`` is found in ``text``."""
        return re.search(self.match, text) is not None


class ModelScript(BaseModel):
    """A whole model script."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: tuple[ScriptEntry, ...]
    """Entries, tried in order."""

    def select(self, text: str) -> ScriptEntry | None:
        """The first entry matching ``text``, or None."""
        return next((entry for entry in self.tasks if entry.matches(text)), None)


def first_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the first ``user`` message ("" when there is none).

    A content given as a list of parts is read as the concatenation of its text parts.
    """
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if (parts := json_array(content)) is not None:
            return "".join(
                str(part.get("text", "")) for part in map(json_object, parts) if part and part.get("type") == "text"
            )
        return ""
    return ""


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def load_script(path: Path, *, max_bytes: int = MODEL_SCRIPT_MAX_BYTES) -> ModelScript:
    """Read and validate the model script at ``path`` (ENG-05).

    Args:
        path: the script file.
        max_bytes: the most bytes the file may hold (MODEL_SCRIPT_MAX_BYTES).

    Returns:
        The validated script.

    Raises:
        ConfigError: the file is missing, unreadable, larger than ``max_bytes``, not UTF-8,
            not valid YAML/JSON, or does not match the format; the message names the file
            and, for a format error, the field (``tasks[0].turns[1].delay_seconds``).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"model script {path}: cannot be read: {exc.strerror}", path=str(path)) from exc
    if len(data) > max_bytes:
        raise ConfigError(f"model script {path}: larger than {max_bytes} bytes", path=str(path))
    try:
        text = data.decode("utf-8")
        raw = json.loads(text) if path.suffix.lower() == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"model script {path}: not UTF-8 text", path=str(path)) from exc
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise ConfigError(f"model script {path}: not valid {kind}", path=str(path)) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"model script {path}: must be a mapping with a 'tasks' list", path=str(path))
    try:
        return ModelScript.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{_location(err['loc'])}: {err['msg']}" for err in exc.errors()[:_ERRORS_SHOWN]]
        more = len(exc.errors()) - len(problems)
        tail = f" (and {more} more)" if more > 0 else ""
        raise ConfigError(f"model script {path}: " + "; ".join(problems) + tail, path=str(path)) from exc
