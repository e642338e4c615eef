"""The shapes every model provider shares: a tool call, a model turn, the provider protocol, its error (ENG-05).

They live apart from :mod:`shadowcode.agent.providers` so the providers import them without
importing the package that opens them (no import cycle); the package re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from shadowcode.errors import ShadowcodeError

__all__ = ["ModelProvider", "ModelReply", "ProviderError", "ToolCall"]


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
