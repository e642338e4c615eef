"""Test command detection for shadow_test and the project map (SRV-17, SRV-19)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shadowcode.limits import UNDERSTAND_READ_MAX_BYTES
from shadowcode.project.test_detection import detect_test_commands, makefile_has_target
from tests.support.deadline import at_once


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = (tmp_path / "p").resolve()
    path.mkdir()
    return path


def _names(root: Path) -> list[str]:
    return [c["name"] for c in detect_test_commands(root)]


@pytest.mark.req("SRV-17")
def test_empty_project_has_no_candidates(root: Path) -> None:
    assert detect_test_commands(root) == []


@pytest.mark.req("SRV-17")
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("pytest.ini", "[pytest]\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n"),
        ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = tests\n"),
        ("tox.ini", "[pytest]\n"),
        ("tests/test_core.py", "def test_x():\n    pass\n"),
        ("test/unit/test_deep.py", "def test_x():\n    pass\n"),
    ],
)
def test_pytest_is_detected_from_each_of_its_signs(root: Path, name: str, content: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(content, encoding="utf-8")
    assert detect_test_commands(root) == [
        {"name": "pytest", "command": ["python3", "-m", "pytest"], "reason": detect_test_commands(root)[0]["reason"]}
    ]


@pytest.mark.req("SRV-17")
def test_pytest_runs_through_the_project_virtualenv_when_present(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").touch()
    assert detect_test_commands(root)[0]["command"] == [".venv/bin/python", "-m", "pytest"]


@pytest.mark.req("SRV-17")
def test_pyproject_without_pytest_and_tests_without_test_files_are_not_pytest(root: Path) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "helpers.py").touch()
    assert detect_test_commands(root) == []


@pytest.mark.req("SRV-17")
def test_npm_test_script_is_detected_but_the_init_placeholder_is_not(root: Path) -> None:
    placeholder = {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}
    (root / "package.json").write_text(json.dumps(placeholder), encoding="utf-8")
    assert detect_test_commands(root) == []
    (root / "package.json").write_text(json.dumps({"scripts": {"test": "node --test"}}), encoding="utf-8")
    assert detect_test_commands(root) == [
        {"name": "npm", "command": ["npm", "test"], "reason": "package.json scripts.test: node --test"}
    ]
    (root / "pnpm-lock.yaml").touch()
    assert detect_test_commands(root)[0]["command"] == ["pnpm", "test"]


@pytest.mark.req("SRV-17")
def test_cargo_go_and_make_are_detected(root: Path) -> None:
    (root / "Cargo.toml").write_text("[package]\nname = 'x'\n", encoding="utf-8")
    (root / "go.mod").write_text("module example.com/x\n", encoding="utf-8")
    (root / "Makefile").write_text(".PHONY: test\ntest: build\n\tgo test ./...\n", encoding="utf-8")
    found = detect_test_commands(root)
    assert [(c["name"], c["command"]) for c in found] == [
        ("cargo", ["cargo", "test"]),
        ("go", ["go", "test", "./..."]),
        ("make", ["make", "test"]),
    ]


@pytest.mark.req("SRV-17")
def test_several_candidates_are_all_listed_in_a_fixed_order(root: Path) -> None:
    (root / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "package.json").write_text('{"scripts": {"test": "jest"}}', encoding="utf-8")
    assert _names(root) == ["pytest", "npm", "make"]


@pytest.mark.req("SRV-17")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("test:\n\techo\n", True),
        ("all test: deps\n", True),
        ("test:: more\n", True),
        (".PHONY: test\n", False),
        ("test := value\n", False),
        ("test ::= value\n", False),
        ("TESTS = a:b\n", False),
        ("\ttest: not a rule (recipe line)\n", False),
        ("# test:\n", False),
        ("tests:\n", False),
    ],
)
def test_makefile_rule_detection_is_exact(text: str, expected: bool) -> None:
    assert makefile_has_target(text, "test") is expected


@pytest.mark.req("SRV-17")
def test_manifest_at_the_read_limit_is_used_and_one_byte_more_is_not(root: Path) -> None:
    head = '{"scripts": {"test": "jest"}, "description": "'
    tail = '"}'
    at = head + "x" * (UNDERSTAND_READ_MAX_BYTES - len(head) - len(tail)) + tail
    assert len(at.encode()) == UNDERSTAND_READ_MAX_BYTES
    (root / "package.json").write_text(at, encoding="utf-8")
    assert _names(root) == ["npm"]
    (root / "package.json").write_text(at + " ", encoding="utf-8")
    assert _names(root) == []


@pytest.mark.req("SRV-17")
def test_manifest_linked_from_outside_the_project_is_ignored(root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.json").write_text('{"scripts": {"test": "jest"}}', encoding="utf-8")
    (root / "package.json").symlink_to(tmp_path / "elsewhere.json")
    assert detect_test_commands(root) == []


@pytest.mark.req("SRV-17", "SRV-19")
@pytest.mark.parametrize("name", ["pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "package.json", "Makefile"])
def test_a_fifo_named_like_a_test_configuration_is_not_waited_on(root: Path, name: str) -> None:
    os.mkfifo(root / name)
    assert at_once(lambda: detect_test_commands(root), fifos=[root / name]) == []
