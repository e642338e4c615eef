"""The verbs of the engine API's models part, as :class:`ModelVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.models`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.models`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

if TYPE_CHECKING:
    from shadowcode.engine.api.models import ModelAdd, ModelList

__all__ = ["ModelVerbs"]


class ModelVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("model/list")
    async def model_list(self, request: Empty, caller: Caller = NOBODY) -> ModelList:
        """The configured models and the default one (ENG-05)."""
        ...

    @verb("model/add")
    async def model_add(self, request: ModelAdd, caller: Caller = NOBODY) -> ModelList:
        """Add or replace a model in the profile's settings (ENG-05).

        Raises:
            ConfigError: the model's settings are incomplete for its provider.
        """
        ...
