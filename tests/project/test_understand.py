"""The bounded project map behind shadow_understand (SRV-19)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shadowcode.limits import (
    UNDERSTAND_FILES_MAX,
    UNDERSTAND_MAP_MAX_BYTES,
    UNDERSTAND_READ_MAX_BYTES,
    UNDERSTAND_README_LINES_MAX,
)
from shadowcode.project.understand import MAP_SHORTENED_MARK, build_map, clip_utf8
from tests.support.deadline import at_once


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = (tmp_path / "demo").resolve()
    (path / "demo").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "demo" / "__init__.py").write_text("", encoding="utf-8")
    (path / "demo" / "__main__.py").write_text("print('demo')\n", encoding="utf-8")
    (path / "tests" / "test_demo.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    (path / "web.ts").write_text("export {}\n", encoding="utf-8")
    (path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n[project.scripts]\ndemo = "demo.__main__:main"\n[tool.pytest.ini_options]\n',
        encoding="utf-8",
    )
    (path / "package.json").write_text('{"name": "demo-web", "scripts": {"test": "vitest"}}', encoding="utf-8")
    (path / "README.md").write_text("# Demo\n\nA small demo project.\n", encoding="utf-8")
    return path


@pytest.mark.req("SRV-19")
def test_map_names_languages_manifests_entry_points_tests_and_readme(root: Path) -> None:
    result = build_map(root)
    assert result["files"] == 7
    assert result["truncated"] is False
    assert result["languages"] == {"Python": 3, "JSON": 1, "Markdown": 1, "TOML": 1, "TypeScript": 1}
    manifests = {m["path"]: m for m in result["manifests"]}
    assert manifests["pyproject.toml"]["name"] == "demo"
    assert manifests["pyproject.toml"]["entry_points"] == ["demo"]
    assert manifests["package.json"]["name"] == "demo-web"
    assert "demo/__main__.py" in result["entry_points"]
    assert [t["name"] for t in result["tests"]] == ["pytest", "npm"]
    text = result["map"]
    assert "# Project map: demo" in text
    assert "> A small demo project." in text
    assert "- `demo/` (2 files)" in text
    assert "`python3 -m pytest`" in text


@pytest.mark.req("SRV-19")
def test_map_skips_tool_and_hidden_folders_but_keeps_shadowcode(root: Path) -> None:
    for skipped in (".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".cache"):
        (root / skipped).mkdir()
        (root / skipped / "junk.js").touch()
    (root / ".shadowcode").mkdir()
    (root / ".shadowcode" / "notes.md").touch()
    result = build_map(root)
    assert result["files"] == 8
    assert "JavaScript" not in result["languages"]
    assert "`.shadowcode/` (1 file)" in result["map"]


@pytest.mark.req("SRV-19")
def test_map_follows_no_symlink_out_of_the_project(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.rs").write_text("SECRET-CONTENT", encoding="utf-8")
    (root / "README.md").unlink()
    (root / "README.md").symlink_to(outside / "secret.rs")
    (root / "vendor").symlink_to(outside)
    result = build_map(root)
    assert "Rust" not in result["languages"]
    assert "SECRET-CONTENT" not in result["map"]
    assert "secret.rs" not in result["map"]


@pytest.mark.req("SRV-19")
def test_map_building_writes_nothing(root: Path) -> None:
    before = _tree(root)
    build_map(root)
    assert _tree(root) == before


@pytest.mark.req("SRV-19")
def test_walk_at_the_file_limit_is_complete_and_one_past_is_truncated(tmp_path: Path) -> None:
    root = (tmp_path / "many").resolve()
    root.mkdir()
    for index in range(UNDERSTAND_FILES_MAX):
        (root / f"m{index:05d}.py").touch()
    at = build_map(root)
    assert (at["files"], at["truncated"]) == (UNDERSTAND_FILES_MAX, False)
    (root / "extra.py").touch()
    past = build_map(root)
    assert (past["files"], past["truncated"]) == (UNDERSTAND_FILES_MAX, True)


@pytest.mark.req("SRV-19")
def test_readme_quote_stops_at_its_line_limit(root: Path) -> None:
    lines = [f"line-{n:03d}" for n in range(1, UNDERSTAND_README_LINES_MAX + 2)]
    (root / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = build_map(root)["map"]
    assert f"> line-{UNDERSTAND_README_LINES_MAX:03d}" in text
    assert f"line-{UNDERSTAND_README_LINES_MAX + 1:03d}" not in text


@pytest.mark.req("SRV-19")
def test_manifest_at_the_read_limit_is_parsed_and_one_byte_more_is_not(root: Path) -> None:
    body = '[project]\nname = "sized"\n# '
    padded = body + "x" * (UNDERSTAND_READ_MAX_BYTES - len(body) - 1) + "\n"
    assert len(padded.encode()) == UNDERSTAND_READ_MAX_BYTES
    (root / "pyproject.toml").write_text(padded, encoding="utf-8")
    manifest = next(m for m in build_map(root)["manifests"] if m["path"] == "pyproject.toml")
    assert manifest["name"] == "sized"
    (root / "pyproject.toml").write_text(padded + "\n", encoding="utf-8")
    manifest = next(m for m in build_map(root)["manifests"] if m["path"] == "pyproject.toml")
    assert "name" not in manifest
    assert "not parsed" in manifest["note"]


@pytest.mark.req("SRV-19")
def test_map_text_is_cut_to_its_byte_limit(tmp_path: Path) -> None:
    root = (tmp_path / "wide").resolve()
    root.mkdir()
    for index in range(1500):
        folder = root / f"folder-with-a-rather-long-descriptive-name-number-{index:05d}"
        folder.mkdir()
        (folder / "f.py").touch()
    result = build_map(root)
    assert len(result["map"].encode()) == UNDERSTAND_MAP_MAX_BYTES
    assert result["map"].endswith(MAP_SHORTENED_MARK)
    assert result["truncated"] is True
    assert result["files"] == 1500


@pytest.mark.req("SRV-19")
def test_map_exactly_at_its_byte_limit_is_whole_and_one_byte_less_room_cuts_it(root: Path) -> None:
    natural = build_map(root)["map"]
    size = len(natural.encode())
    at = build_map(root, map_max_bytes=size)
    assert (at["map"], at["truncated"]) == (natural, False)
    under = build_map(root, map_max_bytes=size - 1)
    assert under["truncated"] is True
    assert len(under["map"].encode()) <= size - 1


@pytest.mark.req("SRV-19")
def test_clip_keeps_text_at_the_limit_and_cuts_one_byte_more_on_a_character_boundary() -> None:
    at = "é" * (UNDERSTAND_MAP_MAX_BYTES // 2)
    assert clip_utf8(at, UNDERSTAND_MAP_MAX_BYTES) == (at, False)
    past = at + "x"
    clipped, cut = clip_utf8(past, UNDERSTAND_MAP_MAX_BYTES)
    assert cut is True
    assert len(clipped.encode()) <= UNDERSTAND_MAP_MAX_BYTES
    assert clipped.endswith(MAP_SHORTENED_MARK)


@pytest.mark.req("SRV-19")
def test_fifos_named_like_a_readme_or_manifests_do_not_hang_the_map(root: Path) -> None:
    fifos = [root / "README.md", root / "pyproject.toml", root / "package.json", root / "Cargo.toml"]
    for fifo in fifos:
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
    result = at_once(lambda: build_map(root), fifos=fifos)
    notes = {m["path"]: m.get("note") for m in result["manifests"]}
    assert notes == dict.fromkeys(notes, "not a readable regular file inside the project")
    assert "## README" not in result["map"]


@pytest.mark.req("SRV-19", "SRV-08")
def test_the_map_leaves_out_the_profile_root_inside_the_project(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = root / ".shadowcode"
    monkeypatch.setenv("SHADOWCODE_HOME", str(home))
    before = build_map(root)
    (home / "profiles" / "default").mkdir(parents=True)
    (home / "profiles" / "default" / "secrets.json").write_text('{"k": "s3cret"}', encoding="utf-8")
    after = build_map(root)
    assert after["files"] == before["files"]
    assert ".shadowcode" not in after["map"]


@pytest.mark.req("SRV-19")
def test_sqlite_sidecars_are_not_counted_as_languages(root: Path) -> None:
    for name in ("app.db", "app.db-wal", "app.db-shm", "app.db-journal", "cache.sqlite3-wal"):
        (root / name).write_bytes(b"x")
    languages = build_map(root)["languages"]
    assert languages[".db"] == 1
    assert not [lang for lang in languages if lang.endswith(("-wal", "-shm", "-journal"))], languages
