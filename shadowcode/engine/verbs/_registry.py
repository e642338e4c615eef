"""The table of in-process verb handlers: one handler per verb of the engine API (ENG-03)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from shadowcode.engine.api import Caller
from shadowcode.engine.state import EngineState

__all__ = ["HANDLERS", "Handler", "handles"]

Handler = Callable[[EngineState, Any, Caller], Awaitable[Any]]
H = TypeVar("H", bound=Handler)

HANDLERS: dict[str, Handler] = {}
"""Handlers by verb method name (``memory_read``), filled as the handler modules are imported."""


def handles(declared: Callable[..., Awaitable[Any]]) -> Callable[[H], H]:
    """Register the decorated function as the in-process implementation of the verb ``declared``.

    Args:
        declared: the verb as declared on :class:`~shadowcode.engine.api.EngineApi`
            (``EngineApi.memory_read``).

    Raises:
        ValueError: the verb already has a handler.
    """
    name = declared.__name__

    def register(handler: H) -> H:
        if name in HANDLERS:
            raise ValueError(f"the verb {name} already has a handler")
        HANDLERS[name] = handler
        return handler

    return register
