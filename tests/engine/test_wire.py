"""The engine API as JSON (engine/wire.py): values, malformed requests, and typed errors crossing the socket.

Covers ENG-03.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import shadowcode
from shadowcode import errors
from shadowcode.engine.api import JobRef, MemoryAppend, ProjectInfo, TaskRequest
from shadowcode.engine.wire import error_from_wire, error_to_wire, from_json, to_json
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.errors import ProtocolError, ShadowcodeError

pytestmark = pytest.mark.req("ENG-03")

ERROR_CLASSES: list[type[ShadowcodeError]] = [
    cls
    for name in errors.__all__
    if isinstance(cls := getattr(errors, name), type) and issubclass(cls, ShadowcodeError)
]


def across(exc: ShadowcodeError) -> ShadowcodeError:
    """``exc`` sent as an error reply and read back on the other side."""
    return error_from_wire(json.loads(json.dumps(error_to_wire(exc))))


def every_subclass(cls: type[ShadowcodeError]) -> list[type[ShadowcodeError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *every_subclass(sub)]
    return found


# -- errors ------------------------------------------------------------------------------------------


def test_the_error_classes_have_distinct_wire_codes() -> None:
    codes = [cls.wire_code for cls in ERROR_CLASSES]
    assert len(ERROR_CLASSES) >= 13 and len(set(codes)) == len(codes)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_crosses_the_socket_as_itself_with_its_message_and_fields(
    cls: type[ShadowcodeError],
) -> None:
    sent = cls("something went wrong", task_id="task_0123", paths=["a.txt", "b/c.txt"], count=3, ok=False)
    doc = error_to_wire(sent)
    assert doc["code"] == cls.wire_code
    back = across(sent)
    assert type(back) is cls
    assert back.message == "something went wrong"
    assert back.fields == {"task_id": "task_0123", "paths": ["a.txt", "b/c.txt"], "count": 3, "ok": False}
    assert back.exit_code == cls.exit_code and back.code == cls.code


def test_an_error_subclass_defined_elsewhere_arrives_as_its_nearest_error_class() -> None:
    for info in pkgutil.walk_packages(shadowcode.__path__, "shadowcode."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    elsewhere = [cls for cls in every_subclass(ShadowcodeError) if cls not in ERROR_CLASSES]
    assert elsewhere, "no error subclass outside shadowcode.errors: this test checks nothing"
    for cls in elsewhere:
        assert "wire_code" not in vars(cls), f"{cls.__qualname__} has its own wire code: list it in shadowcode.errors"
        nearest = next(base for base in cls.__mro__ if base in ERROR_CLASSES)
        exc = ShadowcodeError.__new__(cls)
        ShadowcodeError.__init__(exc, "from elsewhere", server="config:x")
        back = across(exc)
        assert type(back) is nearest and back.message == "from elsewhere" and back.fields == {"server": "config:x"}


def test_fields_that_are_not_json_values_travel_as_text() -> None:
    back = across(errors.ToolError("bad path", path=Path("/p/a.txt"), level=PermissionLevel.WORKSPACE, what=object))
    assert back.fields == {"path": "/p/a.txt", "level": "workspace", "what": str(object)}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"code": "from_a_newer_engine", "message": "new trouble", "fields": {"x": 1}}, "new trouble"),
        ({"code": None, "message": "no code"}, "no code"),
        ({"type": "PolicyError", "message": "the old shape"}, "the old shape"),
        ({"code": "policy", "fields": "not an object"}, "engine error"),
    ],
    ids=["unknown-code", "null-code", "old-shape", "no-message"],
)
def test_an_unknown_or_incomplete_error_becomes_a_plain_shadowcode_error(doc: dict[str, Any], message: str) -> None:
    back = error_from_wire(doc)
    assert isinstance(back, ShadowcodeError) and back.message == message
    if doc.get("code") != "policy":
        assert type(back) is ShadowcodeError
    assert back.fields == (doc["fields"] if isinstance(doc.get("fields"), dict) else {})


@pytest.mark.parametrize("doc", [None, "policy", ["policy"], 3])
def test_an_error_reply_that_is_not_an_object_is_a_protocol_error(doc: Any) -> None:
    back = error_from_wire(doc)
    assert type(back) is ProtocolError and "malformed error" in back.message


# -- values and malformed requests ---------------------------------------------------------------------


def test_values_become_plain_json_and_come_back_typed() -> None:
    request = TaskRequest("go", TaskMode.PLAN, PermissionLevel.WORKSPACE, None)
    assert to_json(request) == {"prompt": "go", "mode": "plan", "level": "workspace", "model": None}
    assert from_json(TaskRequest, to_json(request)) == request
    assert from_json(TaskRequest, {"prompt": "go"}) == TaskRequest("go")  # defaults fill the rest
    info = ProjectInfo("/p", True, PermissionLevel.ELEVATED)
    assert to_json(info) == {"path": "/p", "trusted": True, "level": "elevated"}
    assert to_json((PurePosixPath("/a"), {1: TaskMode.BUILD})) == ["/a", {"1": "build"}]
    with pytest.raises(TypeError, match="not a JSON value"):
        to_json(object())


@pytest.mark.parametrize(
    ("tp", "data", "where"),
    [
        (TaskRequest, {"mode": "build"}, "prompt"),
        (TaskRequest, {"prompt": "go", "mode": "deploy"}, "mode"),
        (TaskRequest, {"prompt": "go", "level": "root"}, "level"),
        (TaskRequest, {"prompt": ["go"]}, "prompt"),
        (JobRef, {"job_id": 5}, "job_id"),
        (JobRef, ["task_1"], "value"),
        (MemoryAppend, {"text": "x", "scope": "everything"}, "scope"),
    ],
    ids=[
        "missing-field",
        "unknown-mode",
        "unknown-level",
        "list-for-text",
        "number-for-id",
        "not-an-object",
        "bad-literal",
    ],
)
def test_a_malformed_request_is_refused_with_a_protocol_error_naming_the_field(tp: Any, data: Any, where: str) -> None:
    with pytest.raises(ProtocolError, match=f"malformed engine message: {where}") as caught:
        from_json(tp, data)
    assert caught.value.wire_code == "protocol"
