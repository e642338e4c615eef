"""Where a path from a model entry points: ``~`` expanded, relative paths under the profile root."""

from __future__ import annotations

from pathlib import Path

from shadowcode.profile import Profile

__all__ = ["profile_relative"]


def profile_relative(value: str, profile: Profile) -> Path:
    """``value`` with ``~`` expanded; a relative path is taken from ``profile.root``."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else profile.root / path
