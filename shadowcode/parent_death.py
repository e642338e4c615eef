"""A child process that ends when its parent does: ``PR_SET_PDEATHSIG`` (Linux).

Standard library only, so the stdio front (which loads nothing else) and the process groups
of the engine share it.

The kernel sends the signal when the *thread* that started the child exits, and again each time
the child passes to another exiting thread of the same process: start children from a thread
that lives as long as the process (the event loop's), and let a child that cleans up on the
signal expect it more than once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["pdeathsig_preexec"]

_PR_SET_PDEATHSIG = 1


def pdeathsig_preexec(parent_pid: int, signum: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` giving the child ``signum`` when its parent dies, or None off Linux.

    Args:
        parent_pid: the pid of the process starting the child (``os.getpid()`` before the fork):
            when it is gone before the request takes effect, the child sends itself ``signum``.
        signum: the signal the child gets; SIGKILL by default, SIGTERM for a child that must
            clean up (the stdio front's server).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    chosen = int(signum)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, chosen, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the request took effect
            os.kill(os.getpid(), chosen)

    return preexec
