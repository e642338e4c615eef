"""Every numeric limit of ShadowCode, named once, with its unit in the name.

Each constant carries a docstring giving the unit, the reason, and the requirement id
(see ``spec/REQUIREMENTS.md``) it implements. Code that enforces a limit imports it from
here; a per-call override is a keyword parameter defaulting to the constant. Tests check
each limit at the limit (accepted) and one past it (refused).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the attached fast path imports this module and not typing
    from typing import Final

__all__ = [
    "AGENT_STEPS_MAX",
    "APPROVAL_ASK_POLL_SECONDS",
    "APPROVAL_PAGE_BODY_MAX_BYTES",
    "APPROVAL_PAGE_CONNECTIONS_MAX",
    "APPROVAL_PAGE_HEADER_MAX_BYTES",
    "APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS",
    "APPROVAL_POLL_SECONDS",
    "APPROVAL_STATE_MAX_CHARS",
    "APPROVAL_STATE_TTL_SECONDS",
    "BACKGROUND_OUTPUT_MAX_BYTES",
    "BACKGROUND_PROCESSES_MAX",
    "BLOCKING_THREADS_MAX",
    "CLEANUP_DEADLINE_SECONDS",
    "COMMAND_OUTPUT_TAIL_BYTES",
    "COMMAND_TIMEOUT_MAX_SECONDS",
    "COMMAND_TIMEOUT_SECONDS",
    "CONTROL_FRAME_MAX_BYTES",
    "DOCTOR_LARGE_FILE_BYTES",
    "FILE_LIST_ENTRIES_MAX",
    "FILE_READ_MAX_BYTES",
    "FILE_WRITE_MAX_BYTES",
    "FRONT_ENGINE_START_SECONDS",
    "FRONT_STOP_GRACE_SECONDS",
    "GATEWAY_BODY_DEADLINE_SECONDS",
    "GATEWAY_CONNECTIONS_MAX",
    "GATEWAY_HEADER_DEADLINE_SECONDS",
    "GATEWAY_HEADER_MAX_BYTES",
    "GATEWAY_LINGER_SECONDS",
    "GATEWAY_LISTEN_SECONDS",
    "GATEWAY_REQUESTS_PER_SECOND_MAX",
    "GATEWAY_REQUEST_DEADLINE_SECONDS",
    "GATEWAY_REQUEST_MAX_BYTES",
    "GATEWAY_RESPONSE_MAX_BYTES",
    "GATEWAY_TOKEN_MAX_CHARS",
    "GATEWAY_TOKEN_MIN_CHARS",
    "GOALS_LIST_MAX",
    "GOAL_TEXT_MAX_BYTES",
    "JOB_EVENTS_PAGE_MAX",
    "JOB_STEP_MAX_CHARS",
    "JOB_WATCH_INTERVAL_SECONDS",
    "LISTEN_BACKLOG_MAX",
    "LISTEN_STREAMS_MAX",
    "LISTEN_TASK_IDS_MAX",
    "MCP_CATALOG_MAX_BYTES",
    "MCP_CATALOG_PAGES_MAX",
    "MCP_CATALOG_TOOLS_MAX",
    "MCP_CONNECTIONS_MAX",
    "MCP_CONNECTION_MAX_BYTES",
    "MCP_CURSOR_MAX_BYTES",
    "MCP_DEFINITION_MAX_BYTES",
    "MCP_ENABLED_SERVERS_MAX",
    "MCP_FRAMES_PER_SECOND_MAX",
    "MCP_FRAME_MAX_BYTES",
    "MCP_INLINE_TOOLS_MAX",
    "MCP_STDERR_CAPTURE_BYTES",
    "MCP_TIMEOUT_DEFAULT_SECONDS",
    "MCP_TIMEOUT_MAX_SECONDS",
    "MCP_TIMEOUT_MIN_SECONDS",
    "MCP_TOOL_ARGUMENTS_MAX_BYTES",
    "MCP_TOOL_NAMES_PAGE_MAX",
    "MEMORY_NOTE_MAX_BYTES",
    "MODEL_CONNECT_TIMEOUT_SECONDS",
    "MODEL_LOG_TEXT_MAX_CHARS",
    "MODEL_READ_TIMEOUT_SECONDS",
    "MODEL_REQUEST_TIMEOUT_SECONDS",
    "MODEL_RESPONSE_MAX_BYTES",
    "MODEL_SCRIPT_DELAY_MAX_SECONDS",
    "MODEL_SCRIPT_MAX_BYTES",
    "MODEL_SLOTS_PER_MODEL_MAX",
    "OPERATIONS_IN_FLIGHT_MAX",
    "OPERATION_DEADLINE_SECONDS",
    "OWNER_JOBS_MAX",
    "OWNER_REPLY_DEADLINE_SECONDS",
    "OWNER_SOCKETS_MAX",
    "PROCESS_OUTPUT_MAX_BYTES",
    "PROCESS_PIPE_DRAIN_SECONDS",
    "PROCESS_REAP_DEADLINE_SECONDS",
    "PROCESS_TERM_GRACE_SECONDS",
    "PROFILE_NAME_MAX_CHARS",
    "PROGRESS_INTERVAL_SECONDS",
    "PROMPT_MAX_BYTES",
    "RELAY_ATTACH_DEADLINE_SECONDS",
    "RELAY_ATTACH_REPLY_MAX_BYTES",
    "RELAY_NOTICES_PER_SESSION_MAX",
    "RELAY_NOTICE_SESSIONS_MAX",
    "RESULT_MAX_BYTES",
    "REVIEW_CHANGES_MAX",
    "REVIEW_GIT_CONFIG_NAMES_MAX_BYTES",
    "REVIEW_GIT_OUTPUT_MAX_BYTES",
    "REVIEW_GIT_TIMEOUT_SECONDS",
    "SEARCH_FILES_MAX",
    "SEARCH_FILE_MAX_BYTES",
    "SEARCH_LINE_MAX_CHARS",
    "SEARCH_MATCHES_MAX",
    "SEARCH_PATTERN_MAX_CHARS",
    "SECRET_VALUE_MAX_BYTES",
    "SESSIONS_LIST_MAX",
    "SQLITE_CELL_MAX_BYTES",
    "SQLITE_QUERY_MAX_BYTES",
    "SQLITE_QUERY_TIMEOUT_SECONDS",
    "SQLITE_RESULT_MAX_BYTES",
    "SQLITE_ROWS_MAX",
    "SQLITE_VALUE_MAX_BYTES",
    "SQLITE_WORKER_REPLY_MAX_BYTES",
    "STDIO_BATCH_MAX_MESSAGES",
    "STDIO_CONNECTION_MAX_BYTES",
    "STDIO_FRAMES_PER_SECOND_MAX",
    "STDIO_FRAME_MAX_BYTES",
    "STDIO_INIT_DEADLINE_SECONDS",
    "STDIO_WRITE_DEADLINE_SECONDS",
    "TASKS_RUNNING_MAX",
    "TASK_POLL_INTERVAL_SECONDS",
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

STDIO_BATCH_MAX_MESSAGES: Final = 64
"""Messages in one JSON-RPC batch, served only on a connection that negotiated 2025-03-26
(SRV-01, SRV-25). A longer batch gets one invalid-request error (-32600) naming this limit,
nothing in it is served, and the connection stays open."""

STDIO_CONNECTION_MAX_BYTES: Final = 32 * 1024 * 1024
"""Bytes a stdio connection may receive over its lifetime (SRV-25)."""

STDIO_FRAMES_PER_SECOND_MAX: Final = 128
"""Incoming frames per one-second window, blank lines included (SRV-25)."""

STDIO_INIT_DEADLINE_SECONDS: Final = 10.0
"""Seconds from spawn until the first request (initialize or a modern request) (SRV-25)."""

STDIO_WRITE_DEADLINE_SECONDS: Final = 5.0
"""Seconds one response write may take before the client is dropped (SRV-25)."""

FRONT_ENGINE_START_SECONDS: Final = 120.0
"""Seconds the stdio front of ``mcp serve`` waits for the full server behind it to be ready
before it stops it and answers every request that needs the engine with an error; discovery
is answered meanwhile (issue 15, SRV-07)."""

FRONT_STOP_GRACE_SECONDS: Final = 10.0
"""Seconds the stdio front gives the full server behind it to end after ``SIGTERM`` (its
engine closes the owner and stops what it started) before ``SIGKILL`` (SRV-07); also the
longest it holds the server's first output back until it has read the server's ready word,
which the server writes before any output (SRV-03)."""

RELAY_ATTACH_DEADLINE_SECONDS: Final = 10.0
"""Seconds the relay of ``mcp serve`` gives the engine to accept it and answer ``mcp/attach``
before it serves in its own process instead; also bounds its fetch of closing notices (SRV-25)."""

RELAY_ATTACH_REPLY_MAX_BYTES: Final = 4096
"""Bytes of the engine's one-line reply to ``mcp/attach`` or ``mcp/notices`` the relay reads (SRV-25)."""

RELAY_NOTICE_SESSIONS_MAX: Final = 64
"""Relayed sessions whose closing notices the engine keeps until their relay fetches them (SRV-25)."""

RELAY_NOTICES_PER_SESSION_MAX: Final = 8
"""Closing notices kept for one relayed session; later ones reach only the engine's stderr (SRV-25)."""

OPERATIONS_IN_FLIGHT_MAX: Final = 8
"""Tool and resource operations one connection may have running at once (SRV-25, GW-07)."""

OPERATION_DEADLINE_SECONDS: Final = 45.0
"""Seconds an ordinary (non-delegated) tool or resource operation may run (SRV-25)."""

RESULT_MAX_BYTES: Final = 2_000_000
"""Bytes of one serialized tool or resource result (SRV-25: 2 MB, decimal)."""

BLOCKING_THREADS_MAX: Final = 32
"""Threads one process may have running blocking work (file reads, walks) at once, abandoned ones
included: an operation past its deadline is abandoned, not killed, so a project that makes reads
hang must not make threads pile up; past this, new blocking work is refused (SRV-25)."""

# --- engine: tasks, owners, approvals ----------------------------------------------------
# ENG-03, ENG-04, SRV-15, SRV-16, SRV-17, SRV-18, SRV-19, SRV-20, SRV-21, SRV-22, SRV-23, SRV-24

CONTROL_FRAME_MAX_BYTES: Final = 1024 * 1024
"""Bytes in one newline-delimited JSON frame on an engine control or ownership socket (ENG-03)."""

OWNER_SOCKETS_MAX: Final = 8
"""Ownership sockets open at once per profile; control requests keep their own room (SRV-24)."""

OWNER_JOBS_MAX: Final = 64
"""Jobs one owner may submit over its lifetime (SRV-24, GW-06)."""

OWNER_REPLY_DEADLINE_SECONDS: Final = 30.0
"""Seconds a submission reply or a cleanup acknowledgement may take on an ownership socket (SRV-24)."""

TASKS_RUNNING_MAX: Final = 4
"""Tasks one engine runs at once; more wait in its queue (ENG-04)."""

MODEL_SLOTS_PER_MODEL_MAX: Final = 1
"""Requests one configured model serves at once; other tasks of that model wait (ENG-05)."""

AGENT_STEPS_MAX: Final = 40
"""Model turns one task may take before it fails with a step-limit error (ENG-04)."""

PROMPT_MAX_BYTES: Final = 64 * 1024
"""UTF-8 bytes of a delegated task's prompt (SRV-15, ENG-08)."""

JOB_EVENTS_PAGE_MAX: Final = 50
"""Events returned by one shadow_jobs inspection page (SRV-16)."""

TASK_POLL_INTERVAL_SECONDS: Final = 1.0
"""Seconds a host is asked to wait between two ``tasks/get`` of one task (a task's pollIntervalMs) (SRV-26)."""

JOB_WATCH_INTERVAL_SECONDS: Final = 0.5
"""Seconds between two reads of a connection's owned jobs while any is unfinished: how late a
listener hears a status change at most, and the bound on the watcher's engine calls (SRV-26, SRV-27)."""

LISTEN_STREAMS_MAX: Final = 8
"""``subscriptions/listen`` streams one connection (the whole gateway is one) keeps open at once (SRV-27)."""

LISTEN_TASK_IDS_MAX: Final = 64
"""Task ids one ``subscriptions/listen`` request may name: an owner's lifetime of jobs (SRV-24, SRV-27)."""

LISTEN_BACKLOG_MAX: Final = 64
"""Notifications waiting to be written on one listen stream; a stream whose client stops reading
past this is ended, and the client listens again (SRV-27)."""

GATEWAY_LISTEN_SECONDS: Final = 50.0
"""Seconds a listen stream over the gateway lives before it ends with its final result, inside the
request deadline of GW-07; the client listens again (SRV-27, GW-07)."""

PROGRESS_INTERVAL_SECONDS: Final = 1.0
"""Seconds between two ``notifications/progress`` of one tool call that carries a progress token:
the first comes once the call has run this long, so a call that ends sooner sends none (SRV-28)."""

JOB_STEP_MAX_CHARS: Final = 300
"""Characters of the phrase saying what a job is doing now (a task's statusMessage) (SRV-16, SRV-26)."""

APPROVAL_POLL_SECONDS: Final = 0.2
"""Seconds between store reads of a pending approval, so another process's decision is seen (ENG-07)."""

APPROVAL_STATE_TTL_SECONDS: Final = 900
"""Seconds an approval state the engine signed for the host stays answerable; later it is refused and
the host is asked again with a new one (SRV-29)."""

APPROVAL_STATE_MAX_CHARS: Final = 1024
"""Characters of an approval state a host hands back; a longer one is refused unread (SRV-29)."""

APPROVAL_ASK_POLL_SECONDS: Final = 0.5
"""Seconds between looks for a new pending approval of the connection's jobs, to ask it in the host (SRV-29)."""

COMMAND_TIMEOUT_SECONDS: Final = 600.0
"""Seconds an approved terminal command or test job may run before it is stopped (ENG-04, SRV-17)."""

COMMAND_OUTPUT_TAIL_BYTES: Final = 64 * 1024
"""Bytes of a command's combined output kept (the tail) in its result and events (ENG-04, SRV-17)."""

CLEANUP_DEADLINE_SECONDS: Final = 30.0
"""Seconds a closing owner or engine waits for its cancelled tasks to finish cleanup (SRV-21, SRV-24)."""

# --- profile ---------------------------------------------------------------------------

SECRET_VALUE_MAX_BYTES: Final = 16 * 1024
"""UTF-8 bytes of one value in the profile's secret store (GW-01, CLI-04)."""

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
"""Seconds one shadow_sqlite call may take, its worker process's start included; at the
bound the worker is killed, whatever the query is doing (SRV-13)."""

SQLITE_WORKER_REPLY_MAX_BYTES: Final = 16 * 1024 * 1024
"""Bytes of the reply read from one shadow_sqlite worker process; the rows inside it are
already bounded by ``SQLITE_RESULT_MAX_BYTES``, so a larger reply (huge column names, a
listing of many wide tables) fails the call instead of filling memory (SRV-13)."""

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

REVIEW_GIT_CONFIG_NAMES_MAX_BYTES: Final = 64 * 1024
"""Bytes of configuration key names (``git config --list --name-only``) shadow_review reads
from a repository to switch off every filter driver it names. Past it the review is refused:
a driver it could not see might run (SRV-20)."""

# --- model providers (ENG-05) ----------------------------------------------------------

MODEL_CONNECT_TIMEOUT_SECONDS: Final = 10.0
"""Seconds the ``openai`` provider waits to connect to the model server (ENG-05)."""

MODEL_READ_TIMEOUT_SECONDS: Final = 120.0
"""Seconds the model server may stay silent while a request is sent or its answer read;
slow local models get time to think, a stalled one still ends (ENG-05)."""

MODEL_REQUEST_TIMEOUT_SECONDS: Final = 300.0
"""Seconds one whole model request may take, connect to last byte, however the server
trickles its answer; then the request fails instead of hanging the task (ENG-05)."""

MODEL_RESPONSE_MAX_BYTES: Final = 4 * 1024 * 1024
"""Bytes of one decoded model answer body; reading stops and the request fails past it (ENG-05)."""

MODEL_SCRIPT_MAX_BYTES: Final = 1024 * 1024
"""Bytes of a model script file read by the ``scripted`` provider; a larger file is refused (ENG-05)."""

MODEL_SCRIPT_DELAY_MAX_SECONDS: Final = 600.0
"""Seconds one scripted turn's ``delay_seconds`` may ask for; more is refused when the script
loads (ENG-05)."""

MODEL_LOG_TEXT_MAX_CHARS: Final = 2000
"""Characters of any one string kept in a model request log line; longer text is cut and
marked, so one line stays small (ENG-05)."""

# --- child processes: commands and background processes (ENG-04, SRV-21, SRV-23) ------

PROCESS_TERM_GRACE_SECONDS: Final = 0.15
"""Seconds a stopping process group gets between SIGTERM and SIGKILL; the leader is reaped
only after the SIGKILL went to the whole group (ENG-04, SRV-21, SRV-23)."""

PROCESS_REAP_DEADLINE_SECONDS: Final = 5.0
"""Seconds to wait for a group leader to exit after SIGKILL before giving up on reaping it;
only a process stuck in the kernel can take that long (ENG-04, SRV-21)."""

PROCESS_PIPE_DRAIN_SECONDS: Final = 1.0
"""Seconds the output pipe is still read after the leader was reaped, for output a process
that left the group may hold open; then reading stops (ENG-04, SRV-23)."""

PROCESS_OUTPUT_MAX_BYTES: Final = 1024 * 1024
"""Largest output tail, in bytes, a caller may ask a command run to keep; the default is
``COMMAND_OUTPUT_TAIL_BYTES`` (ENG-04)."""

COMMAND_TIMEOUT_MAX_SECONDS: Final = 3600.0
"""Longest deadline, in seconds, a caller may give one command run; zero or less is refused
as well (ENG-04, SRV-17)."""

BACKGROUND_OUTPUT_MAX_BYTES: Final = 64 * 1024
"""Bytes of output kept per background process (a ring buffer holding the newest) (SRV-23)."""

BACKGROUND_PROCESSES_MAX: Final = 16
"""Background processes one engine keeps running at once; starting another is refused (SRV-23)."""

# --- agent file tools (ENG-04, ENG-06) -------------------------------------------------

FILE_READ_MAX_BYTES: Final = 256 * 1024
"""Bytes one read_file call returns at most; the rest is read with a later offset (ENG-04)."""

FILE_WRITE_MAX_BYTES: Final = 1024 * 1024
"""Bytes of a file the tools may write or edit, before and after the change: both versions
must fit, because the old one is kept in the checkpoint store (ENG-04, ENG-06)."""

FILE_LIST_ENTRIES_MAX: Final = 1000
"""Entries one list_files call returns, in name order; more set ``truncated`` (ENG-04)."""

SEARCH_PATTERN_MAX_CHARS: Final = 1000
"""Characters in one search_files pattern, plain or regular expression (ENG-04)."""

SEARCH_MATCHES_MAX: Final = 200
"""Matching lines one search_files call returns; more set ``truncated`` (ENG-04)."""

SEARCH_FILE_MAX_BYTES: Final = 1024 * 1024
"""Bytes above which search_files skips a file rather than reading it (ENG-04)."""

SEARCH_FILES_MAX: Final = 2000
"""Files one search_files call looks into; more set ``truncated`` (ENG-04)."""

SEARCH_LINE_MAX_CHARS: Final = 400
"""Characters of a matching line quoted in a search result; longer lines are cut (ENG-04)."""

# --- HTTP gateway (GW-07) ---------------------------------------------------------------

GATEWAY_CONNECTIONS_MAX: Final = 32
"""TCP connections the gateway serves at once; one more is answered 429 and closed (GW-07)."""

GATEWAY_REQUESTS_PER_SECOND_MAX: Final = 128
"""Requests the gateway takes in any one-second window; the next one is answered 429 (GW-07)."""

GATEWAY_HEADER_DEADLINE_SECONDS: Final = 5.0
"""Seconds from accepting a connection until its request line and headers are complete (GW-07)."""

GATEWAY_BODY_DEADLINE_SECONDS: Final = 5.0
"""Seconds from the end of the headers until the whole request body has arrived (GW-07)."""

GATEWAY_HEADER_MAX_BYTES: Final = 16 * 1024
"""Bytes of one request line plus its header block; a larger head is refused (GW-07)."""

GATEWAY_REQUEST_MAX_BYTES: Final = 1024 * 1024
"""Bytes of one request body, declared or chunked; one more byte is answered 413 (GW-07)."""

GATEWAY_REQUEST_DEADLINE_SECONDS: Final = 60.0
"""Seconds from a complete request until its response is written (GW-07)."""

GATEWAY_RESPONSE_MAX_BYTES: Final = 8 * 1024 * 1024
"""Bytes of one response body; a larger one is replaced by a 500 before any byte is sent (GW-07)."""

GATEWAY_LINGER_SECONDS: Final = 1.0
"""Seconds a refused connection is drained after its answer, so the peer reads it before the close (GW-07)."""

GATEWAY_TOKEN_MIN_CHARS: Final = 32
"""Characters of the shortest bearer token the gateway accepts at start (GW-03)."""

GATEWAY_TOKEN_MAX_CHARS: Final = 512
"""Characters of the longest bearer token the gateway accepts at start (GW-03)."""

# --- the approval page (URL mode, SRV-30) -------------------------------------------------

APPROVAL_PAGE_CONNECTIONS_MAX: Final = 8
"""Connections the loopback approval page serves at once; one more is answered 429 and closed (SRV-30)."""

APPROVAL_PAGE_HEADER_MAX_BYTES: Final = 8 * 1024
"""Bytes of one approval-page request line plus its header block; a larger head is answered 431 (SRV-30)."""

APPROVAL_PAGE_BODY_MAX_BYTES: Final = 1024
"""Bytes of one approval-page form body; one more byte is answered 413 (SRV-30)."""

APPROVAL_PAGE_REQUEST_DEADLINE_SECONDS: Final = 10.0
"""Seconds from accepting an approval-page connection until its whole request has arrived (408) (SRV-30)."""

# --- MCP client (CLI-13) ----------------------------------------------------------------

MCP_CONNECTIONS_MAX: Final = 16
"""External MCP server connections open at once in one engine process; a permit is held until
the connection's cleanup has finished (CLI-13)."""

MCP_FRAME_MAX_BYTES: Final = 1024 * 1024
"""Bytes in one newline-delimited JSON-RPC frame from an external server, newline excluded;
a longer line fails the connection without being buffered whole (CLI-13, CLI-14)."""

MCP_CONNECTION_MAX_BYTES: Final = 32 * 1024 * 1024
"""Bytes an external server may send on one connection over its lifetime (CLI-13)."""

MCP_FRAMES_PER_SECOND_MAX: Final = 128
"""Frames an external server may send in any one-second window, blank lines included (CLI-13)."""

MCP_TOOL_ARGUMENTS_MAX_BYTES: Final = 512 * 1024
"""Bytes of one call's arguments serialized as compact UTF-8 JSON; larger calls are refused
before anything is sent (CLI-13)."""

MCP_CATALOG_TOOLS_MAX: Final = 128
"""Tools one external server may list (CLI-13)."""

MCP_CATALOG_MAX_BYTES: Final = 2 * 1024 * 1024
"""Bytes of one server's tool catalog, summed over the serialized tool entries of every page (CLI-13)."""

MCP_CATALOG_PAGES_MAX: Final = 8
"""Pages of ``tools/list`` read from one server in one discovery (CLI-13)."""

MCP_CURSOR_MAX_BYTES: Final = 4 * 1024
"""Bytes of one pagination cursor sent by an external server (CLI-13)."""

MCP_TIMEOUT_MIN_SECONDS: Final = 0.1
"""Smallest ``timeout_sec`` a definition may choose for initialization, discovery and each call (CLI-13)."""

MCP_TIMEOUT_MAX_SECONDS: Final = 120.0
"""Largest ``timeout_sec`` a definition may choose for initialization, discovery and each call (CLI-13)."""

MCP_TIMEOUT_DEFAULT_SECONDS: Final = 30.0
"""Seconds used for initialization, discovery (all pages together) and each call when a
definition gives no ``timeout_sec`` (CLI-13)."""

MCP_CONNECT_TIMEOUT_MAX_SECONDS: Final = 600.0
"""Largest ``connect_timeout`` a definition may choose for starting or reaching the server,
initialization and discovery together (CW-07)."""

MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS: Final = 120.0
"""Seconds a server launched through ``npx``, ``pnpx``, ``bunx`` or ``uvx`` gets at least to
start, initialize and list its tools when its definition sets no ``connect_timeout``: the
first run downloads the package (CW-07)."""

MCP_CALL_TIMEOUT_MAX_SECONDS: Final = 1800.0
"""Largest ``call_timeout`` a definition may choose for each ``tools/call`` and ``prompts/get``,
for long-running tools (CW-07)."""

MCP_READ_TIMEOUT_MAX_SECONDS: Final = 120.0
"""Largest ``read_timeout`` a definition may choose for each reply other than a call's (CW-07)."""

MCP_TOOL_FILTER_NAMES_MAX: Final = 128
"""Tool names one ``enabled_tools`` or ``disabled_tools`` list may hold (CW-02)."""

MCP_TOOL_NAME_MAX_CHARS: Final = 128
"""Characters of one tool name in ``enabled_tools`` or ``disabled_tools`` (CW-02), and of a tool name
a server lists (the MCP tool-name rule, checked at discovery; a longer one fails the listing, CLI-13)."""

MCP_STDERR_CAPTURE_BYTES: Final = 16 * 1024
"""Bytes of an external server's stderr kept (the newest); the pipe keeps being drained past
this, and the capture never enters task history (CLI-04, CLI-13)."""

MCP_ENABLED_SERVERS_MAX: Final = 4
"""Servers one project may have enabled at once (CLI-02)."""

MCP_INLINE_TOOLS_MAX: Final = 40
"""Enabled tools a Build task gets as first-class ``mcp__<server>__<tool>`` functions at most,
unless the ``mcp.inline_tools`` setting says otherwise; past it only ``mcp_tools`` and
``mcp_call`` are offered (CLI-07)."""

MCP_TOOL_NAMES_PAGE_MAX: Final = 20
"""Tool names one ``mcp_tools`` page lists (CLI-07)."""

MCP_DEFINITION_MAX_BYTES: Final = 64 * 1024
"""Bytes of one server definition file or registration; larger files are refused unread (CLI-03)."""

# -- the Streamable HTTP client (CLI-11, CLI-16, CLI-17) ------------------------------------

__all__ += [  # appended so parallel edits of the list above do not collide
    "MCP_HTTP_BODY_MAX_BYTES",
    "MCP_HTTP_CONTROL_QUEUE_MAX",
    "MCP_HTTP_EVENT_ID_MAX_BYTES",
    "MCP_HTTP_HEADERS_MAX_BYTES",
    "MCP_HTTP_REQUESTS_MAX",
    "MCP_HTTP_SESSION_DELETE_SECONDS",
    "MCP_HTTP_SESSION_ID_MAX_BYTES",
    "MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX",
    "MCP_HTTP_SSE_EVENT_MAX_BYTES",
    "MCP_CALL_TIMEOUT_MAX_SECONDS",
    "MCP_CONNECT_TIMEOUT_MAX_SECONDS",
    "MCP_LAUNCHER_CONNECT_TIMEOUT_SECONDS",
    "MCP_READ_TIMEOUT_MAX_SECONDS",
    "MCP_TOOL_FILTER_NAMES_MAX",
    "MCP_TOOL_NAME_MAX_CHARS",
]

MCP_HTTP_BODY_MAX_BYTES: Final = 1024 * 1024
"""Bytes of one JSON reply body from an external HTTP server, counted before parsing; a longer
body closes the connection (CLI-17)."""

MCP_HTTP_SSE_EVENT_MAX_BYTES: Final = 1024 * 1024
"""Bytes of one raw SSE event (every line up to the blank line that ends it) from an external
HTTP server, counted before parsing; a longer event closes the connection (CLI-17)."""

MCP_HTTP_SSE_EVENTS_PER_SECOND_MAX: Final = 128
"""SSE events one HTTP connection accepts in any one-second window, blank and comment-only
events counted, so keep-alive floods cannot bypass it (CLI-17)."""

MCP_HTTP_SESSION_ID_MAX_BYTES: Final = 1024
"""Bytes of the ``Mcp-Session-Id`` a legacy HTTP server may assign (CLI-17)."""

MCP_HTTP_EVENT_ID_MAX_BYTES: Final = 4 * 1024
"""Bytes of one SSE event id from an external HTTP server (CLI-17)."""

MCP_HTTP_HEADERS_MAX_BYTES: Final = 16 * 1024
"""Bytes of protocol headers on one HTTP exchange, names and values: the MCP headers a request
carries (a larger request is not sent) and the header block of a reply (a larger one closes
the connection) (CLI-17)."""

MCP_HTTP_REQUESTS_MAX: Final = 2
"""Ordinary requests one HTTP connection has in flight at once; more wait for a slot (CLI-17)."""

MCP_HTTP_CONTROL_QUEUE_MAX: Final = 16
"""Messages waiting on one HTTP connection's control channel (notifications, replies to the
server, the GET stream's hand-offs) or for a request slot; one more closes the connection (CLI-17)."""

MCP_HTTP_SESSION_DELETE_SECONDS: Final = 1.0
"""Seconds the closing ``DELETE`` of a legacy HTTP session may take, also after cancellation (CLI-16)."""

# -- importing other hosts' MCP configs (CW-01) ---------------------------------------------

__all__ += ["MCP_IMPORT_FILE_MAX_BYTES", "MCP_IMPORT_SERVERS_MAX"]  # appended like the lists above

MCP_IMPORT_FILE_MAX_BYTES: Final = 4 * 1024 * 1024
"""Bytes of one host config read by ``mcp import``; Claude Code's ``~/.claude.json`` holds more
than servers, hence larger than a definition. A larger file is refused unread, nothing imported (CW-01)."""

MCP_IMPORT_SERVERS_MAX: Final = 100
"""Server entries one ``mcp import`` reads over all its files; more are refused before anything
is written, so one import cannot flood the registrations (CW-01)."""

# -- modern discovery on stdio (CLI-16) -----------------------------------------------------

__all__ += ["MCP_STDIO_PROBE_SECONDS"]  # appended like the lists above

MCP_STDIO_PROBE_SECONDS: Final = 5.0
"""Seconds a stdio server has to answer the 2026-07-28 ``server/discover`` probe (counted from
the probe being sent, so the server's start-up is included; never more than the connection's own
timeout). Past it the client falls back to ``initialize``: a legacy server that ignores unknown
requests costs at most this long, and a modern server that starts slower is still found, because
it answers that ``initialize`` with an unsupported-version error that names its versions (CLI-16)."""

# -- signing in to HTTP servers (CW-08) ------------------------------------------------------

__all__ += [  # appended so parallel edits of the list above do not collide
    "MCP_OAUTH_BODY_MAX_BYTES",
    "MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES",
    "MCP_OAUTH_HTTP_SECONDS",
    "MCP_OAUTH_LOGIN_SECONDS",
    "MCP_OAUTH_RECORD_MAX_BYTES",
    "MCP_OAUTH_REFRESH_EARLY_SECONDS",
]

MCP_OAUTH_BODY_MAX_BYTES: Final = 1024 * 1024
"""Bytes of one reply during sign-in or refresh (metadata documents, registration, tokens),
counted before parsing; a longer reply ends the sign-in (CW-08)."""

MCP_OAUTH_HTTP_SECONDS: Final = 10.0
"""Seconds one sign-in or refresh request may take, its whole reply read, so a slow metadata
server cannot hold a login or a connection start (CW-08)."""

MCP_OAUTH_LOGIN_SECONDS: Final = 300.0
"""Seconds ``mcp login`` waits for the browser's redirect to reach its loopback callback before
it gives up; nothing is stored (CW-08)."""

MCP_OAUTH_CALLBACK_REQUEST_MAX_BYTES: Final = 16 * 1024
"""Bytes of one request the loopback callback listener reads; a longer one is answered 431 (CW-08)."""

MCP_OAUTH_RECORD_MAX_BYTES: Final = 64 * 1024
"""UTF-8 bytes of one stored sign-in (tokens, client registration, issuer and resource) in the
profile's secret store (CW-08)."""

MCP_OAUTH_REFRESH_EARLY_SECONDS: Final = 30.0
"""Seconds before its stated expiry an access token counts as expired, so a connection start
refreshes it instead of sending a token about to lapse (CW-08)."""

# -- catalog freshness and the resource and prompt helpers (CW-05, CW-06) --------------------

__all__ += [  # appended so parallel edits of the list above do not collide
    "MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS",
    "MCP_CATALOG_TTL_MAX_SECONDS",
    "MCP_CATALOG_TTL_MIN_SECONDS",
    "MCP_HELPER_RESULT_MAX_BYTES",
    "MCP_RESOURCES_PAGE_MAX",
]

MCP_CATALOG_TTL_MIN_SECONDS: Final = 60.0
"""Shortest time a server's list stays fresh when its pages carry ``ttlMs``; a smaller ``ttlMs``
(0 included) is raised to this, so a server cannot make the client re-list without pause (CW-05)."""

MCP_CATALOG_TTL_MAX_SECONDS: Final = 24 * 3600.0
"""Longest time a server's list stays fresh when its pages carry ``ttlMs``; a larger ``ttlMs``
(a year, say) is lowered to this (CW-05)."""

MCP_CATALOG_REVALIDATE_INTERVAL_SECONDS: Final = 1.0
"""Seconds between the end of one catalog revalidation of a connection and the start of the
next; ``list_changed`` notices arriving meanwhile are folded into that next one, and never more
than one revalidation runs at a time (CW-05)."""

MCP_HELPER_RESULT_MAX_BYTES: Final = 2_000_000
"""Bytes of one ``resources/read`` result (the UTF-8 text and base64 blob characters of its
contents) or one ``prompts/get`` result (its messages as compact UTF-8 JSON); a larger result is
refused whole, never cut, and the connection stays usable (CW-06: 2 MB, decimal, as a tool result)."""

MCP_RESOURCES_PAGE_MAX: Final = 20
"""Resources, resource templates and prompts one ``mcp_resources`` page lists of each server (CW-06)."""

# -- skills served over MCP (CW-09) ------------------------------------------------------------

__all__ += ["MCP_SKILL_BYTES_MAX", "MCP_SKILL_FILES_MAX"]  # appended like the lists above

MCP_SKILL_FILES_MAX: Final = 512
"""Files one skill a server lists may have, ``SKILL.md`` included; a skill listing more is not
kept, and the listing says why (CW-09: the Skills extension's per-skill limit)."""

MCP_SKILL_BYTES_MAX: Final = 16 * 1024 * 1024
"""Bytes all files of one skill may add up to, by the sizes its entry lists; a larger skill is not
kept, and the listing says why (CW-09: the Skills extension's per-skill limit, 16 MiB)."""

# -- text others wrote, as the command line shows it (CW-04) --------------------------------

__all__ += ["CLI_SHOWN_TEXT_MAX_CHARS"]  # appended like the lists above

CLI_SHOWN_TEXT_MAX_CHARS: Final = 2000
"""Characters of one string a server, a project or a model wrote (a tool's name, title or
description, an error, one line of an answer or of command output) that a plain-text CLI view
shows on one line, its control characters already made visible; a longer one is cut and ends
in ``…``. ``--json`` output keeps every string whole (CW-04)."""

# -- plugin bundles that contribute MCP servers (CW-12) --------------------------------------

__all__ += [  # appended like the lists above
    "PLUGIN_BUNDLE_BYTES_MAX",
    "PLUGIN_BUNDLE_FILES_MAX",
    "PLUGIN_NAME_MAX_BYTES",
    "PLUGIN_SERVERS_MAX",
    "PLUGIN_WATCH_INTERVAL_SECONDS",
]

PLUGIN_NAME_MAX_BYTES: Final = 32
"""Bytes of a plugin's name, and of each server name in its manifest; a longer one is refused at
review, naming the field (CW-12)."""

PLUGIN_SERVERS_MAX: Final = 8
"""MCP servers one plugin manifest may contribute; a manifest listing more is refused at review (CW-12)."""

PLUGIN_BUNDLE_FILES_MAX: Final = 256
"""Regular files one plugin bundle may hold, its manifest included, and sub-folders it may have:
every file is part of the content digest taken at review and again before every dispatch; a
bundle with more files or folders is refused (CW-12)."""

PLUGIN_BUNDLE_BYTES_MAX: Final = 8 * 1024 * 1024
"""Bytes all files of one plugin bundle may add up to; a larger bundle is refused before its digest
is finished (CW-12)."""

PLUGIN_WATCH_INTERVAL_SECONDS: Final = 0.5
"""Seconds between two looks of a running Build task at the trust and grants of its plugins'
servers: a disable or revoke withdraws the server (its call in flight cancelled, its process
stopped) within this time, without waiting for the task's next call (CW-12)."""
