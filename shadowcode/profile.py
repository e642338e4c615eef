"""Profiles: where one isolated set of settings, secrets, database and sockets lives (ENG-01).

Layout under the root (``$SHADOWCODE_HOME``, else ``~/.shadowcode``)::

    profiles/<name>/
        settings.json     models and options (pydantic-validated: :mod:`shadowcode.settings`)
        secrets.json      protected secret store, mode 0600
        shadowcode.db     the SQLite store (WAL)
        run/              engine lock and unix sockets (mode 0700)

A profile name is 1..PROFILE_NAME_MAX_CHARS characters of ``[A-Za-z0-9._-]``, starting with a
letter or digit; anything else (a path separator above all) is a :class:`ConfigError`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from shadowcode.errors import ConfigError
from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.profile_paths import DEFAULT_PROFILE, home_dir, profile_dir, socket_path_for, valid_profile_name

if TYPE_CHECKING:
    from shadowcode.settings import ModelSettings, Settings

__all__ = ["DEFAULT_PROFILE", "Profile", "home_root"]


def _read_file(path: str) -> bytes:
    """The whole file at ``path``, read with ``os.read`` (bytes).

    Raises:
        OSError: it cannot be opened or read (FileNotFoundError when missing).
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO put there opens without a writer
    try:
        chunks: list[bytes] = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _no_parsed() -> dict[bytes, Settings]:
    return {}


def home_root() -> Path:
    """The profiles root: ``$SHADOWCODE_HOME`` when set and non-empty, else ``~/.shadowcode``."""
    return Path(home_dir())


@dataclass(frozen=True)
class Profile:
    """A resolved profile: its name and directory. Create with :meth:`select`."""

    name: str
    root: Path
    _parsed: dict[bytes, Settings] = field(default_factory=_no_parsed, init=False, repr=False, compare=False)

    @classmethod
    def select(cls, name: str | None = None) -> Profile:
        """Resolve ``--profile NAME`` (None: the default profile) under :func:`home_root`.

        Raises:
            ConfigError: the name is empty, too long, or holds a character outside
                ``[A-Za-z0-9._-]`` (a path separator, for one) (ENG-01).
        """
        chosen = DEFAULT_PROFILE if name is None else name
        if not valid_profile_name(chosen):
            raise ConfigError(
                f"invalid profile name {chosen!r}: use 1-{PROFILE_NAME_MAX_CHARS} letters, digits, '.', '_' or '-'"
                ", starting with a letter or digit"
            )
        return cls(name=chosen, root=Path(profile_dir(chosen)))

    @property
    def db_path(self) -> Path:
        """The SQLite store file."""
        return self.root / "shadowcode.db"

    @cached_property
    def settings_path(self) -> Path:
        """The settings file (JSON); made once, as every tool call reads it."""
        return self.root / "settings.json"

    @property
    def secrets_path(self) -> Path:
        """The protected secret store (JSON object of name to value, mode 0600)."""
        return self.root / "secrets.json"

    @property
    def run_dir(self) -> Path:
        """Engine lock and unix sockets."""
        return self.root / "run"

    @property
    def lock_path(self) -> Path:
        """The headless engine's lock file; whoever holds it is the profile's engine (ENG-03)."""
        return self.run_dir / "engine.lock"

    @property
    def control_socket_path(self) -> Path:
        """The headless engine's unix socket (see :func:`shadowcode.profile_paths.socket_path_for`)."""
        return Path(socket_path_for(str(self.root)))

    def ensure(self) -> None:
        """Create the profile directories (mode 0700) if missing."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.run_dir.mkdir(mode=0o700, exist_ok=True)
        self.control_socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    def settings(self) -> Settings:
        """Load ``settings.json``; a missing file is the empty settings (ENG-05).

        The file is read on every call (a running engine sees ``models add``), with plain system
        calls: every tool call asks, and an ``io`` file object costs three times as much. While
        its bytes stay the same, the settings parsed from them last are returned again (they are
        frozen).

        Raises:
            ConfigError: the file is not UTF-8 JSON or does not match :class:`~shadowcode.settings.Settings`,
                or cannot be read.
        """
        saved = self.saved_settings()
        if saved is not None:
            return saved
        from shadowcode.settings import NO_SETTINGS

        return NO_SETTINGS

    def saved_settings(self) -> Settings | None:
        """:meth:`settings`, but None when the profile has no settings file.

        The settings are pydantic models, and importing pydantic costs a stdio server's first
        tool call about a tenth of a second (issue 32): a caller that only needs to know whether
        models are configured asks here, and pydantic is imported when there is a file to validate.

        Raises:
            ConfigError: as :meth:`settings`.
        """
        try:
            raw = _read_file(os.fspath(self.settings_path))
        except FileNotFoundError:
            return None
        except OSError as exc:
            problem = f"cannot be read: {exc.strerror}"
            raise ConfigError(f"{self.settings_path.name} of profile {self.name!r} {problem}") from exc
        parsed = self._parsed.get(raw)
        if parsed is not None:
            return parsed
        from pydantic import ValidationError

        from shadowcode.settings import Settings

        try:
            parsed = Settings.model_validate(json.loads(raw.decode("utf-8")))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(f"{self.settings_path.name} of profile {self.name!r} is invalid: {exc}") from exc
        self._parsed.clear()  # one file, so one entry
        self._parsed[raw] = parsed
        return parsed

    def save_model(self, entry: ModelSettings, *, make_default: bool = False) -> Settings:
        """Add ``entry`` to the settings, replacing a model of the same name, and write them (ENG-05).

        The first model saved becomes the default, and so does ``entry`` with ``make_default``.

        Returns:
            The settings as written.

        Raises:
            ConfigError: ``entry`` lacks what its provider needs (a script; a base URL and model),
                or the current settings file is invalid.
        """
        if entry.provider == "scripted" and not entry.script:
            raise ConfigError("--provider scripted needs --script FILE")
        if entry.provider == "openai" and not (entry.base_url and entry.model):
            raise ConfigError("--provider openai needs --base-url and --model")
        self.ensure()
        settings = self.settings()
        models = (*(m for m in settings.models if m.name != entry.name), entry)
        default = entry.name if make_default or not settings.default_model else settings.default_model
        saved = settings.model_copy(update={"models": models, "default_model": default})
        doc = saved.model_dump(exclude_none=True)
        self.settings_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        return saved
