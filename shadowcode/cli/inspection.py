"""``shadowcode understand``, ``doctor``, ``review`` and ``sqlite``: the project inspections from the
terminal (SRV-13, SRV-19, SRV-20).

Each verb is a frontend over the engine verb its MCP tool calls (shadow_understand,
shadow_doctor, shadow_review, shadow_sqlite), with the same rules and limits: only
``understand --save`` writes (the engine checks trust and level), ``sqlite`` runs one bounded
read-only statement.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shadowcode.cli.context import emit, globals_of, with_engine

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["register"]

_CELL_SHOWN_MAX = 60
"""Characters of one cell ``sqlite`` prints in a table (a display bound; --json has them all)."""


def register(app: typer.Typer) -> None:
    """Add the inspection verbs to the root app."""
    app.command("understand")(understand)
    app.command("doctor")(doctor)
    app.command("review")(review)
    app.command("sqlite")(sqlite)


def understand(
    ctx: typer.Context,
    save: Annotated[bool, typer.Option("--save", help="Also save the map as the project's map (needs trust).")] = False,
) -> None:
    """Print a bounded map of the project: languages, manifests, entry points, tests (SRV-19)."""
    from shadowcode.engine.api import UnderstandRequest

    g = globals_of(ctx)
    found = with_engine(g, lambda api: api.understand(UnderstandRequest(save=save), g.caller()))
    text = found["map"] + ("\n(saved as the project's map)" if found["saved"] else "")
    emit(g, dict(found), text)


def doctor(
    ctx: typer.Context,
    probe_model: Annotated[
        bool, typer.Option("--probe-model", help="Also send one request to the default model.")
    ] = False,
) -> None:
    """Check the project, profile and engine; never repairs. Exit 1 when a check failed (SRV-19)."""
    from shadowcode.engine.api import DoctorRequest
    from shadowcode.engine.wire import to_json

    g = globals_of(ctx)
    found = with_engine(g, lambda api: api.doctor(DoctorRequest(probe_model=probe_model), g.caller()))
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    lines = [f"{marks.get(c.status, c.status)}  {c.name}: {c.detail}" for c in found.checks]
    lines.append("all checks passed" if found.ok else "some checks failed")
    emit(g, to_json(found), "\n".join(lines))
    if not found.ok:
        raise typer.Exit(1)


def review(ctx: typer.Context) -> None:
    """Show the uncommitted changes of the project's git working tree; runs no repository program (SRV-20)."""
    from shadowcode.engine.api import Empty

    g = globals_of(ctx)
    found = with_engine(g, lambda api: api.review(Empty(), g.caller()))
    if not found["git"]:
        emit(g, dict(found), found.get("note") or "not a git working tree")
        return
    head = found.get("head")
    lines = [f"branch {found['branch'] or '(detached)'}" + (f" at {head[:12]}" if head else "")]
    for change in found["changes"]:
        source = f" (from {change['from']})" if "from" in change else ""
        staged = "staged  " if change["staged"] else "unstaged"
        lines.append(f"  {staged} {change['status']:<10} {change['path']}{source}")
    if not found["changes"]:
        lines.append("  no uncommitted changes")
    if found["truncated"]:
        lines.append(f"  ... {found.get('changes_total')} changes in all")
    stat = found["diffstat"]
    if stat:
        lines.append("diffstat: " + ", ".join(f"{k} {v}" for k, v in sorted(stat.items()) if not isinstance(v, dict)))
    emit(g, dict(found), "\n".join(lines))


def _param(text: str) -> JsonValue:
    """A ``--param``: JSON when it parses as JSON (``3``, ``null``, ``"x"``), else the text itself."""
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return text
    return value


def _cell(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= _CELL_SHOWN_MAX else shown[: _CELL_SHOWN_MAX - 3] + "..."


def sqlite(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A database file inside the project.")] = None,
    sql: Annotated[str | None, typer.Argument(help="One read-only statement; omitted: list the tables.")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="A bound parameter for ?, in order; JSON when it parses (3, null), else text."),
    ] = None,
) -> None:
    """List a project database's tables, or run one bounded read-only query on it (SRV-13).

    Opens the file read-only; two statements, a write or a file outside the project are refused.
    """
    from shadowcode.engine.api import SqliteQuery, SqliteTablesRequest
    from shadowcode.errors import UsageError

    g = globals_of(ctx)
    if path is None:
        raise UsageError("sqlite needs the path of a database file inside the project: shadowcode sqlite PATH [SQL]")
    if sql is None:
        if param:
            raise UsageError("--param needs an SQL statement")
        tables = with_engine(g, lambda api: api.sqlite_tables(SqliteTablesRequest(path), g.caller()))
        lines = [
            f"{t['type']:<5} {t['name']}(" + ", ".join(c.get("name", "?") for c in t["columns"]) + ")"
            + (f"  ({t['error']})" if "error" in t else "")
            for t in tables["tables"]
        ]  # fmt: skip
        if tables["truncated"]:
            lines.append("... more tables not shown")
        emit(g, dict(tables), "\n".join(lines) or "no tables")
        return
    params = [_param(p) for p in param] if param else None
    rows = with_engine(g, lambda api: api.sqlite_query(SqliteQuery(path, sql, params), g.caller()))
    lines = [" | ".join(rows["columns"])]
    lines += [" | ".join(_cell(v) for v in row) for row in rows["rows"]]
    lines.append(
        f"({rows['row_count']} row{'s' if rows['row_count'] != 1 else ''}{', truncated' if rows['truncated'] else ''})"
    )
    emit(g, dict(rows), "\n".join(lines))
