"""The one way to reach project content: confinement, non-blocking bounded reads, atomic writes.

Every call that could block on a hostile file runs under ``at_once``, so a regression
fails the test within seconds instead of hanging the run (SRV-08, SRV-19, ENG-06, CLI-03).
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowcode.errors import ToolError
from shadowcode.project.files import (
    FileContent,
    confine,
    current_sha256,
    in_profile_root,
    profile_root,
    read_optional,
    read_regular,
    refuse_git_path,
    replace_atomically,
)
from tests.support.deadline import at_once


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = (tmp_path / "project").resolve()
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    return path


@pytest.fixture
def unix_socket(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(root)  # a short relative name: socket paths are limited to ~100 bytes
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("s.sock")
    server.listen(1)
    try:
        yield root / "s.sock"
    finally:
        server.close()


# --- hostile files are refused at once -----------------------------------------------------


@pytest.mark.req("SRV-19", "ENG-06")
def test_a_fifo_is_refused_at_once_and_named(root: Path) -> None:
    os.mkfifo(root / "README.md")
    with pytest.raises(ToolError, match=r"README.md is not a regular file \(a FIFO\)"):
        at_once(lambda: read_regular(root / "README.md", max_bytes=100))
    assert at_once(lambda: read_optional(root, "README.md", max_bytes=100)) is None
    assert at_once(lambda: current_sha256(root / "README.md", max_bytes=100)) == (False, None)


@pytest.mark.req("SRV-19")
def test_a_unix_socket_is_refused_at_once(root: Path, unix_socket: Path) -> None:
    with pytest.raises(ToolError, match=r"not a regular file \(a socket\)"):
        at_once(lambda: read_regular(unix_socket, max_bytes=100))
    assert at_once(lambda: read_optional(root, "s.sock", max_bytes=100)) is None


@pytest.mark.req("SRV-08", "SRV-19")
def test_a_symlink_to_dev_zero_is_refused_at_once(root: Path) -> None:
    (root / "zero").symlink_to("/dev/zero")
    with pytest.raises(ToolError, match="outside the project"):
        at_once(lambda: confine(root, "zero"))
    with pytest.raises(ToolError, match=r"not a regular file \(a character device\)"):
        at_once(lambda: read_regular(root / "zero", max_bytes=100, follow_symlinks=True))
    with pytest.raises(ToolError, match=r"not a regular file \(a symbolic link\)"):
        at_once(lambda: read_regular(root / "zero", max_bytes=100))
    assert at_once(lambda: read_optional(root, "zero", max_bytes=100)) is None


@pytest.mark.req("SRV-08")
def test_a_symlink_leaving_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (root / "out").symlink_to(tmp_path)
    for rel in ("leak.txt", "out/secret.txt", "../secret.txt", str(tmp_path / "secret.txt")):
        with pytest.raises(ToolError, match="outside the project"):
            at_once(lambda rel=rel: confine(root, rel))
        assert read_optional(root, rel, max_bytes=10) is None


@pytest.mark.req("SRV-08", "ENG-06")
def test_paths_inside_git_are_never_content(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / "cfg").symlink_to(root / ".git" / "config")
    for rel in (".git/config", ".GIT/config", ".git", "cfg", "src/../.git/config"):
        with pytest.raises(ToolError, match="inside .git"):
            at_once(lambda rel=rel: confine(root, rel, must_exist=False))
        assert read_optional(root, rel, max_bytes=100) is None
    assert confine(root, ".gitignore", must_exist=False) == root / ".gitignore"


@pytest.mark.req("SRV-08", "SRV-19")
def test_the_profile_root_inside_the_project_is_never_content(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = root / "home"
    home.mkdir()
    (home / "secrets.json").write_text('{"token": "s3cret"}', encoding="utf-8")
    (root / "alias.json").symlink_to(home / "secrets.json")
    monkeypatch.setenv("SHADOWCODE_HOME", str(home))
    assert profile_root() == home
    for rel in ("home/secrets.json", "home", "alias.json", "home/new.txt"):
        with pytest.raises(ToolError, match="profile folder"):
            at_once(lambda rel=rel: confine(root, rel, must_exist=False))
        assert read_optional(root, rel, max_bytes=100) is None
    assert confine(root, "src/app.py") == root / "src" / "app.py"


@pytest.mark.req("SRV-08")
def test_a_linked_profile_root_is_recognised_by_its_real_path(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "real-home").mkdir()
    (tmp_path / "home-link").symlink_to(root / "real-home")
    monkeypatch.setenv("SHADOWCODE_HOME", str(tmp_path / "home-link"))
    assert in_profile_root(root / "real-home" / "x")
    with pytest.raises(ToolError, match="profile folder"):
        confine(root, "real-home/x", must_exist=False)


# --- the size bound ------------------------------------------------------------------------


@pytest.mark.req("SRV-19", "CLI-03")
def test_a_file_at_the_bound_is_read_whole_and_one_byte_past_is_refused_or_cut(root: Path) -> None:
    (root / "at.txt").write_bytes(b"x" * 10)
    (root / "past.txt").write_bytes(b"x" * 11)
    assert at_once(lambda: read_regular(root / "at.txt", max_bytes=10)) == FileContent(b"x" * 10, False)
    with pytest.raises(ToolError, match="past.txt is larger than 10 bytes"):
        at_once(lambda: read_regular(root / "past.txt", max_bytes=10))
    assert read_regular(root / "past.txt", max_bytes=10, truncate=True) == FileContent(b"x" * 10, True)
    assert read_optional(root, "at.txt", max_bytes=10) == FileContent(b"x" * 10, False)
    assert read_optional(root, "past.txt", max_bytes=10) == FileContent(b"x" * 10, True)


@pytest.mark.req("SRV-19")
def test_reading_from_an_offset_and_a_missing_file(root: Path) -> None:
    (root / "f.txt").write_bytes(b"abcdef")
    assert read_regular(root / "f.txt", max_bytes=2, offset=3, truncate=True) == FileContent(b"de", True)
    assert read_regular(root / "f.txt", max_bytes=2, offset=10) == FileContent(b"", False)
    assert read_regular(root / "missing.txt", max_bytes=2) is None
    with pytest.raises(ToolError, match=r"not a regular file \(a folder\)"):
        read_regular(root / "src", max_bytes=2)
    assert read_optional(root, "missing.txt", max_bytes=2) is None


# --- write primitives ------------------------------------------------------------------------


@pytest.mark.req("ENG-06")
def test_current_sha256_names_regular_missing_and_other_paths(root: Path) -> None:
    (root / "a.txt").write_bytes(b"abc")
    (root / "link.txt").symlink_to(root / "a.txt")
    ok, sha = current_sha256(root / "a.txt", max_bytes=3)
    assert ok and sha == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert current_sha256(root / "a.txt", max_bytes=2) == (False, None)
    assert current_sha256(root / "none.txt", max_bytes=3) == (True, None)
    assert current_sha256(root / "link.txt", max_bytes=3) == (False, None)
    assert current_sha256(root / "src", max_bytes=3) == (False, None)


@pytest.mark.req("ENG-06")
def test_git_paths_and_the_root_are_never_written() -> None:
    for rel in (".git/config", "sub/.Git/hooks/pre-commit", ".", ""):
        with pytest.raises(ToolError):
            refuse_git_path(rel)
    refuse_git_path(".github/workflows/ci.yml")


@pytest.mark.req("ENG-06")
def test_atomic_replace_keeps_the_mode_and_leaves_no_temporary_file(root: Path) -> None:
    target = root / "run.sh"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o750)
    replace_atomically(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in root.iterdir()) == ["run.sh", "src"]
