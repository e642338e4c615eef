"""The engine API's verb table (engine/api.py): complete, consistent, and derived from the declarations.

Every verb declared on ``EngineApi`` has exactly one in-process handler, a unique ``noun/verb``
wire name and request and result types that cross the socket as JSON and back unchanged.

Covers ENG-03.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import JsonValue
from typing_extensions import is_typeddict

from shadowcode import control_methods
from shadowcode.engine.api import (
    DOORS,
    Caller,
    EngineApi,
    McpAttach,
    NoticesQuery,
    OwnerClose,
    OwnerOpen,
    Verb,
    verb,
    verb_named,
    verbs,
)
from shadowcode.engine.remote import RemoteEngine, caller_to_wire
from shadowcode.engine.verbs import HANDLERS, all_handlers, handler
from shadowcode.engine.verbs._registry import handles
from shadowcode.engine.wire import from_json, to_json
from shadowcode.limits import CLEANUP_DEADLINE_SECONDS, OPERATION_DEADLINE_SECONDS
from shadowcode.settings import ModelSettings

pytestmark = pytest.mark.req("ENG-03")

_SPECIAL: dict[Any, Any] = {
    ModelSettings: ModelSettings(name="m", provider="scripted", script="m.json"),
    JsonValue: {"plan": ["step 1", 2, 2.5, True, None]},
    Any: {"any": ["value", 1]},
}


def example(tp: Any) -> Any:
    """A value of the type ``tp`` with every field filled (the first choice of each union)."""
    if tp in _SPECIAL:
        return _SPECIAL[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return None
    if origin in (typing.Union, types.UnionType):
        return example(next(a for a in args if a is not type(None)))
    if origin is Literal:
        return args[0]
    if origin is list:
        return [example(args[0])]
    if origin is tuple:
        return (example(args[0]),)
    if origin is dict:
        return {"key": example(args[1])}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return list(tp)[-1]
    if tp is bool:
        return True
    if tp is int:
        return 7
    if tp is float:
        return 1.5
    if tp is str:
        return "text"
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: example(hints[f.name]) for f in dataclasses.fields(tp)})
    if is_typeddict(tp):
        return {key: example(hint) for key, hint in typing.get_type_hints(tp).items()}
    raise AssertionError(f"no example for {tp!r}: teach this test the new type")


def declared_verbs() -> list[tuple[str, str]]:
    """``(method name, wire name)`` of every method declared with ``@verb`` on EngineApi's parts, in order."""
    return [
        (name, m.__verb__[0])
        for part in reversed(EngineApi.__mro__)
        for name, m in vars(part).items()
        if hasattr(m, "__verb__")
    ]


def test_every_verb_has_exactly_one_handler_and_every_handler_a_verb() -> None:
    names = [name for name, _ in declared_verbs()]
    assert len(names) >= 40
    assert sorted(names) == sorted(all_handlers())
    assert {entry.name for entry in verbs().values()} == set(HANDLERS)


def test_a_verbs_handler_family_is_imported_on_first_use() -> None:
    code = (
        "import sys\n"
        "from shadowcode.engine.verbs import HANDLERS, handler\n"
        "assert not HANDLERS, sorted(HANDLERS)\n"
        "handler('status')\n"
        "assert 'shadowcode.engine.verbs.projects' in sys.modules\n"
        "assert 'shadowcode.engine.verbs.jobs' not in sys.modules\n"
        "assert 'shadowcode.engine.verbs.servers' not in sys.modules\n"
        "assert handler('memory_read') is HANDLERS['memory_read']\n"
        "assert 'shadowcode.engine.verbs.notes' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(KeyError):
        handler("no_such_verb")


def test_a_second_handler_for_a_verb_is_refused() -> None:
    before = handler("memory_read")

    async def another(state: Any, request: Any, caller: Caller) -> Any:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="memory_read already has a handler"):
        handles(EngineApi.memory_read)(another)
    assert HANDLERS["memory_read"] is before


def test_wire_names_are_unique_noun_slash_verb_and_name_their_method() -> None:
    declared = declared_verbs()
    wires = [wire for _, wire in declared]
    assert len(set(wires)) == len(wires) == len(verbs())
    for name, wire in declared:
        assert re.fullmatch(r"[a-z]+/[a-z]+", wire), wire
        assert verbs()[wire].name == name and verb_named(name).wire == wire
    assert not set(DOORS) & set(wires)  # the connection methods are beside the table, not in it


def test_the_connection_doors_take_their_names_from_one_place() -> None:
    assert set(DOORS) == {getattr(control_methods, name) for name in control_methods.__all__}
    assert {door.wire: door.request for door in DOORS.values()} == {
        "owner/open": OwnerOpen,
        "owner/close": OwnerClose,
        "mcp/attach": McpAttach,
        "mcp/notices": NoticesQuery,
    }
    # the wire shapes the stdlib-only relay and older clients send are what the doors validate
    assert from_json(McpAttach, {"project": "/p", "allow_write": True}) == McpAttach("/p", allow_write=True)
    assert from_json(OwnerOpen, {"kind": "relay", "caller": {"project": "/p"}}).caller.project == "/p"
    assert to_json(from_json(OwnerClose, {})) == {"reason": ""}


def test_deadlines_leave_room_for_cleanup_and_for_the_frontends_own_deadline() -> None:
    table = {entry.name: entry for entry in verbs().values()}
    assert all(entry.deadline_seconds > 0 for entry in table.values())
    assert table["job_cancel"].deadline_seconds == CLEANUP_DEADLINE_SECONDS
    assert table["background_stop"].deadline_seconds == CLEANUP_DEADLINE_SECONDS
    for name in ("review", "understand", "doctor", "sqlite_tables", "sqlite_query"):
        assert table[name].deadline_seconds > OPERATION_DEADLINE_SECONDS  # the frontend answers first (SRV-25)


@pytest.mark.parametrize("entry", list(verbs().values()), ids=lambda e: e.wire)
def test_request_and_result_types_cross_the_socket_as_json_and_back_unchanged(entry: Verb) -> None:
    for tp in (entry.request, entry.result):
        value = example(tp)
        sent = json.loads(json.dumps(to_json(value)))  # what the socket carries
        assert from_json(tp, sent) == value, tp
        assert to_json(from_json(tp, sent)) == sent


def test_a_caller_crosses_the_socket_without_its_owner() -> None:
    wire = caller_to_wire(Caller(project=Path("/p"), owner=types.SimpleNamespace(id="own_1"), confined=True))
    assert wire == {
        "project": "/p",
        "allow_write": False,
        "allow_approvals": False,
        "approve_in_host": False,
        "owned": True,
        "confined": True,
    }
    assert json.loads(json.dumps(wire)) == wire


# -- a new verb ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Echo:
    """The request and result of the test verb."""

    text: str
    times: int = 1


class Extended(EngineApi):
    """The engine API with one more verb, declared the way EngineApi declares its own."""

    @verb("echo/repeat", deadline_seconds=3.0)
    async def echo_repeat(self, request: Echo, caller: Caller = Caller()) -> list[Echo]:  # noqa: B008
        """Repeat the text."""
        ...


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch) -> typing.Iterator[None]:
    """Add the test subclass's declaration to EngineApi for the test (the table is EngineApi's own)."""
    monkeypatch.setattr(EngineApi, "echo_repeat", vars(Extended)["echo_repeat"], raising=False)
    verbs.cache_clear()
    verb_named.cache_clear()
    yield
    monkeypatch.undo()
    verbs.cache_clear()
    verb_named.cache_clear()


@pytest.mark.anyio
async def test_a_verb_declared_in_a_subclass_is_one_call_on_either_side_of_the_socket() -> None:
    calls: list[tuple[str, Any, Caller]] = []

    class Recording(Extended):
        async def call_verb(self, name: str, request: Any, caller: Caller) -> Any:
            calls.append((name, request, caller))
            return [request] * request.times

    caller = Caller(project=Path("/p"))
    assert await Recording().echo_repeat(Echo("hi", 2), caller) == [Echo("hi", 2)] * 2
    assert calls == [("echo_repeat", Echo("hi", 2), caller)]
    assert vars(Extended)["echo_repeat"].__verb__ == ("echo/repeat", 3.0)
    assert "echo/repeat" not in verbs()  # a subclass alone does not change the engine's table


@pytest.mark.usefixtures("with_echo")
@pytest.mark.anyio
async def test_a_new_verb_shows_up_in_the_table_and_in_the_remote_client() -> None:
    entry = verbs()["echo/repeat"]
    assert entry == Verb("echo_repeat", "echo/repeat", Echo, list[Echo], 3.0)
    assert verb_named("echo_repeat") is entry
    assert "echo_repeat" not in HANDLERS  # the completeness test above would now fail: it can fail

    sent: list[tuple[str, dict[str, Any], float]] = []

    class Channel:
        async def call(self, method: str, params: dict[str, Any], *, deadline: float) -> Any:
            sent.append((method, params, deadline))
            return [to_json(from_json(Echo, params["request"]))]

    remote = RemoteEngine(profile=None, control=Channel())  # type: ignore[arg-type]
    assert await remote.echo_repeat(Echo("hi"), Caller()) == [Echo("hi")]  # type: ignore[attr-defined]
    assert sent == [("echo/repeat", {"request": {"text": "hi", "times": 1}, "caller": caller_to_wire(Caller())}, 3.0)]


@pytest.mark.usefixtures("with_echo")
@pytest.mark.anyio
async def test_a_result_wanted_as_json_is_encoded_once_on_either_side_of_the_socket() -> None:
    class Channel:
        async def call(self, method: str, params: dict[str, Any], *, deadline: float) -> Any:
            return [{"text": params["request"]["text"], "times": "not checked here"}]

    remote = RemoteEngine(profile=None, control=Channel())  # type: ignore[arg-type]
    declared = Extended.echo_repeat
    # over the socket: the reply's JSON as it came, never decoded into Echo and encoded again
    assert await remote.call_as_json(declared, Echo("hi"), Caller()) == [{"text": "hi", "times": "not checked here"}]

    class Local(Extended):
        async def call_verb(self, name: str, request: Any, caller: Caller) -> Any:
            return [request] * request.times

    # in process: the result encoded here, once
    assert await Local().call_as_json(declared, Echo("hi", 2), Caller()) == [{"text": "hi", "times": 2}] * 2
    with pytest.raises(TypeError, match="not a verb"):
        await Local().call_as_json(Local.call_verb, Echo("hi"), Caller())  # type: ignore[arg-type]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_each_name_is_read_from_the_part_that_exports_it() -> None:
    import importlib

    from shadowcode.engine import api
    from shadowcode.engine.api._names import PART_OF

    for name, part in PART_OF.items():
        assert getattr(api, name) is getattr(importlib.import_module(f"shadowcode.engine.api.{part}"), name)
    assert not set(PART_OF.values()) & {"_base", "_names", "declared"}


def test_the_name_table_is_generated_from_the_parts() -> None:
    done = subprocess.run(
        [sys.executable, "ci/api_names.py", "--check"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_api_builds_a_parts_types_only_when_one_of_them_is_read() -> None:
    code = (
        "import sys\n"
        "from shadowcode.engine.api import Caller, EngineApi, verb_name\n"
        "parts = ('engine', 'projects', 'inspection', 'notes', 'jobs', 'servers', 'plugins', 'doors')\n"
        "loaded = lambda: sorted(p for p in parts if f'shadowcode.engine.api.{p}' in sys.modules)\n"
        "assert loaded() == [], loaded()\n"
        "assert 'pydantic' not in sys.modules\n"
        "assert verb_name(EngineApi.status) == 'status'\n"
        "from shadowcode.engine.api import Status\n"
        "assert loaded() == ['projects'], loaded()\n"
        "import shadowcode.engine.api as api\n"
        "assert api.JobRef.__module__ == 'shadowcode.engine.api.jobs'\n"
        "assert loaded() == ['jobs', 'projects'], loaded()\n"
        "try:\n"
        "    api.NoSuchName\n"
        "except AttributeError as exc:\n"
        "    assert 'NoSuchName' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
