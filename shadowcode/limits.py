"""Every numeric limit of ShadowCode, named once, with its unit in the name.

Each constant carries a docstring giving the unit, the reason, and the requirement id
(see ``spec/REQUIREMENTS.md``) it implements. Code that enforces a limit imports it from
here; a per-call override is a keyword parameter defaulting to the constant. Tests check
each limit at the limit (accepted) and one past it (refused).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DOCTOR_LARGE_FILE_BYTES",
    "GOALS_LIST_MAX",
    "GOAL_TEXT_MAX_BYTES",
    "MEMORY_NOTE_MAX_BYTES",
    "OPERATIONS_IN_FLIGHT_MAX",
    "OPERATION_DEADLINE_SECONDS",
    "PROFILE_NAME_MAX_CHARS",
    "RESULT_MAX_BYTES",
    "REVIEW_CHANGES_MAX",
    "REVIEW_GIT_OUTPUT_MAX_BYTES",
    "REVIEW_GIT_TIMEOUT_SECONDS",
    "SESSIONS_LIST_MAX",
    "SQLITE_CELL_MAX_BYTES",
    "SQLITE_QUERY_MAX_BYTES",
    "SQLITE_QUERY_TIMEOUT_SECONDS",
    "SQLITE_RESULT_MAX_BYTES",
    "SQLITE_ROWS_MAX",
    "SQLITE_VALUE_MAX_BYTES",
    "STDIO_CONNECTION_MAX_BYTES",
    "STDIO_FRAMES_PER_SECOND_MAX",
    "STDIO_FRAME_MAX_BYTES",
    "STDIO_INIT_DEADLINE_SECONDS",
    "STDIO_WRITE_DEADLINE_SECONDS",
    "UNDERSTAND_ENTRIES_MAX",
    "UNDERSTAND_FILES_MAX",
    "UNDERSTAND_MAP_MAX_BYTES",
    "UNDERSTAND_README_LINES_MAX",
    "UNDERSTAND_READ_MAX_BYTES",
    "WHY_ENTRIES_MAX",
]

# --- stdio server transport (SRV-25) ---------------------------------------------------

STDIO_FRAME_MAX_BYTES: Final = 1024 * 1024
"""Bytes in one incoming newline-delimited JSON-RPC frame, newline excluded (SRV-25).
A longer line is refused without being buffered whole and the connection closes."""

STDIO_CONNECTION_MAX_BYTES: Final = 32 * 1024 * 1024
"""Bytes a stdio connection may receive over its lifetime (SRV-25)."""

STDIO_FRAMES_PER_SECOND_MAX: Final = 128
"""Incoming frames per one-second window, blank lines included (SRV-25)."""

STDIO_INIT_DEADLINE_SECONDS: Final = 10.0
"""Seconds from spawn until the first request (initialize or a modern request) (SRV-25)."""

STDIO_WRITE_DEADLINE_SECONDS: Final = 5.0
"""Seconds one response write may take before the client is dropped (SRV-25)."""

OPERATIONS_IN_FLIGHT_MAX: Final = 8
"""Tool and resource operations one connection may have running at once (SRV-25, GW-07)."""

OPERATION_DEADLINE_SECONDS: Final = 45.0
"""Seconds an ordinary (non-delegated) tool or resource operation may run (SRV-25)."""

RESULT_MAX_BYTES: Final = 2_000_000
"""Bytes of one serialized tool or resource result (SRV-25: 2 MB, decimal)."""

# --- profile ---------------------------------------------------------------------------

PROFILE_NAME_MAX_CHARS: Final = 64
"""Characters in a profile name given with ``--profile`` (ENG-01)."""

# --- inspection tools (SRV-08, SRV-12, SRV-13, SRV-14, SRV-19, SRV-20) -----------------

SESSIONS_LIST_MAX: Final = 50
"""Sessions (tasks) returned by one listing, applied after the project filter (SRV-08)."""

GOALS_LIST_MAX: Final = 100
"""Goals returned by one listing (SRV-14)."""

GOAL_TEXT_MAX_BYTES: Final = 16 * 1024
"""UTF-8 bytes in a goal's title or a progress note (SRV-14)."""

MEMORY_NOTE_MAX_BYTES: Final = 64 * 1024
"""UTF-8 bytes of one memory note (project or task scope) after a write (SRV-12)."""

SQLITE_ROWS_MAX: Final = 500
"""Rows returned by one shadow_sqlite query; more rows set ``truncated`` (SRV-13)."""

SQLITE_RESULT_MAX_BYTES: Final = 256 * 1024
"""Bytes of JSON rows returned by one shadow_sqlite query before it stops reading (SRV-13)."""

SQLITE_CELL_MAX_BYTES: Final = 4096
"""Bytes of one text or blob cell before it is shortened in a shadow_sqlite result (SRV-13)."""

SQLITE_QUERY_MAX_BYTES: Final = 16 * 1024
"""UTF-8 bytes of one shadow_sqlite SQL statement (SRV-13)."""

SQLITE_QUERY_TIMEOUT_SECONDS: Final = 5.0
"""Seconds one shadow_sqlite query may run before it is interrupted (SRV-13)."""

UNDERSTAND_FILES_MAX: Final = 2000
"""Files visited by one shadow_understand walk (SRV-19)."""

UNDERSTAND_READ_MAX_BYTES: Final = 64 * 1024
"""Bytes read from one manifest or README while building a project map (SRV-19)."""

UNDERSTAND_MAP_MAX_BYTES: Final = 64 * 1024
"""Bytes of the rendered project map returned or saved (SRV-19)."""

WHY_ENTRIES_MAX: Final = 200
"""Change-history entries returned by one shadow_why call (SRV-19)."""

# --- project inspection: sqlite, map, doctor, review (SRV-13, SRV-19, SRV-20) ---------

SQLITE_VALUE_MAX_BYTES: Final = 16 * 1024 * 1024
"""Bytes of any single string or blob SQLite may build or read during one shadow_sqlite query;
larger values fail the query instead of filling memory (SRV-13)."""

UNDERSTAND_ENTRIES_MAX: Final = 20_000
"""Directory entries (files, folders and links, skipped ones included) one project walk may
examine, so a huge tree cannot stall shadow_understand or shadow_doctor (SRV-19)."""

UNDERSTAND_README_LINES_MAX: Final = 40
"""Lines of the README quoted at the top of a project map (SRV-19)."""

DOCTOR_LARGE_FILE_BYTES: Final = 10 * 1024 * 1024
"""Bytes above which shadow_doctor reports a project file as large (SRV-19)."""

REVIEW_GIT_TIMEOUT_SECONDS: Final = 10.0
"""Seconds one git command run by shadow_review may take before it is killed (SRV-20)."""

REVIEW_GIT_OUTPUT_MAX_BYTES: Final = 1024 * 1024
"""Bytes of output read from one git command run by shadow_review; the rest is dropped and
the result is marked truncated (SRV-20)."""

REVIEW_CHANGES_MAX: Final = 500
"""Changed paths listed by one shadow_review call; more set ``truncated`` (SRV-20)."""
