"""The engine API's values and errors as JSON, for the control socket and for MCP results (ENG-03).

:func:`to_json` turns any result or request of :mod:`shadowcode.engine.api` into plain
JSON values (dataclass fields in declaration order, enums as their strings, paths as text);
:func:`from_json` validates JSON back into the declared type, so a malformed request is
refused with a :class:`~shadowcode.errors.ProtocolError` instead of reaching the engine.

An error crosses the socket as ``{"code": str, "message": str, "fields": {...}}``: ``code``
is the error class's :attr:`~shadowcode.errors.ShadowcodeError.wire_code` and ``fields`` its
ids and numbers, so the other side raises the same class with the same fields.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, cast

from shadowcode import errors
from shadowcode.errors import ProtocolError, ShadowcodeError
from shadowcode.json_values import json_object

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["error_from_wire", "error_to_wire", "from_json", "from_record", "to_json"]


def to_json(value: Any) -> Any:
    """``value`` as JSON values: dicts, lists, strings, numbers, booleans and None.

    Dataclasses become objects with their fields in order; enums their values; paths their
    text; pydantic models their JSON dump; tuples lists.
    """
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value.value if isinstance(value, enum.Enum) else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: to_json(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in cast("dict[object, object]", value).items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in cast("list[object] | tuple[object, ...]", value)]
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, PurePath):
        return str(value)
    pydantic = sys.modules.get("pydantic")  # imported on first use: no value is a model before it is
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return cast("Any", value).model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not a JSON value of the engine API")


@functools.cache
def _field_names(tp: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(tp))


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


def from_json(tp: Any, data: Any) -> Any:
    """Validate JSON ``data`` as the type ``tp``.

    Raises:
        ProtocolError: ``data`` does not have that type's shape.
    """
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "value"
        raise ProtocolError(f"malformed engine message: {where}: {first['msg']}") from None


def from_record(tp: Any, record: Any) -> Any:
    """Convert an engine record (a store dataclass, a dict, a list of them) into the API type ``tp``.

    Fields are read by name, so a record with the API type's fields (and maybe more) converts.

    Raises:
        ProtocolError: the record lacks a field of ``tp`` or has one of another type.
    """
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_python(record, from_attributes=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "value"
        raise ProtocolError(f"malformed engine record: {where}: {first['msg']}") from None


def _error_classes() -> dict[str, type[ShadowcodeError]]:
    found: dict[str, type[ShadowcodeError]] = {}
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, ShadowcodeError):
            found[cls.wire_code] = cls
    return found


def error_to_wire(exc: ShadowcodeError) -> dict[str, Any]:
    """``{"code", "message", "fields"}`` of an error reply; fields that are not JSON values become text."""
    fields: dict[str, Any] = {}
    for key, value in exc.fields.items():
        try:
            fields[key] = to_json(value)
        except TypeError:
            fields[key] = str(value)
    return {"code": exc.wire_code, "message": exc.message, "fields": fields}


def error_from_wire(doc: Any) -> ShadowcodeError:
    """The error an error reply describes, as its own class with its fields (unknown codes: ShadowcodeError)."""
    reply = json_object(doc)
    if reply is None:
        return ProtocolError("the engine sent a malformed error")
    cls = _error_classes().get(str(reply.get("code")), ShadowcodeError)
    fields = json_object(reply.get("fields")) or {}
    message = str(reply.get("message", "engine error"))
    return cls(message, **fields)
