"""The read-only git review behind shadow_review (SRV-20)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from shadowcode.errors import ToolError
from shadowcode.limits import REVIEW_CHANGES_MAX
from shadowcode.project.review import review

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True, check=False).returncode != 0, reason="needs git"
)

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV, "HOME": str(root)}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, encoding="utf-8", timeout=30, check=True
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "keep.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "gone.txt").write_text("bye\n", encoding="utf-8")
    (root / "old.txt").write_text("rename me\n" * 20, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_project_without_git_gets_an_empty_review_with_a_note_srv20(tmp_path: Path) -> None:
    root = (tmp_path / "plain").resolve()
    root.mkdir()
    result = review(root)
    assert result["git"] is False
    assert result["changes"] == []
    assert result["note"]


def test_review_lists_modified_added_deleted_renamed_and_untracked_paths_srv20(repo: Path) -> None:
    (repo / "keep.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (repo / "gone.txt").unlink()
    git(repo, "mv", "old.txt", "new.txt")
    (repo / "staged.txt").write_text("s\n", encoding="utf-8")
    git(repo, "add", "staged.txt")
    (repo / "loose.txt").write_text("u\n", encoding="utf-8")
    result = review(repo)
    assert result["git"] is True
    assert result["branch"] == "main"
    assert result["head"] and len(result["head"]) == 12
    changes = {c["path"]: c for c in result["changes"]}
    assert changes["keep.txt"] == {"path": "keep.txt", "status": "modified", "staged": False}
    assert changes["gone.txt"]["status"] == "deleted"
    assert changes["new.txt"] == {"path": "new.txt", "status": "renamed", "staged": True, "from": "old.txt"}
    assert changes["staged.txt"] == {"path": "staged.txt", "status": "added", "staged": True}
    assert changes["loose.txt"] == {"path": "loose.txt", "status": "untracked", "staged": False}
    stat = result["diffstat"]
    assert stat["insertions"] == 1 + 20 + 1
    assert stat["deletions"] == 1 + 20
    assert stat["untracked"] == 1
    assert stat["against"] == "HEAD"
    assert result["truncated"] is False


def test_review_of_a_repository_without_commits_compares_with_the_empty_tree_srv20(tmp_path: Path) -> None:
    root = (tmp_path / "fresh").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "a.txt").write_text("a\nb\n", encoding="utf-8")
    git(root, "add", "a.txt")
    result = review(root)
    assert result["branch"] == "trunk"
    assert result["head"] is None
    assert result["changes"] == [{"path": "a.txt", "status": "added", "staged": True}]
    assert result["diffstat"]["against"] == "empty tree"
    assert result["diffstat"]["insertions"] == 2


def test_project_inside_a_larger_repository_sees_only_its_own_changes_srv20(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "inner.txt").write_text("i\n", encoding="utf-8")
    (repo / "outer.txt").write_text("o\n", encoding="utf-8")
    result = review(repo / "sub")
    assert result["changes"] == [{"path": "inner.txt", "status": "untracked", "staged": False}]


def test_changes_at_the_limit_are_all_listed_and_one_more_truncates_srv20(repo: Path) -> None:
    (repo / "many").mkdir()
    for index in range(REVIEW_CHANGES_MAX):
        (repo / "many" / f"f{index:04d}.txt").touch()
    at = review(repo)
    assert (len(at["changes"]), at["changes_total"], at["truncated"]) == (REVIEW_CHANGES_MAX, REVIEW_CHANGES_MAX, False)
    (repo / "many" / "extra.txt").touch()
    past = review(repo)
    assert (len(past["changes"]), past["changes_total"], past["truncated"]) == (
        REVIEW_CHANGES_MAX,
        REVIEW_CHANGES_MAX + 1,
        True,
    )


def _status_output_bytes(root: Path) -> int:
    args = [
        "--no-optional-locks",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.quotePath=false",
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--",
        ".",
    ]
    return len(subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=30, check=True).stdout)


def test_git_output_at_the_byte_limit_is_whole_and_one_byte_less_room_truncates_srv20(repo: Path) -> None:
    for index in range(30):
        (repo / f"u{index:02d}.txt").touch()
    size = _status_output_bytes(repo)
    whole = review(repo, output_max_bytes=size)
    assert (whole["truncated"], whole["changes_total"]) == (False, 30)
    cut = review(repo, output_max_bytes=size - 1)
    assert cut["truncated"] is True
    assert cut["changes_total"] == 29
    assert all(c["path"].startswith("u") and c["path"].endswith(".txt") for c in cut["changes"])


def test_review_writes_nothing_to_the_repository_srv20(repo: Path) -> None:
    index = repo / ".git" / "index"
    (repo / "keep.txt").write_text("one\ntwo\n", encoding="utf-8")  # same content, new stat data
    os.utime(repo / "keep.txt", (time.time() + 100, time.time() + 100))
    before = (_digest(index), index.stat().st_mtime_ns)
    review(repo)
    assert (_digest(index), index.stat().st_mtime_ns) == before
    assert not (repo / ".git" / "index.lock").exists()


def test_repository_fsmonitor_hook_is_not_run_srv20(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n", encoding="utf-8")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    review(repo)
    assert not marker.exists()


def test_inherited_git_dir_does_not_redirect_the_review_srv20(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = (tmp_path / "other").resolve()
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    (repo / "mine.txt").touch()
    assert [c["path"] for c in review(repo)["changes"]] == ["mine.txt"]


def test_missing_git_gives_a_note_instead_of_a_review_srv20(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = review(repo)
    assert result["git"] is False
    assert "not installed" in result["note"]


def test_git_that_never_answers_is_killed_at_the_deadline_srv20(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    pid_file = tmp_path / "git.pid"
    fake = fake_bin / "git"
    fake.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 60\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not finish within 0.5 s"):
        review(repo, timeout_seconds=0.5)
    assert time.monotonic() - started < 5
    pid = int(pid_file.read_text(encoding="utf-8"))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_review_never_runs_a_content_filter_from_the_repository_config_srv20(tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=30)
    subprocess.run(
        ["git", "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'"], cwd=repo, check=True, timeout=30
    )
    (repo / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    (repo / "f.txt").write_text("a\n", encoding="utf-8")
    subprocess.run(["git", "-c", "filter.evil.clean=", "add", "-A"], cwd=repo, check=True, timeout=30)
    (repo / "f.txt").write_text("b\n", encoding="utf-8")
    result = review(repo.resolve())
    assert any(c["path"] == "f.txt" for c in result["changes"])
    assert not marker.exists()
