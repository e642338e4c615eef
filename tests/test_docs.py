"""Docs and set-up stay true: generated limits table, README commands, .ci/run, public names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import shadowcode
import shadowcode.limits as limits

REPO = Path(__file__).resolve().parents[1]


def test_limits_doc_is_generated_from_limits_py() -> None:
    done = subprocess.run(
        [sys.executable, "ci/limits_doc.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("script", "target"),
    [
        ("ci/limits_doc.py", "docs/limits.md"),
        ("ci/cli_doc.py", "docs/cli-reference.md"),
        ("ci/api_names.py", "shadowcode/engine/api/_names.py"),
    ],
)
def test_a_generating_script_refuses_an_unknown_argument_and_writes_nothing(script: str, target: str) -> None:
    before = (REPO / target).stat().st_mtime_ns
    done = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, encoding="utf-8", timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"usage: python {script} [--check]\n")
    assert (REPO / target).stat().st_mtime_ns == before


def test_every_limit_is_exported_named_with_a_unit_and_documented() -> None:
    names = [n for n in vars(limits) if n.isupper() and n != "TYPE_CHECKING"]  # the flag is not a limit
    assert sorted(limits.__all__) == sorted(names)
    assert len(set(limits.__all__)) == len(limits.__all__)  # groups appended with `+=`, each name once
    units = ("_BYTES", "_SECONDS", "_MAX", "_CHARS")
    assert [n for n in names if not any(u in n for u in units)] == []
    source = (REPO / "shadowcode" / "limits.py").read_text(encoding="utf-8")
    for name in names:
        assert re.search(rf"^{name}: Final = .+\n\"\"\"", source, re.M), f"{name} needs a docstring"


def test_public_names_are_sorted() -> None:
    assert shadowcode.__all__ == sorted(shadowcode.__all__)


@pytest.mark.req("PKG-02")
def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert commands == ["bash ci/demo", "bash ci/test"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash ci/test" in ci_run


def test_readme_links_point_at_files_that_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (REPO / target).exists(), target


def test_cli_reference_is_generated_from_help_and_every_command_has_help() -> None:
    done = subprocess.run(
        [sys.executable, "ci/cli_doc.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(REPO / "ci"))
    try:
        import cli_doc
    finally:
        sys.path.remove(str(REPO / "ci"))
    missing = [name for name, cmd, _ in cli_doc.commands() if not (getattr(cmd, "help", None) or "").strip()]
    assert missing == []


def test_no_tracked_text_file_holds_a_merge_conflict_marker() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    marker = re.compile(rb"^(<<<<<<< |>>>>>>> |=======$)", re.M)
    found = []
    for name in listed.stdout.decode("utf-8").split("\0"):
        path = REPO / name
        if not name or not path.is_file() or path.suffix in {".lock", ".pyz", ".whl", ".db"}:
            continue
        head = path.read_bytes()
        if b"\0" not in head[:1024] and marker.search(head):
            found.append(name)
    assert found == []
