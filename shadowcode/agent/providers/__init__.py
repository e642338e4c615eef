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

from typing import TYPE_CHECKING

from shadowcode.agent.providers.base import ModelProvider, ModelReply, ProviderError, ToolCall

if TYPE_CHECKING:
    from shadowcode.profile import Profile
    from shadowcode.settings import ModelSettings

__all__ = ["ModelProvider", "ModelReply", "ProviderError", "ToolCall", "open_provider"]


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
