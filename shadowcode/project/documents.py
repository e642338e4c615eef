"""The documents the project inspections return, as typed dictionaries (SRV-13, SRV-19, SRV-20).

Their keys are the JSON keys MCP clients read; keys that appear only where they apply are
``NotRequired``.
"""

from __future__ import annotations

from typing import NotRequired

from pydantic import JsonValue
from typing_extensions import TypedDict

__all__ = ["ProjectMapDocument", "Review", "ReviewChange", "SqliteRows", "SqliteTable", "SqliteTables"]


ReviewChange = TypedDict(
    "ReviewChange", {"path": str, "status": str, "staged": bool, "from": NotRequired[str]}
)
"""One changed path of a review; ``from`` names a rename's source."""


class Review(TypedDict):
    """``shadow_review``: the uncommitted changes of the project's git working tree (SRV-20).

    ``head`` and ``changes_total`` are present for a git project, ``note`` when it is not one.
    """

    git: bool
    branch: str | None
    changes: list[ReviewChange]
    diffstat: dict[str, JsonValue]
    truncated: bool
    head: NotRequired[str | None]
    changes_total: NotRequired[int]
    note: NotRequired[str]


class ProjectMapDocument(TypedDict):
    """A bounded Markdown map of the project and what it found (SRV-19).

    ``manifests`` entries carry ``path`` and ``kind``, and ``name``, ``entry_points`` or ``note``
    where found; ``tests`` entries ``name``, ``command`` (argv) and ``reason``.
    """

    map: str
    files: int
    truncated: bool
    languages: dict[str, int]
    manifests: list[dict[str, JsonValue]]
    entry_points: list[str]
    tests: list[dict[str, JsonValue]]


class SqliteTable(TypedDict):
    """A table or view and its columns; ``error`` when its columns could not be read."""

    name: str
    type: str
    columns: list[dict[str, str]]
    error: NotRequired[str]


class SqliteTables(TypedDict):
    """The tables and views of a project database, by name (SRV-13)."""

    path: str
    tables: list[SqliteTable]
    truncated: bool


class SqliteRows(TypedDict):
    """A bounded query answer (SRV-13)."""

    path: str
    columns: list[str]
    rows: list[list[JsonValue]]
    row_count: int
    truncated: bool
