"""The entry of ``shadowcode.pyz``: the attached fast path first, then shiv's bootstrap (issue 7, PKG-01).

``ci/build`` stores this file in the archive as ``__main__.py``, in place of shiv's two-line
entry. When the profile's headless engine runs, ``mcp serve`` only relays stdio to it (see
``shadowcode/mcp/server/relay.py``); that needs a few standard modules and five small modules
of ours, imported straight from the archive, so nothing is unpacked and no dependency is
loaded. Any other command, or no running engine, goes to shiv's bootstrap exactly as before:
it unpacks the dependencies once into its cache and runs the full command line.
"""

from __future__ import annotations

import os
import sys

_SHIV_OVERRIDES = ("SHIV_ENTRY_POINT", "SHIV_CONSOLE_SCRIPT", "SHIV_INTERPRETER")


def _attached() -> int | None:
    """The relay's exit status, or None (nothing read or written) when the full command line must run."""
    if any(os.environ.get(name) for name in _SHIV_OVERRIDES):
        return None  # the caller asked shiv for something else
    inside = sys.path[0] + "/site-packages"
    sys.path.insert(0, inside)
    try:
        from shadowcode.__main__ import attached_fast_path

        status = attached_fast_path(sys.argv[1:])
    except ImportError:
        status = None
    if status is None:
        # Forget the copies read from the archive, so the full command line imports every
        # module of ours from shiv's unpacked site-packages, beside its dependencies.
        sys.path.remove(inside)
        for name in [n for n in sys.modules if n == "shadowcode" or n.startswith("shadowcode.")]:
            del sys.modules[name]
    return status


_status = _attached()
if _status is not None:
    sys.exit(_status)

import _bootstrap  # noqa: E402  (shiv's bootstrap, at the archive's root)

_bootstrap.bootstrap()
