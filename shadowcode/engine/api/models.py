"""The engine API: the model providers configured in the profile.

Covers ENG-05.

The request and result types of this part. Its verbs are declared in
:mod:`shadowcode.engine.api.declared.models` and handled in process in :mod:`shadowcode.engine.verbs.models`.
A model's settings are the profile's own pydantic model (:class:`~shadowcode.settings.ModelSettings`),
so this part is apart from :mod:`.projects`: the status overview needs no pydantic (issue 32).
"""

from __future__ import annotations

from dataclasses import dataclass

from shadowcode.settings import ModelSettings

__all__ = ["ModelAdd", "ModelList"]


@dataclass(frozen=True, slots=True)
class ModelList:
    """The profile's configured models and its default (ENG-05)."""

    models: list[ModelSettings]
    default: str | None


@dataclass(frozen=True, slots=True)
class ModelAdd:
    """Add or replace a model in the profile's settings; ``make_default`` also makes it the default (ENG-05)."""

    model: ModelSettings
    make_default: bool = False
