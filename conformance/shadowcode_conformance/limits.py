"""Limits of the conformance runner itself, and the contract numbers its checks pace by.

The runner imports nothing from the implementation under test, so the few contract numbers
a check must respect (frame rate, operations in flight) are restated here with their ids.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BRIDGE_ANSWER_SECONDS",
    "BRIDGE_BODY_MAX_BYTES",
    "BRIDGE_SESSIONS_MAX",
    "BRIDGE_STOP_SECONDS",
    "CHECK_TIMEOUT_SECONDS",
    "CLEANUP_WAIT_SECONDS",
    "COMMAND_OUTPUT_MAX_BYTES",
    "DETAIL_MAX_CHARS",
    "ENGINE_READY_SECONDS",
    "ENGINE_STATUS_TIMEOUT_SECONDS",
    "ENGINE_STOP_WAIT_SECONDS",
    "EXEC_SETTLE_SECONDS",
    "JOBS_DEFAULT",
    "PURITY_FRAMES",
    "PURITY_FRAMES_PER_SECOND",
    "PROCESS_POLL_FIRST_SECONDS",
    "PROCESS_POLL_MAX_SECONDS",
    "PURITY_IN_FLIGHT_MAX",
    "STDERR_TAIL_CHARS",
]

CHECK_TIMEOUT_SECONDS: Final = 90.0
"""Seconds a check may run when its decorator names no bound (CONF-01)."""

CLEANUP_WAIT_SECONDS: Final = 5.0
"""Seconds a started process gets to exit after its stdin closes before it is killed (CONF-01)."""

COMMAND_OUTPUT_MAX_BYTES: Final = 16 * 1024 * 1024
"""Bytes of stdout or stderr kept from one command; the rest is drained and dropped (CONF-01)."""

DETAIL_MAX_CHARS: Final = 2000
"""Characters of a check's detail kept in the report (CONF-01)."""

EXEC_SETTLE_SECONDS: Final = 0.5
"""Seconds the straggler sweep re-reads a process whose environment is not readable yet (CONF-01).

Between the moment a new program's close-on-exec descriptors close (when ``Popen`` returns)
and the moment the kernel has set up its environment, ``/proc/PID/environ`` reads empty."""

JOBS_DEFAULT: Final = 4
"""Checks run at the same time when ``--jobs`` is not given (CONF-01)."""

PROCESS_POLL_FIRST_SECONDS: Final = 0.3
"""Seconds between the first polls that each start a ``<target>`` command (CONF-01)."""

PROCESS_POLL_MAX_SECONDS: Final = 2.0
"""Seconds the pause between such polls grows to while nothing changes (CONF-01).

Each of those commands is a whole interpreter start (about a second of CPU for ShadowCode's
CLI), and a default run made about a hundred of them at the first pause."""

PURITY_FRAMES: Final = 500
"""Frames the stdout purity check sends in one session, handshake included (SRV-01)."""

PURITY_FRAMES_PER_SECOND: Final = 100
"""Frames per second the purity check sends: below the 128 frames/s stdio bound (SRV-25)."""

PURITY_IN_FLIGHT_MAX: Final = 8
"""Requests the purity check leaves unanswered at once: the 8 operations bound (SRV-25)."""

STDERR_TAIL_CHARS: Final = 600
"""Characters of a target's stderr quoted in a failing check's detail (CONF-01)."""

ENGINE_READY_SECONDS: Final = 30.0
"""Seconds ``<target> engine`` gets to report itself running before it counts as failed (ENG-03)."""

ENGINE_STATUS_TIMEOUT_SECONDS: Final = 30.0
"""Seconds one ``<target> --json engine status`` may take (ENG-03)."""

ENGINE_STOP_WAIT_SECONDS: Final = 15.0
"""Seconds the engine gets to exit after SIGTERM before its process group is killed (ENG-03, CONF-01)."""

BRIDGE_BODY_MAX_BYTES: Final = 4 * 1024 * 1024
"""The largest request body the stdio bridge relays (CONF-01); a larger one gets 413."""

BRIDGE_SESSIONS_MAX: Final = 16
"""Stdio servers the bridge runs at once, one per HTTP session (CONF-01); one more initialize gets 503."""

BRIDGE_ANSWER_SECONDS: Final = 120.0
"""How long the bridge waits for the stdio server's answer to one request (CONF-01); then 504."""

BRIDGE_STOP_SECONDS: Final = 3.0
"""How long a bridged stdio server gets to exit after its stdin closes before its group is killed (CONF-01)."""
