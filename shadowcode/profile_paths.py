"""Where a profile's files live, as strings, with the few standard modules ``os`` brings (ENG-01).

Kept apart from :mod:`shadowcode.profile` (pydantic, pathlib) so the attached fast path of
``mcp serve`` finds the engine's socket with almost nothing imported: this module loads only
``os`` and :mod:`shadowcode.limits` unless a socket path is too long (then ``hashlib`` and
``tempfile``, once).
"""

from __future__ import annotations

import os

from shadowcode.limits import PROFILE_NAME_MAX_CHARS

__all__ = [
    "DEFAULT_PROFILE",
    "control_socket_for",
    "home_dir",
    "path_text",
    "profile_dir",
    "socket_path_for",
    "valid_profile_name",
]

DEFAULT_PROFILE = "default"
_SOCKET_PATH_MAX_BYTES = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS
_NAME_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_REST = _NAME_FIRST | frozenset("._-")


def home_dir() -> str:
    """The profiles root: ``$SHADOWCODE_HOME`` when set and non-empty (``~`` expanded), else ``~/.shadowcode``.

    Spelled as :mod:`pathlib` spells it, so the engine (which holds ``Path`` objects) and the
    fast path compute the same socket path text.
    """
    env = os.environ.get("SHADOWCODE_HOME")
    return path_text(os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".shadowcode"))


def path_text(path: str) -> str:
    """``path`` as ``str(pathlib.PurePosixPath(path))`` spells it: no empty or ``.`` parts."""
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    return lead + "/".join(p for p in path.split("/") if p not in ("", ".")) or "."


def valid_profile_name(name: str) -> bool:
    """True for 1..PROFILE_NAME_MAX_CHARS of ``[A-Za-z0-9._-]`` starting with an ASCII letter or digit."""
    return 0 < len(name) <= PROFILE_NAME_MAX_CHARS and name[0] in _NAME_FIRST and all(c in _NAME_REST for c in name)


def profile_dir(name: str) -> str:
    """The directory of profile ``name`` (not validated here)."""
    return os.path.join(home_dir(), "profiles", name)


def socket_path_for(root: str) -> str:
    """The headless engine's socket for the profile directory ``root``.

    ``run/control.sock`` in the profile, unless that path is too long for a unix socket
    address; then a per-user folder under the system temp dir (or ``/tmp`` when that is long
    too) keyed by the sha256 of the profile's resolved path.
    """
    natural = os.path.join(root, "run", "control.sock")
    if len(os.fsencode(natural)) < _SOCKET_PATH_MAX_BYTES:
        return natural
    import hashlib
    import tempfile

    digest = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:20]
    short = natural
    for base in (tempfile.gettempdir(), "/tmp"):
        short = os.path.join(base, f"shadowcode-{os.getuid()}", f"{digest}.sock")
        if len(os.fsencode(short)) < _SOCKET_PATH_MAX_BYTES:
            return short
    return short


def control_socket_for(name: str | None) -> str | None:
    """The socket path of profile ``name`` (None: default), or None for an invalid name."""
    chosen = DEFAULT_PROFILE if name is None else name
    if not valid_profile_name(chosen):
        return None
    return socket_path_for(profile_dir(chosen))
