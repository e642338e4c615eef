"""The profile's protected secret store (GW-01, CLI-04, ENG-05).

A JSON object of name to value in ``secrets.json`` (mode 0600, written atomically). Values
are read from stdin by ``shadowcode secret set NAME``, never from argv, and never printed.
:func:`resolve` looks a name up in the environment first, then in the store.

Stored sign-ins of HTTP servers (CW-08) live in the same file under reserved names starting
with :data:`RECORD_PREFIX` (which no secret or variable name can spell, so no ``env_refs`` or
header reference can reach them); :meth:`SecretStore.names` leaves them out. Every change is
made under an exclusive lock of ``secrets.json.lock``, so a refresh and a login in two
processes never lose each other's update.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Generator
from pathlib import Path

from shadowcode.errors import ConfigError, UsageError
from shadowcode.json_values import json_object
from shadowcode.limits import MCP_OAUTH_RECORD_MAX_BYTES, SECRET_VALUE_MAX_BYTES
from shadowcode.profile import Profile

__all__ = ["RECORD_PREFIX", "SecretStore", "resolve", "valid_name"]

RECORD_PREFIX = "mcp-oauth:"
"""Names of stored sign-ins start with this; no secret name can (CW-08)."""

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
            doc = json_object(json.loads(raw))
        except ValueError as exc:
            raise ConfigError(f"the secret store of profile {self.profile.name!r} is not valid JSON") from exc
        values = {k: v for k, v in doc.items() if isinstance(v, str)} if doc is not None else None
        if doc is None or values is None or len(values) != len(doc):
            raise ConfigError(f"the secret store of profile {self.profile.name!r} is not an object of strings")
        return values

    def _save(self, doc: dict[str, str]) -> None:
        self.profile.ensure()
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=2, sort_keys=True)
        os.replace(tmp, self.path)
        os.chmod(self.path, 0o600)

    @contextlib.contextmanager
    def _locked(self) -> Generator[None, None, None]:
        self.profile.ensure()
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def names(self) -> list[str]:
        """Stored secret names, sorted (never values; stored sign-ins left out)."""
        return sorted(n for n in self._load() if not n.startswith(RECORD_PREFIX))

    def get_record(self, key: str) -> str | None:
        """The stored sign-in under ``RECORD_PREFIX + key``, or None (CW-08)."""
        return self._load().get(RECORD_PREFIX + key)

    def set_record(self, key: str, value: str) -> None:
        """Store a sign-in under ``RECORD_PREFIX + key`` (CW-08).

        Raises:
            UsageError: the record is over MCP_OAUTH_RECORD_MAX_BYTES.
        """
        size = len(value.encode("utf-8"))
        if size > MCP_OAUTH_RECORD_MAX_BYTES:
            raise UsageError(f"the sign-in record is {size} bytes; the limit is {MCP_OAUTH_RECORD_MAX_BYTES} bytes")
        with self._locked():
            doc = self._load()
            doc[RECORD_PREFIX + key] = value
            self._save(doc)

    def remove_record(self, key: str) -> bool:
        """Remove the sign-in under ``RECORD_PREFIX + key``; returns whether it was stored (CW-08)."""
        return self.remove(RECORD_PREFIX + key)

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
        with self._locked():
            doc = self._load()
            doc[name] = value
            self._save(doc)

    def remove(self, name: str) -> bool:
        """Remove ``name``; returns whether it was stored."""
        with self._locked():
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
