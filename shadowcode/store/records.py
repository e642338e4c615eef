"""What every repository record shares: a frozen dataclass that turns into today's JSON shape.

A record's fields are named exactly as the columns (or the JSON keys a client reads), in the
order a client sees them. :meth:`Record.as_dict` is the one way a record becomes JSON:
``StrEnum`` members become their plain string, tuples become lists, nested records become
dicts, ``None`` stays ``None``. Decoding a stored JSON column or a vocabulary value that does
not parse raises :class:`StoreError` here, never ``ValueError`` at a caller.
"""

from __future__ import annotations

import json
from dataclasses import fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar, cast

from shadowcode.errors import StoreError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["Record", "decode_json", "encode_json", "vocabulary"]

_E = TypeVar("_E", bound=StrEnum)


class Record:
    """Base of the store's frozen dataclasses (``@dataclass(frozen=True, slots=True)``)."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict: field names as keys, in field order."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(cast("DataclassInstance", self))}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.as_dict()
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple):
        return [_plain(v) for v in cast("tuple[object, ...]", value)]
    return value


def encode_json(value: Any) -> str:
    """The text stored in a JSON column (UTF-8 kept as is)."""
    return json.dumps(value, ensure_ascii=False)


def decode_json(text: str, what: str) -> Any:
    """Decode a stored JSON column.

    Raises:
        StoreError: the stored text is not JSON (``what`` names the column).
    """
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"the stored {what} is not valid JSON") from exc


def vocabulary(kind: type[_E], value: object, what: str) -> _E:
    """Map a stored string to its ``StrEnum`` member.

    Raises:
        StoreError: the stored value is not a member (``what`` names the column).
    """
    try:
        return kind(value)
    except ValueError as exc:
        raise StoreError(f"the stored {what} {value!r} is not one of {', '.join(kind)}") from exc
