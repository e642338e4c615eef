"""Where a profile's files live, computed with the standard library only (ENG-01).

Kept apart from :mod:`shadowcode.profile` (which loads pydantic) so the attached fast path
of ``mcp serve`` can find the engine's socket without importing anything heavy.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from shadowcode.limits import PROFILE_NAME_MAX_CHARS

__all__ = ["DEFAULT_PROFILE", "control_socket_for", "home_root", "profile_root", "valid_profile_name"]

DEFAULT_PROFILE = "default"
_SOCKET_PATH_MAX_BYTES = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def home_root() -> Path:
    """The profiles root: ``$SHADOWCODE_HOME`` when set and non-empty, else ``~/.shadowcode``."""
    env = os.environ.get("SHADOWCODE_HOME")
    return Path(env).expanduser() if env else Path.home() / ".shadowcode"


def valid_profile_name(name: str) -> bool:
    """True for 1..PROFILE_NAME_MAX_CHARS of ``[A-Za-z0-9._-]`` starting with a letter or digit."""
    return len(name) <= PROFILE_NAME_MAX_CHARS and bool(_NAME.fullmatch(name))


def profile_root(name: str) -> Path:
    """The directory of profile ``name`` (not validated here)."""
    return home_root() / "profiles" / name


def socket_path(root: Path) -> Path:
    """The headless engine's socket for the profile at ``root``.

    ``run/control.sock`` in the profile, unless that path is too long for a unix socket
    address; then a per-user folder under the system temp dir (or ``/tmp`` when that is long
    too) keyed by the profile's path.
    """
    natural = root / "run" / "control.sock"
    if len(os.fsencode(natural)) < _SOCKET_PATH_MAX_BYTES:
        return natural
    digest = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:20]
    for base in (tempfile.gettempdir(), "/tmp"):
        short = Path(base) / f"shadowcode-{os.getuid()}" / f"{digest}.sock"
        if len(os.fsencode(short)) < _SOCKET_PATH_MAX_BYTES:
            return short
    return short


def control_socket_for(name: str | None) -> str | None:
    """The socket path of profile ``name`` (None: default), or None for an invalid name."""
    chosen = DEFAULT_PROFILE if name is None else name
    if not valid_profile_name(chosen):
        return None
    return str(socket_path(profile_root(chosen)))
