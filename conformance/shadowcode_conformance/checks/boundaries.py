"""Edges of the inspection tools seen from outside: limits at and one past, refusals that change nothing.

Each check here exercises the one rule a careless change would break, with a fixture that
makes the wrong behaviour visible, and verifies every refusal by reading the state back
afterwards (a refusal that still changed something fails):

* ``sessions_filtered_before_limit`` (SRV-08): a profile where another project holds newer
  sessions than the listing limit; this project's listing must still show its own.
* ``sqlite_pragmas_and_row_bound`` (SRV-13): writing pragmas (including ones a read-only
  connection would accept) are refused and the database is unchanged; a query of exactly
  the row bound returns every row untruncated, one row more is cut at the bound.
* ``memory_stale_hash_refused`` (SRV-12): replacing the note with a hash from before the last
  append is refused and the note stays as it was.
* ``understand_saves_only_when_asked`` (SRV-19): the project map is saved only for
  ``save: true`` (on a writable server), never by default or on a read-only server.
* ``result_cap_counts_bytes`` (SRV-25): a tool result of multi-byte characters exactly at
  2,000,000 bytes of UTF-8 is delivered, one byte more is refused, although both are far
  below 2,000,000 characters.

The target is driven only through ``trust``, ``models add`` and ``mcp serve``; the one file
the checks read directly is the project database they create themselves.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread

from shadowcode_conformance.checks.delegation import McpSession, configure_model, open_session
from shadowcode_conformance.context import Context
from shadowcode_conformance.json_values import json_object, json_objects
from shadowcode_conformance.processes import tail
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = [
    "notes_sqlite_map",
    "result_cap_counts_bytes",
    "sessions_filtered_before_limit",
]

RESULT_MAX_BYTES = 2_000_000
"""Bytes of UTF-8 in one tool result (SRV-25: 2 MB, decimal)."""

SQLITE_ROWS_MAX = 500
"""Rows one ``shadow_sqlite`` query returns at most (SRV-13; ShadowCode's documented bound)."""

_COMMAND_TIMEOUT_SECONDS = 30.0
_WAIT_SECONDS = 60.0
_POLL_SECONDS = 0.1
_FINISHED = frozenset({"done", "failed", "cancelled", "interrupted"})
_EDGE_DB = "data/edges.db"


# --- helpers ----------------------------------------------------------------------------


def serve(ctx: Context, workspace: Path, *flags: str) -> AbstractAsyncContextManager[McpSession]:
    """``<target> --workspace W mcp serve FLAGS`` after an ``initialize`` handshake, spoken to line by line."""
    return open_session(ctx, *flags, workspace=workspace)


async def call_raw(s: McpSession, tool: str, arguments: Mapping[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    """``(is_error, text of the first text block, structured content)`` of one ``tools/call``."""
    answer = await s.request("tools/call", {"name": tool, "arguments": dict(arguments)})
    if "error" in answer:
        return True, str(answer["error"].get("message", answer["error"])), {}
    result: dict[str, Any] = answer.get("result") or {}
    content: list[dict[str, Any]] = result.get("content", [])
    texts = [c.get("text", "") for c in content if c.get("type") == "text"]
    data = result.get("structuredContent")
    return result.get("isError") is True, texts[0] if texts else "", json_object(data) or {}


async def read_resource(s: McpSession, uri: str) -> Any:
    """The JSON value of resource ``uri`` (``None`` with a problem noted when unreadable)."""
    answer = await s.request("resources/read", {"uri": uri})
    try:
        return json.loads(answer["result"]["contents"][0]["text"])
    except (KeyError, IndexError, TypeError, ValueError):
        s.problems.append(f"resources/read {uri} gave no JSON text: {str(answer)[:200]}")
        return None


async def wait_done(s: McpSession, job_ids: list[str]) -> bool:
    """Poll ``shadow_jobs get`` until every job in ``job_ids`` is finished (bounded, in order)."""
    with anyio.move_on_after(_WAIT_SECONDS):
        for job_id in job_ids:
            while _status(await s.job(job_id)) not in _FINISHED:
                if s.problems:
                    return False
                await anyio.sleep(_POLL_SECONDS)
        return True
    s.problems.append(f"{len(job_ids)} quick jobs did not all finish within {_WAIT_SECONDS:g} s")
    return False


async def trust(ctx: Context, workspace: Path, level: str = "workspace") -> str:
    """Trust ``workspace`` at ``level``; a problem sentence or ``""``."""
    argv = ctx.target_argv("trust", "--level", level, str(workspace), workspace=workspace)
    done = await ctx.run(argv, timeout_seconds=_COMMAND_TIMEOUT_SECONDS)
    if done.returncode != 0:
        return f"`trust --level {level} {workspace}` exited {done.returncode}: {tail(done.stderr)}"
    return ""


async def refused(s: McpSession, tool: str, arguments: Mapping[str, Any]) -> None:
    """Call a tool that must answer with an error; a success is noted on ``s``."""
    is_error, text, _ = await call_raw(s, tool, arguments)
    if not is_error:
        s.problems.append(f"{tool} {dict(arguments)} was not refused: {text[:200]}")


def _result(problems: list[str], success: str) -> CheckResult:
    return CheckResult(False, "; ".join(problems)) if problems else CheckResult(True, success)


# --- SRV-08: filter by project before the listing limit -----------------------------------


async def _quick_jobs(s: McpSession, prompts: list[str]) -> list[str]:
    ids: list[str] = []
    for prompt in prompts:
        got = await s.ok("shadow_run", {"prompt": prompt, "mode": "plan"})
        if got.get("job_id"):
            ids.append(str(got["job_id"]))
    if len(ids) == len(prompts):
        await wait_done(s, ids)
    return ids


def _status(got: Mapping[str, Any]) -> Any:
    """The ``status`` of the job in a ``shadow_jobs get`` answer (None when it names none)."""
    job: dict[str, Any] = got.get("job") or {}
    return job.get("status")


def _session_ids(data: Mapping[str, Any]) -> list[str]:
    return [str(x.get("id")) for x in json_objects(data.get("sessions"))]


def _log_lines(log: Path) -> int:
    try:
        return len(log.read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


async def _no_agent_unasked(a: McpSession, log: Path, own: list[str]) -> tuple[list[str], list[str]]:
    """Goals start no agent (SRV-14); shadow_doctor asks the model only with ``probe_model`` (SRV-19).

    Returns:
        ``(goal problems, doctor problems)``, read from the model's request log and the listing.
    """
    goals: list[str] = []
    doctor: list[str] = []
    before = _log_lines(log)
    created = await a.ok("shadow_goal", {"action": "create", "title": "conformance goal"})
    goal: dict[str, Any] = created.get("goal") or {}
    if goal.get("id"):
        await a.ok("shadow_goal", {"action": "advance", "goal_id": goal["id"], "note": "step one"})
        await a.ok("shadow_goal", {"action": "abandon", "goal_id": goal["id"], "note": "done with it"})
    if (grew := _log_lines(log) - before) != 0:
        goals.append(f"goal create, advance and abandon made {grew} model request(s)")
    if (listed := _session_ids(await a.ok("shadow_sessions", {"limit": 50}))) != own:
        goals.append(f"after the goal calls the sessions are {listed}, expected only {own}")
    before = _log_lines(log)
    await a.ok("shadow_doctor", {})
    await a.ok("shadow_doctor", {"probe_model": False})
    if (grew := _log_lines(log) - before) != 0:
        doctor.append(f"shadow_doctor without probe_model made {grew} model request(s)")
    before = _log_lines(log)
    await a.ok("shadow_doctor", {"probe_model": True})
    if (grew := _log_lines(log) - before) != 1:
        doctor.append(f"shadow_doctor with probe_model made {grew} model request(s), expected exactly 1")
    return goals, doctor


async def _foreign_task_refused(a: McpSession, own: str, foreign: str) -> None:
    """A's server takes its own task id for a task note but refuses B's, for notes, checkpoints and rollback."""
    await a.ok("shadow_memory", {"action": "append", "scope": "task", "task_id": own, "text": "own task note"})
    append = {"action": "append", "scope": "task", "task_id": foreign, "text": "from project A"}
    await refused(a, "shadow_memory", append)
    await refused(a, "shadow_memory", {"action": "read", "scope": "task", "task_id": foreign})
    await refused(a, "shadow_rollback", {"task_id": foreign, "confirm": True})
    is_error, _, data = await call_raw(a, "shadow_checkpoint", {"task_id": foreign})
    if not is_error and data.get("checkpoints"):
        a.problems.append(f"shadow_checkpoint listed checkpoints of project B's task: {data}")


@check("boundaries:sessions_filtered_before_limit", covers=["SRV-08"], timeout_seconds=120)
async def sessions_filtered_before_limit(ctx: Context) -> CheckResult:
    """Sessions are filtered by project before the listing limit (SRV-08).

    Project A gets one session, then project B (same profile) gets three newer ones. In A,
    ``shadow_sessions`` with ``limit`` 1 and 3 must list exactly A's session: a listing that
    took the newest sessions of the profile first and filtered afterwards shows none. In B,
    ``limit`` 2 must list B's two newest and ``limit`` 50 B's three, never A's.

    Tasks are checked against the canonical project too: A's server takes its own task id
    for a task note but refuses B's (append, read, rollback; ``shadow_checkpoint`` lists no
    checkpoint of it), and B's task note is unchanged afterwards.
    """
    problem, log = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    other = ctx.scratch / "other-project"
    other.mkdir()
    other = other.resolve()
    (other / "README.md").write_text("# another project of the same profile\n", encoding="utf-8")
    if problem := await trust(ctx, other):
        return CheckResult(False, problem)
    asked: tuple[list[str], list[str]] | None = None
    async with serve(ctx, ctx.project, "--allow-write") as a:
        own = await _quick_jobs(a, ["conformance quick: a session of project A"])
        async with serve(ctx, other, "--allow-write") as b:
            theirs = await _quick_jobs(b, [f"conformance quick: session {n} of project B" for n in range(3)])
            for limit, expected in ((2, theirs[::-1][:2]), (50, theirs[::-1])):
                listed = _session_ids(await b.ok("shadow_sessions", {"limit": limit}))
                if listed != expected:
                    b.problems.append(f"limit {limit} listed {listed}, expected B's newest {expected}")
        if not b.problems and len(own) == 1 and len(theirs) == 3:
            for limit in (1, 3):
                listed = _session_ids(await a.ok("shadow_sessions", {"limit": limit}))
                if listed != own:
                    a.problems.append(
                        f"limit {limit} listed {listed}, expected A's own session {own} "
                        "(filtered after the limit, the newer sessions of project B crowd it out)"
                    )
            listed = _session_ids(await read_resource(a, "shadow://sessions") or {})
            if listed != own:
                a.problems.append(f"shadow://sessions listed {listed}, expected {own}")
            await _foreign_task_refused(a, own[0], theirs[0])
            asked = await _no_agent_unasked(a, log, own)
    if not a.problems and not b.problems and theirs:
        async with serve(ctx, other) as b2:
            note = await b2.ok("shadow_memory", {"action": "read", "scope": "task", "task_id": theirs[0]})
            if "from project A" in json.dumps(note):
                b2.problems.append(f"project A's refused append reached the note of B's task: {note}")
        b.problems += b2.problems
    problems = [f"project A: {p}" for p in a.problems] + [f"project B: {p}" for p in b.problems]
    if not problems and asked:
        goal_problems, doctor_problems = asked
        subs = [
            SubResult(
                "boundaries:goals_start_no_agent",
                ("SRV-14",),
                not goal_problems,
                "; ".join(goal_problems) or "goal create, advance and abandon made no model request and no session",
            ),
            SubResult(
                "boundaries:doctor_probes_only_when_asked",
                ("SRV-19",),
                not doctor_problems,
                "; ".join(doctor_problems)
                or "shadow_doctor sent no model request unasked, exactly one with probe_model",
            ),
        ]
        failed = [sub.name for sub in subs if not sub.ok]
        detail = "A's listing at limit 1 and 3 showed its own session under B's three newer ones"
        return CheckResult(not failed, f"{detail}; failed: {', '.join(failed)}" if failed else detail, subresults=subs)
    return _result(problems, "A's listing at limit 1 and 3 showed its own session under B's three newer ones")


# --- SRV-13: writing pragmas, the row bound ------------------------------------------------


_WRITING_PRAGMAS = (
    "PRAGMA foreign_keys = ON",
    "PRAGMA user_version = 7",
    "PRAGMA application_id = 7",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA cache_size = 5",
    "PRAGMA query_only = 0",
)
"""Pragmas that set something; the first and the last two succeed even on a read-only connection."""


def _make_db(path: Path) -> None:
    path.parent.mkdir(exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE n(i INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO n(i) VALUES (?)", [(i,) for i in range(1, SQLITE_ROWS_MAX + 2)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _db_state(path: Path) -> tuple[Any, ...]:
    """``(user_version, application_id, journal_mode, rows, sha256 of the main file)``."""
    uri = f"file:{path}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        state = tuple(conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("user_version", "application_id"))
        rows = conn.execute("SELECT count(*), sum(i) FROM n").fetchone()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return (*state, mode, tuple(rows), hashlib.sha256(path.read_bytes()).hexdigest())


_MEMORY_READ = {"action": "read"}
_SQLITE = {"action": "query", "path": _EDGE_DB}


async def _sqlite_part(ctx: Context, s: McpSession) -> int:
    """Reading pragma works, writing statements refused, the row bound exact; returns how many were refused."""
    got = await s.ok("shadow_sqlite", _SQLITE | {"sql": "PRAGMA user_version"})
    if got and got.get("rows") not in ([[0]], [{"user_version": 0}]):
        s.problems.append(f"`PRAGMA user_version` read {got.get('rows')}, expected one row holding 0")
    refused_sql = [
        *_WRITING_PRAGMAS,
        "INSERT INTO n(i) VALUES (100000)",
        f"ATTACH DATABASE '{ctx.project / 'data' / 'other.db'}' AS other",
        "SELECT 1; DELETE FROM n",
    ]
    for sql in refused_sql:
        await refused(s, "shadow_sqlite", _SQLITE | {"sql": sql})
    bounds = ((SQLITE_ROWS_MAX, SQLITE_ROWS_MAX, False), (SQLITE_ROWS_MAX + 1, SQLITE_ROWS_MAX, True))
    for limit, rows, truncated in bounds:
        got = await s.ok("shadow_sqlite", _SQLITE | {"sql": f"SELECT i FROM n ORDER BY i LIMIT {limit}"})
        listed = got.get("rows")
        found = cast("list[object]", listed) if isinstance(listed, list) else []
        if got and (len(found) != rows or got.get("truncated") is not truncated):
            s.problems.append(
                f"LIMIT {limit} returned {len(found)} rows with truncated={got.get('truncated')!r}, "
                f"expected {rows} rows with truncated={truncated}"
            )
    return len(refused_sql)


async def _memory_read_only_part(s: McpSession) -> None:
    current = await s.ok("shadow_memory", _MEMORY_READ)
    replace = {"action": "replace", "text": "read-only clobber", "expected_hash": current.get("hash")}
    await refused(s, "shadow_memory", replace)
    if await s.ok("shadow_memory", _MEMORY_READ) != current:
        s.problems.append("a replace on the read-only server changed the note")


async def _memory_part(s: McpSession) -> None:
    await s.ok("shadow_memory", {"action": "append", "text": "conformance note one"})
    stale = await s.ok("shadow_memory", _MEMORY_READ)
    await s.ok("shadow_memory", {"action": "append", "text": "conformance note two"})
    current = await s.ok("shadow_memory", _MEMORY_READ)
    h1, h2 = stale.get("hash"), current.get("hash")
    if not h1 or not h2 or h1 == h2:
        s.problems.append(f"reads gave hashes {h1!r} then {h2!r}: expected two different hashes")
        return
    await refused(s, "shadow_memory", {"action": "replace", "text": "clobbered", "expected_hash": h1})
    after = await s.ok("shadow_memory", _MEMORY_READ)
    if after != current:
        s.problems.append(f"the refused stale-hash replace changed the note: {current} became {after}")
    await s.ok("shadow_memory", {"action": "replace", "text": "conformance replaced", "expected_hash": h2})
    text = json.dumps(await s.ok("shadow_memory", _MEMORY_READ))
    if "conformance replaced" not in text or "note two" in text:
        s.problems.append(f"replace with the current hash did not replace the note: {text[:200]}")


async def _saved_map(s: McpSession) -> Any:
    saved: dict[str, Any] = await read_resource(s, "shadow://project") or {}
    return saved.get("map")


async def _understand_part(s: McpSession, *, writable: bool) -> None:
    if not writable:
        await refused(s, "shadow_understand", {"save": True})
        if await _saved_map(s) is not None:
            s.problems.append("the refused save on the read-only server saved a map")
        return
    for args in ({}, {"save": False}):
        await s.ok("shadow_understand", args)
        if await _saved_map(s) is not None:
            s.problems.append(f"shadow_understand {args} saved a map although not asked to")
    built = await s.ok("shadow_understand", {"save": True})
    saved = await _saved_map(s)
    if not saved or (built.get("map") and saved != built.get("map")):
        s.problems.append(f"save: true did not save the returned map (saved {str(saved)[:80]!r})")


@check("boundaries:notes_sqlite_map", covers=["SRV-12", "SRV-13", "SRV-19"], timeout_seconds=120)
async def notes_sqlite_map(ctx: Context) -> CheckResult:
    """Refusals that change nothing and an exact row bound, reported as three sub-checks (SRV-12, SRV-13, SRV-19).

    The check creates ``data/edges.db`` (WAL mode, table ``n`` with 501 rows) and trusts
    the project at ``workspace``. A read-only server (no ``--allow-write``) comes first,
    then a writable one.

    * ``boundaries:sqlite_pragmas_and_row_bound`` (SRV-13): ``PRAGMA user_version`` reads;
      every pragma that sets a value is refused, also those a read-only connection would
      accept (``foreign_keys``, ``cache_size``, ``query_only``), and so are an ``INSERT``,
      an ``ATTACH`` and two statements; the database is unchanged afterwards and no attached
      file appears. ``LIMIT 500`` gives 500 rows, ``truncated`` false; ``LIMIT 501`` exactly
      500 rows, ``truncated`` true.
    * ``boundaries:memory_stale_hash_refused`` (SRV-12): read-only, a replace with the current
      hash is refused and changes nothing. Writable: append, read (H1), append (H2); replace
      with H1 is refused and the note still reads as at H2; replace with H2 succeeds.
    * ``boundaries:understand_saves_only_when_asked`` (SRV-19): read-only, ``save: true`` is
      refused and ``shadow://project`` still has no map; writable, no ``save`` and ``save:
      false`` save nothing, ``save: true`` saves the map it returns. No project file changes.
    """
    db = ctx.project / _EDGE_DB
    await anyio.to_thread.run_sync(_make_db, db)
    before = await anyio.to_thread.run_sync(_db_state, db)
    files_before = await anyio.to_thread.run_sync(_tree_digest, ctx.project)
    if problem := await trust(ctx, ctx.project):
        return CheckResult(False, problem)
    parts: dict[str, list[str]] = {"sqlite": [], "memory": [], "understand": []}
    refused_count = 0
    async with serve(ctx, ctx.project) as ro:
        for name, part in (
            ("sqlite", lambda: _sqlite_part(ctx, ro)),
            ("memory", lambda: _memory_read_only_part(ro)),
            ("understand", lambda: _understand_part(ro, writable=False)),
        ):
            got = await part()
            refused_count = got if isinstance(got, int) else refused_count
            parts[name] += [f"read-only server: {p}" for p in ro.problems]
            ro.problems.clear()
    async with serve(ctx, ctx.project, "--allow-write") as rw:
        for name, part in (
            ("memory", lambda: _memory_part(rw)),
            ("understand", lambda: _understand_part(rw, writable=True)),
        ):
            await part()
            parts[name] += [f"writable server: {p}" for p in rw.problems]
            rw.problems.clear()
    after = await anyio.to_thread.run_sync(_db_state, db)
    if after[:4] != before[:4]:
        parts["sqlite"].append(f"the refused statements changed the database: {before[:4]} became {after[:4]}")
    if (ctx.project / "data" / "other.db").exists():
        parts["sqlite"].append("the refused ATTACH created data/other.db")
    if await anyio.to_thread.run_sync(_tree_digest, ctx.project) != files_before:
        parts["understand"].append("the project's files changed")
    successes = {
        "sqlite": (
            "sqlite_pragmas_and_row_bound",
            "SRV-13",
            f"{refused_count} writing statements refused, database unchanged; {SQLITE_ROWS_MAX} rows untruncated "
            f"at the bound, {SQLITE_ROWS_MAX} and truncated one past",
        ),
        "memory": (
            "memory_stale_hash_refused",
            "SRV-12",
            "stale-hash and read-only replaces refused with the note unchanged; the current hash replaced it",
        ),
        "understand": (
            "understand_saves_only_when_asked",
            "SRV-19",
            "no map saved by default, by save: false or by a read-only save; save: true saved it",
        ),
    }
    subs = [
        SubResult(f"boundaries:{label}", (ident,), not parts[key], "; ".join(parts[key]) or success)
        for key, (label, ident, success) in successes.items()
    ]
    failed = [sub.name for sub in subs if not sub.ok]
    detail = f"failed: {', '.join(failed)}" if failed else "memory, sqlite and understand edges held"
    return CheckResult(not failed, detail, subresults=subs)


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.parent.name != "data":
            h.update(path.relative_to(root).as_posix().encode() + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


# --- SRV-25: the result cap counts bytes --------------------------------------------------------

_PAD = "\u20ac"
"""The euro sign: three bytes of UTF-8, no JSON escaping."""

_BULK_PROMPT_BYTES = 45_000
"""Bytes of each bulk session's prompt (below any sensible prompt limit; ShadowCode's is 64 KiB)."""

_ADJUSTABLE_MIN_BYTES = 1_000

_SESSIONS_MAX = 50
"""The largest ``shadow_sessions`` limit (SRV-08): the listing at the cap must fit in it."""


def _prompt(size: int, label: str) -> str:
    """A ``conformance quick`` prompt of exactly ``size`` bytes of UTF-8, mostly three-byte characters."""
    head = f"conformance quick: {label} "
    room = size - len(head.encode())
    return head + _PAD * (room // 3) + "a" * (room % 3)


async def _sessions_text(s: McpSession, limit: int) -> tuple[bool, str]:
    """``(is_error, text)`` of one ``shadow_sessions`` listing: an error's message, or the JSON text
    of the result document as the limit counts it (``structuredContent`` written with ``", "`` and
    ``": "`` separators and characters unescaped; the text block is only a summary)."""
    is_error, text, data = await call_raw(s, "shadow_sessions", {"limit": limit})
    if is_error or not data:
        return is_error, text
    return False, json.dumps(data, ensure_ascii=False)


@check("boundaries:result_cap_counts_bytes", covers=["SRV-25"], timeout_seconds=180)
async def result_cap_counts_bytes(ctx: Context) -> CheckResult:
    """The 2 MB result cap counts bytes of UTF-8, exactly at the cap and one past (SRV-25).

    Quick Plan sessions with prompts of three-byte characters are created so that one
    ``shadow_sessions`` listing is exactly 2,000,000 bytes of UTF-8 (about 670,000
    characters): it must be delivered. One more session, one byte longer than the one it
    pushes out of the listing, makes the same listing 2,000,001 bytes: it must be refused
    with an error result. Sizes are measured from the delivered ``structuredContent`` as JSON
    text (the result document the limit counts); entries are assumed to differ only by their
    prompts (fixed-width ids, statuses and timestamps).
    """
    problem, _ = await configure_model(ctx)
    if problem:
        return CheckResult(False, problem)
    async with serve(ctx, ctx.project, "--allow-write") as s:
        found = await _cap_fixture(s)
    return _result(s.problems, found)


async def _cap_fixture(s: McpSession) -> str:
    if len(await _quick_jobs(s, [_prompt(_BULK_PROMPT_BYTES, f"bulk {n}") for n in range(2)])) != 2:
        return ""
    sizes: list[int] = []
    for limit in (1, 2):
        is_error, text = await _sessions_text(s, limit)
        if is_error:
            s.problems.append(f"a listing of {limit} small session(s) was refused: {text[:200]}")
            return ""
        sizes.append(len(text.encode()))
    first, entry = sizes[0], sizes[1] - sizes[0]
    # n + 1 bulk-sized sessions would list as first + n * entry bytes; the newest (the
    # adjustable one) differs from a bulk one only by its prompt, so its prompt makes up the rest.
    n = -(-(RESULT_MAX_BYTES - first) // entry)
    adjustable = _BULK_PROMPT_BYTES - (first + n * entry - RESULT_MAX_BYTES)
    if adjustable < _ADJUSTABLE_MIN_BYTES:
        n, adjustable = n - 1, adjustable + entry
    if n + 2 > _SESSIONS_MAX:
        s.problems.append(f"a session entry of {entry} bytes needs {n + 2} sessions: too many for one listing")
        return ""
    bulk = [_prompt(_BULK_PROMPT_BYTES, f"bulk {k}") for k in range(2, n)]
    if len(await _quick_jobs(s, [*bulk, _prompt(adjustable, "at the cap")])) != len(bulk) + 1:
        return ""
    is_error, text = await _sessions_text(s, n + 1)
    at_cap = len(text.encode())
    if is_error:
        s.problems.append(f"a listing of {RESULT_MAX_BYTES} bytes was refused: {text[:200]}")
    elif at_cap != RESULT_MAX_BYTES:
        s.problems.append(f"the fixture missed: the listing meant to be {RESULT_MAX_BYTES} bytes was {at_cap}")
        return ""
    chars = len(text)
    # One session one byte longer than a bulk one pushes the oldest bulk out of the listing.
    if len(await _quick_jobs(s, [_prompt(_BULK_PROMPT_BYTES + 1, "one past")])) != 1:
        return ""
    is_error, text = await _sessions_text(s, n + 1)
    if not is_error:
        s.problems.append(
            f"a result of {len(text.encode())} bytes ({len(text)} characters) was delivered; "
            f"the cap is {RESULT_MAX_BYTES} bytes"
        )
    return f"{RESULT_MAX_BYTES} bytes ({chars} characters) delivered; {RESULT_MAX_BYTES + 1} bytes refused"
