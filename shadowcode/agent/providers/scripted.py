"""The ``scripted`` provider: deterministic replay of a model script (ENG-05).

The script (format in :mod:`shadowcode.agent.providers.script`) is read and validated
when the provider opens. Each task, told apart by ``task_id``, is bound on its first
request to the first entry matching its first user message and then receives that
entry's turns in order, one per request; past the last turn a request fails. Every
request, including a failing one, is appended to the request log first. A turn's
``delay_seconds`` is awaited, so cancelling the caller ends the wait at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from shadowcode.agent.providers._paths import profile_relative
from shadowcode.agent.providers.base import ModelReply, ProviderError
from shadowcode.agent.providers.request_log import RequestLog
from shadowcode.agent.providers.script import ModelScript, ScriptEntry, first_user_text, load_script
from shadowcode.errors import ConfigError
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings

__all__ = ["ScriptedProvider"]


@dataclass
class _TaskState:
    entry: ScriptEntry
    next_turn: int = 0
    calls_made: int = 0


class ScriptedProvider:
    """Replays ``script`` per task; implements ``ModelProvider``.

    Attributes:
        name: the configured model name.
        script: the validated script.
        log: where requests are recorded.
    """

    def __init__(self, name: str, script: ModelScript, log: RequestLog) -> None:
        self.name = name
        self.script = script
        self.log = log
        self._tasks: dict[str, _TaskState] = {}

    @classmethod
    def open(cls, settings: ModelSettings, profile: Profile) -> ScriptedProvider:
        """Load ``settings.script`` (relative paths are taken from the profile root).

        Raises:
            ConfigError: no script is configured, or it cannot be read or validated.
        """
        if not settings.script:
            raise ConfigError(
                f"model {settings.name!r} uses the scripted provider but names no script", model=settings.name
            )
        script = load_script(profile_relative(settings.script, profile))
        return cls(settings.name, script, RequestLog.for_model(settings, profile))

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, task_id: str
    ) -> ModelReply:
        """The task's next scripted turn.

        Args:
            messages: the conversation (OpenAI chat shape); its first user message picks the entry.
            tools: the advertised tools (not used by replay).
            task_id: the task asking.

        Raises:
            ProviderError: no entry matches, the entry has no more turns, the turn is an
                ``error`` turn, or the request log cannot be written.
        """
        self.log.append(task_id=task_id, model=self.name, messages=messages)
        state = self._tasks.get(task_id)
        if state is None:
            entry = self.script.select(first_user_text(messages))
            if entry is None:
                raise ProviderError(
                    f"model {self.name!r}: no script entry matches the task's first user message",
                    model=self.name,
                    task_id=task_id,
                )
            state = self._tasks[task_id] = _TaskState(entry)
        if state.next_turn >= len(state.entry.turns):
            raise ProviderError(
                f"model {self.name!r}: script has no more turns for this task (all {len(state.entry.turns)} used)",
                model=self.name,
                task_id=task_id,
            )
        turn = state.entry.turns[state.next_turn]
        state.next_turn += 1
        if turn.delay_seconds > 0:
            await anyio.sleep(turn.delay_seconds)
        if turn.error is not None:
            raise ProviderError(f"model {self.name!r}: {turn.error}", model=self.name, task_id=task_id)
        reply = turn.reply(state.calls_made + 1)
        state.calls_made += len(reply.tool_calls)
        return reply

    async def aclose(self) -> None:
        """Forget every task's position; nothing else is held."""
        self._tasks.clear()
