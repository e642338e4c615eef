"""Model scripts are validated when they load; a bad one is a ConfigError naming file and field (ENG-05)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shadowcode.agent.providers.script import load_script
from shadowcode.errors import ConfigError
from shadowcode.limits import MODEL_SCRIPT_DELAY_MAX_SECONDS, MODEL_SCRIPT_MAX_BYTES


def _turn(**fields: Any) -> dict[str, Any]:
    return {"tasks": [{"match": "", "turns": [fields]}]}


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    ("script", "field"),
    [
        ({"tasks": [{"match": "", "turns": [{"content": "x", "colour": "red"}]}]}, r"tasks\[0\]\.turns\[0\]\.colour"),
        ({"tasks": [{"match": "", "turns": []}], "extra": 1}, r"extra"),
        ({"tasks": [{"turns": []}]}, r"tasks\[0\]\.match"),
        ({"tasks": [{"match": "(unclosed", "turns": []}]}, r"tasks\[0\]\.match: .*regular expression"),
        (_turn(delay_seconds=-1), r"tasks\[0\]\.turns\[0\]\.delay_seconds"),
        (_turn(tool_calls=[{"arguments": {}}]), r"tasks\[0\]\.turns\[0\]\.tool_calls\[0\]\.name"),
        (_turn(tool_calls=[{"name": "x", "arguments": [1, 2]}]), r"tool_calls\[0\]\.arguments"),
        ({"tasks": "all of them"}, r"tasks"),
        ({}, r"tasks"),
    ],
)
def test_an_invalid_script_is_refused_naming_file_and_field(
    write_script: Callable[..., Path], script: dict[str, Any], field: str
) -> None:
    path = write_script(script, "broken-script.yaml")
    with pytest.raises(ConfigError, match=field) as caught:
        load_script(path)
    assert "broken-script.yaml" in caught.value.message
    assert caught.value.exit_code == 2


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("bad.yaml", "tasks: [unclosed\n", "not valid YAML"),
        ("bad.json", '{"tasks": [}', "not valid JSON"),
        ("list.yaml", "- just\n- a list\n", "must be a mapping"),
        ("empty.yaml", "", "must be a mapping"),
    ],
)
def test_a_script_that_does_not_parse_is_refused_naming_the_file(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as caught:
        load_script(path)
    assert name in caught.value.message


@pytest.mark.req("ENG-05")
def test_a_script_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"tasks: []\n# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_script(path)


def _script_of_size(path: Path, size: int) -> Path:
    head = b'tasks: [{match: "", turns: [{content: ok}]}]\n#'
    path.write_bytes(head + b"x" * (size - len(head) - 1) + b"\n")
    assert path.stat().st_size == size
    return path


@pytest.mark.req("ENG-05")
def test_a_script_at_the_size_limit_loads(tmp_path: Path) -> None:
    script = load_script(_script_of_size(tmp_path / "big.yaml", MODEL_SCRIPT_MAX_BYTES))
    assert script.tasks[0].turns[0].content == "ok"


@pytest.mark.req("ENG-05")
def test_a_script_one_byte_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"larger than {MODEL_SCRIPT_MAX_BYTES} bytes"):
        load_script(_script_of_size(tmp_path / "big.yaml", MODEL_SCRIPT_MAX_BYTES + 1))


@pytest.mark.req("ENG-05")
def test_a_turn_delay_at_the_limit_is_accepted(write_script: Callable[..., Path]) -> None:
    script = load_script(write_script(_turn(delay_seconds=MODEL_SCRIPT_DELAY_MAX_SECONDS)))
    assert script.tasks[0].turns[0].delay_seconds == MODEL_SCRIPT_DELAY_MAX_SECONDS


@pytest.mark.req("ENG-05")
def test_a_turn_delay_just_past_the_limit_is_refused(write_script: Callable[..., Path]) -> None:
    past = math.nextafter(MODEL_SCRIPT_DELAY_MAX_SECONDS, math.inf)
    with pytest.raises(ConfigError, match=r"turns\[0\]\.delay_seconds"):
        load_script(write_script(_turn(delay_seconds=past), "late.json"))


@pytest.mark.req("ENG-05")
def test_the_sample_scripts_in_fixtures_are_valid() -> None:
    folder = Path(__file__).resolve().parents[3] / "conformance/shadowcode_conformance/fixtures" / "scripts"
    paths = sorted(folder.iterdir())
    assert paths
    for path in paths:
        assert load_script(path).tasks
