"""The model request log: one JSON line per request a provider makes (ENG-05).

Each line is an object::

    {"at": 1767225600.25, "task_id": "...", "model": "<configured name>",
     "messages_count": 3, "last_message": {"role": "tool", "content": "..."}}

``at`` is Unix seconds (float). ``last_message`` is the conversation's last message with
every string longer than ``MODEL_LOG_TEXT_MAX_CHARS`` cut to that length and marked, or
None for an empty conversation. The line is written with one ``write`` on a descriptor
opened with ``O_APPEND``, so lines from concurrent writers never interleave. The file is
``ModelSettings.request_log`` when set, else ``model-requests.jsonl`` in the profile. Keys
and headers are never part of a line.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from shadowcode.agent.providers._paths import profile_relative
from shadowcode.agent.providers.base import ProviderError
from shadowcode.limits import MODEL_LOG_TEXT_MAX_CHARS
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings

__all__ = ["DEFAULT_LOG_NAME", "RequestLog", "shorten"]

DEFAULT_LOG_NAME = "model-requests.jsonl"
"""File name of the request log inside the profile when the model entry names none."""

_MAX_DEPTH = 8


def shorten(value: Any, *, max_chars: int = MODEL_LOG_TEXT_MAX_CHARS, _depth: int = 0) -> Any:
    """A copy of a JSON value with every string longer than ``max_chars`` cut (ENG-05).

    A cut string keeps its first ``max_chars`` characters followed by ``…[+N chars]``;
    containers nested deeper than a few levels become ``"…"``.
    """
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return f"{value[:max_chars]}…[+{len(value) - max_chars} chars]"
    if _depth >= _MAX_DEPTH and isinstance(value, dict | list | tuple):
        return "…"
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return {str(k): shorten(v, max_chars=max_chars, _depth=_depth + 1) for k, v in items}
    if isinstance(value, list | tuple):
        values = cast("list[object] | tuple[object, ...]", value)
        return [shorten(v, max_chars=max_chars, _depth=_depth + 1) for v in values]
    if value is None or isinstance(value, bool | int | float):
        return value
    return shorten(repr(value), max_chars=max_chars, _depth=_depth)


@dataclass(frozen=True)
class RequestLog:
    """Appends request lines to ``path`` (created with mode 0600 when missing)."""

    path: Path

    @classmethod
    def for_model(cls, settings: ModelSettings, profile: Profile) -> RequestLog:
        """The log for one model entry: ``settings.request_log`` (relative to the profile
        root when relative) or ``<profile.root>/model-requests.jsonl``."""
        if settings.request_log:
            return cls(profile_relative(settings.request_log, profile))
        return cls(profile.root / DEFAULT_LOG_NAME)

    def append(self, *, task_id: str, model: str, messages: list[dict[str, Any]]) -> None:
        """Write one line for a request about to be made (ENG-05).

        Raises:
            ProviderError: the line could not be written; the request is not made, since
                an unlogged request would break the count a probe relies on.
        """
        last = shorten(messages[-1]) if messages else None
        record = {
            "at": time.time(),
            "task_id": task_id,
            "model": model,
            "messages_count": len(messages),
            "last_message": last,
        }
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                written = os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise ProviderError(
                f"cannot write the model request log {self.path.name}: {exc.strerror}", model=model, task_id=task_id
            ) from exc
        if written != len(line):
            raise ProviderError(f"short write to the model request log {self.path.name}", model=model, task_id=task_id)
