"""The native file tools: confinement, bounds, checkpoint-before-write and rollback (ENG-04, ENG-06)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from shadowcode.agent import files
from shadowcode.agent.observations import Observations
from shadowcode.engine.api import RollbackResult
from shadowcode.engine.checkpoints import Checkpoints, content_sha256
from shadowcode.engine.state import EngineState
from shadowcode.errors import ConflictError, NotFound, ToolError
from shadowcode.limits import (
    FILE_LIST_ENTRIES_MAX,
    FILE_READ_MAX_BYTES,
    FILE_WRITE_MAX_BYTES,
    SEARCH_FILE_MAX_BYTES,
    SEARCH_FILES_MAX,
    SEARCH_LINE_MAX_CHARS,
    SEARCH_MATCHES_MAX,
    SEARCH_PATTERN_MAX_CHARS,
)

TASK = "task_files"


@pytest.fixture
def root(state: EngineState, project_dir: Path) -> Path:
    path = state.project_at(project_dir).path
    now = int(time.time())
    state.store.execute(
        "INSERT INTO tasks (id, project, mode, status, prompt, created_at, updated_at) "
        "VALUES (?, ?, 'build', 'running', 'edit files', ?, ?)",
        (TASK, str(path), now, now),
    )
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def main():\n    return 1\n", encoding="utf-8")
    return path


@pytest.fixture
def cps(state: EngineState) -> Checkpoints:
    return Checkpoints(state.store)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside", encoding="utf-8")
    return secret


# --- read_file ------------------------------------------------------------------------


@pytest.mark.req("ENG-04")
def test_read_file_returns_text_and_its_byte_count(root: Path) -> None:
    assert files.read_file(root, "src/app.py") == {
        "path": "src/app.py",
        "content": "def main():\n    return 1\n",
        "bytes": 25,
        "truncated": False,
    }


@pytest.mark.req("ENG-04")
def test_read_file_pages_with_offset_and_never_splits_a_character(root: Path) -> None:
    (root / "u.txt").write_bytes("aé€😀z".encode())  # 1 + 2 + 3 + 4 + 1 bytes
    first = files.read_file(root, "u.txt", max_bytes=5)
    assert first == {"path": "u.txt", "content": "aé", "bytes": 3, "truncated": True}
    second = files.read_file(root, "u.txt", offset=3, max_bytes=8)
    assert second == {"path": "u.txt", "content": "€😀z", "bytes": 8, "truncated": False}
    assert files.read_file(root, "u.txt", offset=100)["content"] == ""


@pytest.mark.req("ENG-04")
def test_read_file_bound_is_accepted_at_the_limit_and_refused_past_it(root: Path) -> None:
    (root / "big.txt").write_bytes(b"x" * (FILE_READ_MAX_BYTES + 10))
    out = files.read_file(root, "big.txt", max_bytes=FILE_READ_MAX_BYTES)
    assert out["bytes"] == FILE_READ_MAX_BYTES and out["truncated"] is True
    assert files.read_file(root, "big.txt")["bytes"] == FILE_READ_MAX_BYTES
    with pytest.raises(ToolError, match="max_bytes"):
        files.read_file(root, "big.txt", max_bytes=FILE_READ_MAX_BYTES + 1)
    with pytest.raises(ToolError, match="offset"):
        files.read_file(root, "big.txt", offset=-1)


@pytest.mark.req("ENG-04", "SRV-08")
def test_read_file_refuses_paths_out_of_the_project(root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside)
    for rel in ("../secret.txt", str(outside), "link.txt", "missing.txt", "src"):
        with pytest.raises(ToolError):
            files.read_file(root, rel)


@pytest.mark.req("ENG-04")
def test_read_file_does_not_block_on_a_fifo(root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        files.read_file(root, "pipe")


# --- list_files -----------------------------------------------------------------------


@pytest.mark.req("ENG-04")
def test_list_files_gives_sorted_typed_entries_without_following_links(root: Path, outside: Path) -> None:
    (root / "b.txt").write_bytes(b"12")
    (root / "out").symlink_to(outside.parent)
    listing = files.list_files(root)
    assert listing["path"] == "." and listing["truncated"] is False
    assert [(e["name"], e["type"]) for e in listing["entries"]] == [
        ("b.txt", "file"),
        ("out", "symlink"),
        ("src", "dir"),
    ]
    assert listing["entries"][0]["size"] == 2 and listing["entries"][2]["size"] is None
    with pytest.raises(ToolError, match="outside the project"):
        files.list_files(root, "out")
    with pytest.raises(ToolError, match="not a folder"):
        files.list_files(root, "b.txt")


@pytest.mark.req("ENG-04")
def test_list_files_is_complete_at_the_limit_and_truncated_past_it(root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(FILE_LIST_ENTRIES_MAX):
        (many / f"f{i:05d}").touch()
    full = files.list_files(root, "many")
    assert len(full["entries"]) == FILE_LIST_ENTRIES_MAX and full["truncated"] is False
    (many / "zzz").touch()
    over = files.list_files(root, "many")
    assert len(over["entries"]) == FILE_LIST_ENTRIES_MAX and over["truncated"] is True
    assert over["entries"][-1]["name"] == f"f{FILE_LIST_ENTRIES_MAX - 1:05d}"


# --- search_files ---------------------------------------------------------------------


@pytest.mark.req("ENG-04")
def test_search_files_finds_plain_text_and_regular_expressions(root: Path) -> None:
    (root / "src" / "b.py").write_text("x = 1\nreturn value\r\n", encoding="utf-8")
    plain = files.search_files(root, "return")
    assert plain == {
        "matches": [
            {"path": "src/app.py", "line": 2, "text": "    return 1"},
            {"path": "src/b.py", "line": 2, "text": "return value"},
        ],
        "truncated": False,
    }
    assert files.search_files(root, r"^def \w+", regex=True)["matches"] == [
        {"path": "src/app.py", "line": 1, "text": "def main():"}
    ]
    assert files.search_files(root, "x = 1", "src/b.py")["matches"] == [
        {"path": "src/b.py", "line": 1, "text": "x = 1"}
    ]


@pytest.mark.req("ENG-04")
def test_search_files_skips_git_binary_and_linked_files(root: Path, outside: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle", encoding="utf-8")
    (root / "bin.dat").write_bytes(b"needle\x00")
    (root / "link.txt").symlink_to(outside)
    outside.write_text("needle", encoding="utf-8")
    assert files.search_files(root, "needle")["matches"] == []


@pytest.mark.req("ENG-04")
def test_search_files_refuses_bad_patterns_and_paths_out_of_the_project(root: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        files.search_files(root, "")
    with pytest.raises(ToolError, match="regular expression"):
        files.search_files(root, "(", regex=True)
    with pytest.raises(ToolError, match="outside"):
        files.search_files(root, "x", "..")
    assert files.search_files(root, "y" * SEARCH_PATTERN_MAX_CHARS)["matches"] == []
    with pytest.raises(ToolError, match="longer than"):
        files.search_files(root, "y" * (SEARCH_PATTERN_MAX_CHARS + 1))


@pytest.mark.req("ENG-04")
def test_search_files_caps_matches_and_quoted_line_length(root: Path) -> None:
    (root / "hits.txt").write_text("hit\n" * SEARCH_MATCHES_MAX, encoding="utf-8")
    at_limit = files.search_files(root, "hit", "hits.txt")
    assert len(at_limit["matches"]) == SEARCH_MATCHES_MAX and at_limit["truncated"] is False
    (root / "hits.txt").write_text("hit\n" * (SEARCH_MATCHES_MAX + 1), encoding="utf-8")
    over = files.search_files(root, "hit", "hits.txt")
    assert len(over["matches"]) == SEARCH_MATCHES_MAX and over["truncated"] is True
    (root / "long.txt").write_text("hit" + "x" * SEARCH_LINE_MAX_CHARS, encoding="utf-8")
    assert len(files.search_files(root, "hit", "long.txt")["matches"][0]["text"]) == SEARCH_LINE_MAX_CHARS


@pytest.mark.req("ENG-04")
def test_search_files_reads_files_up_to_the_size_limit_only(root: Path) -> None:
    (root / "edge.txt").write_bytes(b"x" * (SEARCH_FILE_MAX_BYTES - 6) + b"needle")
    assert len(files.search_files(root, "needle", "edge.txt")["matches"]) == 1
    (root / "edge.txt").write_bytes(b"x" * (SEARCH_FILE_MAX_BYTES - 5) + b"needle")
    assert files.search_files(root, "needle", "edge.txt")["matches"] == []


@pytest.mark.req("ENG-04")
def test_search_files_marks_truncated_past_the_file_limit(root: Path) -> None:
    tree = root / "tree"
    tree.mkdir()
    for i in range(SEARCH_FILES_MAX - 1):  # plus src/app.py: exactly the limit
        (tree / f"f{i:05d}.txt").touch()
    assert files.search_files(root, "nothing")["truncated"] is False
    (tree / "one_more.txt").touch()
    assert files.search_files(root, "nothing")["truncated"] is True


@pytest.mark.req("SRV-08", "ENG-04")
@pytest.mark.parametrize("folder", ["profile", ".shadowcode"])
def test_the_profile_root_inside_the_project_is_never_read_listed_searched_or_written(
    root: Path, cps: Checkpoints, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    home = root / folder
    (home / "profiles" / "default").mkdir(parents=True)
    secrets = home / "profiles" / "default" / "secrets.json"
    secrets.write_text('{"token": "needle-s3cret"}', encoding="utf-8")
    monkeypatch.setenv("SHADOWCODE_HOME", str(home))
    rel = f"{folder}/profiles/default/secrets.json"
    attempts = [
        lambda: files.read_file(root, rel),
        lambda: files.list_files(root, folder),
        lambda: files.search_files(root, "needle", rel),
        lambda: files.search_files(root, "needle", folder),
        lambda: files.write_file(root, rel, "{}", checkpoints=cps, task_id=TASK),
        lambda: files.write_file(root, f"{folder}/new.json", "{}", checkpoints=cps, task_id=TASK),
        lambda: files.edit_file(root, rel, "needle", "x", checkpoints=cps, task_id=TASK),
    ]
    for attempt in attempts:
        with pytest.raises(ToolError, match="profile folder"):
            attempt()
    assert folder not in [e["name"] for e in files.list_files(root)["entries"]]
    assert files.search_files(root, "needle-s3cret")["matches"] == []
    assert secrets.read_text(encoding="utf-8") == '{"token": "needle-s3cret"}'
    assert not (home / "new.json").exists()


# --- write_file and edit_file ---------------------------------------------------------


@pytest.mark.req("ENG-04")
def test_write_file_creates_and_overwrites_a_file(root: Path, cps: Checkpoints) -> None:
    made = files.write_file(root, "src/new.py", "x = 1\n", checkpoints=cps, task_id=TASK)
    assert made == {"path": "src/new.py", "bytes": 6, "created": True}
    again = files.write_file(root, "src/new.py", "x = 2\n", checkpoints=cps, task_id=TASK)
    assert again["created"] is False
    assert (root / "src" / "new.py").read_text(encoding="utf-8") == "x = 2\n"
    assert [p.name for p in (root / "src").iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.req("ENG-04")
def test_write_file_keeps_the_mode_of_an_existing_file(root: Path, cps: Checkpoints) -> None:
    script = root / "run.sh"
    script.write_text("echo 1\n", encoding="utf-8")
    script.chmod(0o751)
    files.write_file(root, "run.sh", "echo 2\n", checkpoints=cps, task_id=TASK)
    assert script.stat().st_mode & 0o777 == 0o751


@pytest.mark.req("ENG-06")
def test_write_file_records_the_checkpoint_before_writing(
    root: Path, state: EngineState, cps: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bytes] = []
    real = cps.record_write

    def spy(project: Path, task_id: str, rel: str, new: bytes | None) -> int:
        seen.append((root / rel).read_bytes())  # the file is still unchanged when recording
        return real(project, task_id, rel, new)

    monkeypatch.setattr(cps, "record_write", spy)
    files.write_file(root, "src/app.py", "changed\n", checkpoints=cps, task_id=TASK)
    assert seen == [b"def main():\n    return 1\n"]
    change = state.store.row("SELECT path, before_sha256, after_sha256 FROM changes")
    assert change == {
        "path": "src/app.py",
        "before_sha256": content_sha256(b"def main():\n    return 1\n"),
        "after_sha256": content_sha256(b"changed\n"),
    }


@pytest.mark.req("ENG-06")
def test_a_refused_checkpoint_leaves_the_file_unwritten(root: Path, cps: Checkpoints) -> None:
    with pytest.raises(NotFound):
        files.write_file(root, "src/app.py", "x", checkpoints=cps, task_id="no_such_task")
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "def main():\n    return 1\n"


@pytest.mark.req("ENG-06")
def test_a_failed_write_drops_its_recorded_change(
    root: Path, state: EngineState, cps: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(path: Path, data: bytes) -> None:
        raise ToolError("cannot write: disk full")

    monkeypatch.setattr(files, "replace_atomically", fail)
    with pytest.raises(ToolError, match="disk full"):
        files.write_file(root, "src/app.py", "x", checkpoints=cps, task_id=TASK)
    assert state.store.rows("SELECT id FROM changes") == []
    assert cps.rollback(root, TASK) == RollbackResult(TASK, [], [])


@pytest.mark.req("ENG-04")
def test_writes_are_confined_to_the_project_and_never_enter_git(root: Path, cps: Checkpoints, outside: Path) -> None:
    (root / ".git").mkdir()
    (root / "out").symlink_to(outside.parent)
    (root / "link.txt").symlink_to(outside)
    refused = ["../evil.txt", str(outside), "out/evil.txt", "link.txt", ".git/config", "src/.git", ".", "src"]
    refused.append("nofolder/new.txt")
    for rel in refused:
        with pytest.raises(ToolError):
            files.write_file(root, rel, "x", checkpoints=cps, task_id=TASK)
    assert outside.read_text(encoding="utf-8") == "outside"
    assert not (root / ".git" / "config").exists() and not (root / "nofolder").exists()


@pytest.mark.req("ENG-04")
def test_write_through_a_link_inside_the_project_changes_its_target(root: Path, cps: Checkpoints) -> None:
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    out = files.write_file(root, "alias.py", "new\n", checkpoints=cps, task_id=TASK)
    assert out["path"] == "src/app.py" and (root / "alias.py").is_symlink()
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "new\n"


@pytest.mark.req("ENG-04")
def test_write_size_is_accepted_at_the_limit_and_refused_past_it(root: Path, cps: Checkpoints) -> None:
    assert files.write_file(root, "big.txt", "x" * FILE_WRITE_MAX_BYTES, checkpoints=cps, task_id=TASK)["bytes"] == (
        FILE_WRITE_MAX_BYTES
    )
    with pytest.raises(ToolError, match="larger than"):
        files.write_file(root, "big2.txt", "x" * (FILE_WRITE_MAX_BYTES + 1), checkpoints=cps, task_id=TASK)
    assert not (root / "big2.txt").exists()


@pytest.mark.req("ENG-04")
def test_edit_file_replaces_exactly_one_occurrence(root: Path, cps: Checkpoints) -> None:
    out = files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK)
    assert out == {"path": "src/app.py", "replacements": 1}
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "def main():\n    return 2\n"


@pytest.mark.req("ENG-04")
def test_edit_file_refuses_absent_repeated_or_empty_text_and_changes_nothing(
    root: Path, state: EngineState, cps: Checkpoints
) -> None:
    (root / "twice.txt").write_text("a a", encoding="utf-8")
    for rel, old, message in (
        ("twice.txt", "a", "occurs 2 times"),
        ("twice.txt", "zzz", "does not occur"),
        ("twice.txt", "", "empty"),
        ("missing.txt", "a", "no such file"),
    ):
        with pytest.raises(ToolError, match=message):
            files.edit_file(root, rel, old, "b", checkpoints=cps, task_id=TASK)
    assert (root / "twice.txt").read_text(encoding="utf-8") == "a a"
    assert state.store.rows("SELECT id FROM changes") == []


@pytest.mark.req("ENG-04")
def test_edit_file_result_size_is_bounded(root: Path, cps: Checkpoints) -> None:
    (root / "e.txt").write_text("ab", encoding="utf-8")
    files.edit_file(root, "e.txt", "b", "b" * (FILE_WRITE_MAX_BYTES - 1), checkpoints=cps, task_id=TASK)
    assert (root / "e.txt").stat().st_size == FILE_WRITE_MAX_BYTES
    with pytest.raises(ToolError, match="larger than"):
        files.edit_file(root, "e.txt", "a", "aa", checkpoints=cps, task_id=TASK)


@pytest.mark.req("ENG-04")
def test_edit_file_refuses_a_file_that_is_not_utf8(root: Path, cps: Checkpoints) -> None:
    (root / "latin.txt").write_bytes(b"caf\xe9")
    with pytest.raises(ToolError, match="not UTF-8"):
        files.edit_file(root, "latin.txt", "caf", "bar", checkpoints=cps, task_id=TASK)


# --- rollback of what the tools wrote -------------------------------------------------


@pytest.mark.req("ENG-06")
def test_rollback_restores_edited_and_removes_created_files(root: Path, cps: Checkpoints) -> None:
    files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK)
    files.write_file(root, "src/app.py", "rewritten\n", checkpoints=cps, task_id=TASK)
    files.write_file(root, "src/new.py", "new\n", checkpoints=cps, task_id=TASK)
    assert cps.rollback(root, TASK) == RollbackResult(TASK, ["src/app.py"], ["src/new.py"])
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "def main():\n    return 1\n"
    assert not (root / "src" / "new.py").exists()


@pytest.mark.req("ENG-06")
def test_rollback_refuses_after_a_conflicting_edit_and_changes_nothing(root: Path, cps: Checkpoints) -> None:
    files.write_file(root, "src/new.py", "new\n", checkpoints=cps, task_id=TASK)
    files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK)
    (root / "src" / "app.py").write_text("someone else\n", encoding="utf-8")
    with pytest.raises(ConflictError, match="src/app.py"):
        cps.rollback(root, TASK)
    assert (root / "src" / "new.py").read_text(encoding="utf-8") == "new\n"
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "someone else\n"


# --- observations: an edit never lands on content the task has not seen (CLI-10) ---------


@pytest.mark.req("CLI-10")
def test_edit_is_refused_when_the_file_changed_since_the_task_read_it(root: Path, cps: Checkpoints) -> None:
    seen = Observations()
    files.read_file(root, "src/app.py", observations=seen)
    (root / "src" / "app.py").write_text("def main():\n    return 1  # changed elsewhere\n", encoding="utf-8")
    with pytest.raises(ToolError, match="src/app.py changed since the task last read it; read it again first"):
        files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK, observations=seen)
    files.read_file(root, "src/app.py", observations=seen)
    files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK, observations=seen)
    assert "return 2" in (root / "src" / "app.py").read_text(encoding="utf-8")


@pytest.mark.req("CLI-10")
def test_after_an_mcp_action_a_read_file_must_be_read_again_before_editing(root: Path, cps: Checkpoints) -> None:
    seen = Observations()
    files.read_file(root, "src/app.py", observations=seen)
    seen.invalidate_all()
    with pytest.raises(ToolError, match="read it again first"):
        files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK, observations=seen)
    assert (root / "src" / "app.py").read_text(encoding="utf-8") == "def main():\n    return 1\n"
    files.read_file(root, "src/app.py", offset=5, max_bytes=1, observations=seen)  # any read of it counts
    files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK, observations=seen)


@pytest.mark.req("CLI-10")
def test_a_file_never_read_or_just_written_may_be_edited(root: Path, cps: Checkpoints) -> None:
    seen = Observations()
    files.edit_file(root, "src/app.py", "return 1", "return 2", checkpoints=cps, task_id=TASK, observations=seen)
    files.edit_file(root, "src/app.py", "return 2", "return 3", checkpoints=cps, task_id=TASK, observations=seen)
    files.write_file(root, "new.txt", "a\n", checkpoints=cps, task_id=TASK, observations=seen)
    files.edit_file(root, "new.txt", "a", "b", checkpoints=cps, task_id=TASK, observations=seen)
    assert (root / "new.txt").read_text(encoding="utf-8") == "b\n"


@pytest.mark.req("CLI-10")
def test_reads_are_observed_under_the_resolved_path_and_pages_match_plain_reads(root: Path) -> None:
    seen = Observations()
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    (root / "big.txt").write_bytes(b"x" * (FILE_WRITE_MAX_BYTES + 1))
    assert files.read_file(root, "alias.py", offset=4, max_bytes=5, observations=seen) == files.read_file(
        root, "alias.py", offset=4, max_bytes=5
    )
    assert seen.get("src/app.py") is not None and seen.get("alias.py") is None
    page = files.read_file(root, "big.txt", offset=FILE_WRITE_MAX_BYTES - 2, max_bytes=2, observations=seen)
    assert (page["bytes"], page["truncated"]) == (2, True)
    assert seen.get("big.txt") is None
