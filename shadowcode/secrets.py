"""The profile's protected secret store (GW-01, CLI-04, ENG-05).

A JSON object of name to value in ``secrets.json`` (mode 0600, written atomically). Values
are read from stdin by ``shadowcode secret set NAME``, never from argv, and never printed.
:func:`resolve` looks a name up in the environment first, then in the store.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from shadowcode.errors import ConfigError, UsageError
from shadowcode.limits import SECRET_VALUE_MAX_BYTES
from shadowcode.profile import Profile

__all__ = ["SecretStore", "resolve", "valid_name"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def valid_name(name: str) -> bool:
    """True for an environment-variable-like name (letters, digits, underscore; 1..128)."""
    return bool(_NAME.fullmatch(name))


class SecretStore:
    """Reads and writes one profile's ``secrets.json``."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.path: Path = profile.secrets_path

    def _load(self) -> dict[str, str]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(
                f"the secret store of profile {self.profile.name!r} cannot be read: {exc.strerror}"
            ) from exc
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise ConfigError(f"the secret store of profile {self.profile.name!r} is not valid JSON") from exc
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            raise ConfigError(f"the secret store of profile {self.profile.name!r} is not an object of strings")
        return doc

    def _save(self, doc: dict[str, str]) -> None:
        self.profile.ensure()
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=2, sort_keys=True)
        os.replace(tmp, self.path)
        os.chmod(self.path, 0o600)

    def names(self) -> list[str]:
        """Stored names, sorted (never values)."""
        return sorted(self._load())

    def get(self, name: str) -> str | None:
        """The stored value, or None."""
        return self._load().get(name)

    def set(self, name: str, value: str) -> None:
        """Store ``value`` under ``name``.

        Raises:
            UsageError: an invalid name, an empty value, or one over SECRET_VALUE_MAX_BYTES.
        """
        if not valid_name(name):
            raise UsageError(f"invalid secret name {name!r}: use letters, digits and '_', not starting with a digit")
        size = len(value.encode("utf-8"))
        if not value:
            raise UsageError("the secret value is empty")
        if size > SECRET_VALUE_MAX_BYTES:
            raise UsageError(f"the secret value is {size} bytes; the limit is {SECRET_VALUE_MAX_BYTES} bytes")
        doc = self._load()
        doc[name] = value
        self._save(doc)

    def remove(self, name: str) -> bool:
        """Remove ``name``; returns whether it was stored."""
        doc = self._load()
        if name not in doc:
            return False
        del doc[name]
        self._save(doc)
        return True


def resolve(profile: Profile, name: str) -> str | None:
    """The value of ``name``: the environment variable, else the profile's stored secret, else None."""
    value = os.environ.get(name)
    if value:
        return value
    return SecretStore(profile).get(name)
