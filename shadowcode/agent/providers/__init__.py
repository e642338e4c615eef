"""Model providers: what an agent task's turn loop asks for its next step (ENG-05).

A provider takes a conversation in the OpenAI chat-completions shape and returns one
:class:`ModelReply`. Two kinds exist:

- ``scripted``: replays a YAML or JSON model script deterministically
  (:mod:`shadowcode.agent.providers.scripted`);
- ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint over HTTP
  (:mod:`shadowcode.agent.providers.openai_compatible`).

Shapes, as the turn loop passes them:

- ``messages``: ``{"role": "system" | "user" | "assistant" | "tool", "content": str | None}``;
  assistant messages may carry ``tool_calls`` (``[{"id", "type": "function",
  "function": {"name", "arguments": str}}]``) and tool messages carry ``tool_call_id``.
- ``tools``: ``{"type": "function", "function": {"name", "description", "parameters"}}``.

Both providers append one JSON line per request to the request log (see
:mod:`shadowcode.agent.providers.request_log`) before answering, so a probe can count
how often the model was asked. Every failure of a provider to produce a reply is a
:class:`ProviderError`; a configuration that cannot be used is a ``ConfigError`` raised by
:func:`open_provider`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from shadowcode.errors import ShadowcodeError

if TYPE_CHECKING:
    from shadowcode.profile import ModelSettings, Profile

__all__ = ["ModelProvider", "ModelReply", "ProviderError", "ToolCall", "open_provider"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: the provider's call id, or ``call_<n>`` (n counting from 1 within a task) when
            the model or script gave none.
        name: the tool name, as advertised in ``tools``.
        arguments: the arguments as a JSON object, or None when they are not valid JSON or
            not an object.
        raw_arguments: the exact argument text received, for error messages.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@dataclass(frozen=True)
class ModelReply:
    """One model turn.

    Attributes:
        content: the assistant's text, or None.
        tool_calls: the tool calls asked for, in order; empty when the model is done.
        finish_reason: the provider's reason (``"stop"``, ``"tool_calls"``, ``"length"`` ...)
            or None when it gave none.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None


class ModelProvider(Protocol):
    """What the turn loop calls (ENG-05).

    Attributes:
        name: the configured model name (``ModelSettings.name``).
    """

    name: str

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, task_id: str
    ) -> ModelReply:
        """Ask the model for the next turn of task ``task_id``.

        Raises:
            ProviderError: no reply could be produced (HTTP error, timeout, bad answer,
                script exhausted).
        """
        ...

    async def aclose(self) -> None:
        """Release connections; the provider is not used afterwards."""
        ...


class ProviderError(ShadowcodeError):
    """A model provider could not produce a reply (ENG-05).

    The message is safe to show and store: it never holds an API key or a response body
    beyond a short, sanitized status line. ``fields`` carries ``model`` and ``task_id``.
    """


def open_provider(settings: ModelSettings, profile: Profile) -> ModelProvider:
    """Open the provider ``settings`` describes (ENG-05).

    The scripted provider keeps each task's position in its script in the returned object,
    so a task's turns must all be asked of the same provider object.

    Args:
        settings: the configured model entry.
        profile: the profile (request log location, secret store, base for relative paths).

    Returns:
        A provider whose ``name`` is ``settings.name``; close it with ``aclose()``.

    Raises:
        ConfigError: the entry cannot be used: unknown provider, script missing or invalid,
            ``base_url`` or ``model`` missing, API key named but not found.
    """
    from shadowcode.errors import ConfigError

    if settings.provider == "scripted":
        from shadowcode.agent.providers.scripted import ScriptedProvider

        return ScriptedProvider.open(settings, profile)
    if settings.provider == "openai":
        from shadowcode.agent.providers.openai_compatible import OpenAIProvider

        return OpenAIProvider(settings, profile)
    raise ConfigError(f"model {settings.name!r} names an unknown provider {settings.provider!r}", model=settings.name)
