"""Containment of user-given paths inside the project, and the bounded walk (SRV-08, SRV-13, SRV-19)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shadowcode.errors import ToolError
from shadowcode.limits import UNDERSTAND_ENTRIES_MAX, UNDERSTAND_FILES_MAX
from shadowcode.project.files import read_optional, resolve_inside
from shadowcode.project.paths import walk_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / "src").mkdir(parents=True)
    (path / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    return path.resolve()


@pytest.mark.req("SRV-08")
def test_relative_and_absolute_paths_inside_resolve(root: Path) -> None:
    assert resolve_inside(root, "src/app.py") == root / "src" / "app.py"
    assert resolve_inside(root, "./src/../src/app.py") == root / "src" / "app.py"
    assert resolve_inside(root, str(root / "src" / "app.py")) == root / "src" / "app.py"
    assert resolve_inside(root, ".") == root


@pytest.mark.req("SRV-08")
def test_dotdot_out_of_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    for rel in ("../secret.txt", "src/../../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd"):
        with pytest.raises(ToolError, match="outside the project"):
            resolve_inside(root, rel)


@pytest.mark.req("SRV-08")
def test_symlink_leading_out_of_the_project_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    (root / "inner.txt").symlink_to(tmp_path / "secret.txt")
    (root / "outdir").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="outside the project"):
        resolve_inside(root, "inner.txt")
    with pytest.raises(ToolError, match="outside the project"):
        resolve_inside(root, "outdir/secret.txt")
    assert read_optional(root, "inner.txt", max_bytes=10) is None


@pytest.mark.req("SRV-08")
def test_symlink_staying_inside_the_project_is_followed(root: Path) -> None:
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    assert resolve_inside(root, "alias.py") == root / "src" / "app.py"


@pytest.mark.req("SRV-08")
@pytest.mark.parametrize("rel", ["", "src/\x00app.py"])
def test_empty_and_nul_paths_are_refused(root: Path, rel: str) -> None:
    with pytest.raises(ToolError):
        resolve_inside(root, rel)


@pytest.mark.req("SRV-08")
def test_missing_file_is_refused_only_when_existence_is_required(root: Path) -> None:
    with pytest.raises(ToolError, match="no such file"):
        resolve_inside(root, "src/missing.py")
    assert resolve_inside(root, "src/missing.py", must_exist=False) == root / "src" / "missing.py"


@pytest.mark.req("SRV-08")
def test_symlink_loop_is_refused(root: Path) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    with pytest.raises(ToolError):
        resolve_inside(root, "a")


@pytest.mark.req("SRV-19")
def test_walk_at_the_file_limit_is_complete_and_one_more_file_truncates(tmp_path: Path) -> None:
    root = (tmp_path / "p").resolve()
    root.mkdir()
    for index in range(UNDERSTAND_FILES_MAX):
        (root / f"f{index:05d}.txt").touch()
    walk = walk_files(root)
    assert (len(walk.files), walk.truncated) == (UNDERSTAND_FILES_MAX, False)
    (root / "one-more.txt").touch()
    walk = walk_files(root)
    assert (len(walk.files), walk.truncated) == (UNDERSTAND_FILES_MAX, True)


@pytest.mark.req("SRV-19")
def test_walk_at_the_entry_limit_is_complete_and_one_more_entry_truncates(tmp_path: Path) -> None:
    root = (tmp_path / "p").resolve()
    root.mkdir()
    for index in range(UNDERSTAND_ENTRIES_MAX - 1):
        (root / f"d{index:05d}").mkdir()
    (root / "last.txt").touch()
    walk = walk_files(root)
    assert walk.truncated is False
    assert [f.path for f in walk.files] == ["last.txt"]
    (root / "zzz").mkdir()
    assert walk_files(root).truncated is True


@pytest.mark.req("SRV-19")
def test_walk_skips_tool_folders_and_never_enters_linked_folders(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").touch()
    (root / "linked").symlink_to(outside)
    for skipped in (".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".hidden", "pkg.egg-info"):
        (root / skipped).mkdir()
        (root / skipped / "x.py").touch()
    (root / ".shadowcode" / "mcp").mkdir(parents=True)
    (root / ".shadowcode" / "mcp" / "tools.yaml").touch()
    (root / ".gitignore").touch()
    paths = [f.path for f in walk_files(root).files]
    assert paths == [".gitignore", "src/app.py", ".shadowcode/mcp/tools.yaml"]


@pytest.mark.req("SRV-19", "SRV-08")
def test_walk_never_enters_the_profile_root_inside_the_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for home in (root / "profile", root / ".shadowcode"):
        (home / "profiles" / "default").mkdir(parents=True)
        (home / "profiles" / "default" / "secrets.json").write_text("{}", encoding="utf-8")
        monkeypatch.setenv("SHADOWCODE_HOME", str(home))
        paths = [f.path for f in walk_files(root).files]
        assert not any("secrets.json" in p for p in paths), paths
        assert walk_files(root, under=home.name).files == ()
        shutil.rmtree(home)
