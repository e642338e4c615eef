"""A bounded map of a project for shadow_understand (SRV-19).

The map comes from one breadth-first walk (at most ``UNDERSTAND_FILES_MAX`` files and
``UNDERSTAND_ENTRIES_MAX`` directory entries, no link followed), the project's manifests
and README (each read up to ``UNDERSTAND_READ_MAX_BYTES``) and test detection. The
Markdown text is cut to ``UNDERSTAND_MAP_MAX_BYTES``. Building a map writes nothing;
saving it is the caller's decision.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from shadowcode.json_values import json_object
from shadowcode.limits import (
    UNDERSTAND_FILES_MAX,
    UNDERSTAND_MAP_MAX_BYTES,
    UNDERSTAND_READ_MAX_BYTES,
    UNDERSTAND_README_LINES_MAX,
)
from shadowcode.project.documents import ProjectMapDocument
from shadowcode.project.files import read_optional
from shadowcode.project.paths import ProjectFile, walk_files
from shadowcode.project.test_detection import MAKEFILE_NAMES, detect_test_commands

__all__ = ["LANGUAGES", "MANIFEST_KINDS", "MAP_SHORTENED_MARK", "SQLITE_SIDECAR_ENDINGS", "build_map", "clip_utf8"]

MANIFEST_KINDS: dict[str, str] = {
    "pyproject.toml": "python",
    "setup.py": "python",
    "setup.cfg": "python",
    "requirements.txt": "python",
    "package.json": "node",
    "Cargo.toml": "rust",
    "go.mod": "go",
    "Makefile": "make",
    "makefile": "make",
    "GNUmakefile": "make",
    "CMakeLists.txt": "cmake",
    "pom.xml": "maven",
    "build.gradle": "gradle",
    "Gemfile": "ruby",
    "composer.json": "php",
}
"""File names recognised as build or package manifests, with the ecosystem they name."""

LANGUAGES: dict[str, str] = {
    ".py": "Python",
    ".pyi": "Python",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".rs": "Rust",
    ".go": "Go",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".hpp": "C++",
    ".java": "Java",
    ".kt": "Kotlin",
    ".rb": "Ruby",
    ".php": "PHP",
    ".cs": "C#",
    ".swift": "Swift",
    ".sh": "Shell",
    ".sql": "SQL",
    ".md": "Markdown",
    ".rst": "reStructuredText",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".json": "JSON",
    ".html": "HTML",
    ".css": "CSS",
}
"""File extensions mapped to the language name counted in ``languages``; other
extensions are counted under the extension itself."""

SQLITE_SIDECAR_ENDINGS: tuple[str, ...] = ("-wal", "-shm", "-journal")
"""Endings of the files SQLite keeps beside a database (``app.db-wal``, ``app.db-shm``,
``app.db-journal``); they are data, not a language, and are not counted."""

MAP_SHORTENED_MARK = "\n\n…(map shortened)\n"
"""Text that ends a map cut to its byte limit."""

_README_NAMES: tuple[str, ...] = ("README.md", "README.rst", "README.txt", "README", "readme.md")


def clip_utf8(text: str, max_bytes: int, mark: str = MAP_SHORTENED_MARK) -> tuple[str, bool]:
    """Cut ``text`` so its UTF-8 form, ``mark`` included, fits in ``max_bytes``.

    Args:
        text: the text to bound.
        max_bytes: the largest allowed UTF-8 size in bytes.
        mark: appended when the text is cut; its bytes count against the limit.

    Returns:
        ``(text, shortened)``; the text is unchanged when it already fits.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    mark_bytes = mark.encode("utf-8")
    if len(mark_bytes) >= max_bytes:
        return mark_bytes[:max_bytes].decode("utf-8", errors="ignore"), True
    head = data[: max_bytes - len(mark_bytes)].decode("utf-8", errors="ignore")
    return head + mark, True


def _language(path: str) -> str | None:
    name = PurePosixPath(path).name
    if name in MAKEFILE_NAMES:
        return "Makefile"
    if name == "Dockerfile":
        return "Dockerfile"
    suffix = PurePosixPath(path).suffix.lower()
    if not suffix or suffix == name or suffix.endswith(SQLITE_SIDECAR_ENDINGS):
        return None
    return LANGUAGES.get(suffix, suffix)


def _manifest_details(root: Path, path: str) -> dict[str, Any]:
    name = PurePosixPath(path).name
    entry: dict[str, Any] = {"path": path, "kind": MANIFEST_KINDS[name]}
    if name not in {"pyproject.toml", "package.json", "Cargo.toml", "go.mod"}:
        return entry
    found = read_optional(root, path, max_bytes=UNDERSTAND_READ_MAX_BYTES)
    if found is None:
        entry["note"] = "not a readable regular file inside the project"
        return entry
    if found.truncated:
        entry["note"] = f"larger than {UNDERSTAND_READ_MAX_BYTES} bytes; not parsed"
        return entry
    text = found.data.decode("utf-8", errors="replace")
    try:
        if name == "pyproject.toml":
            project = json_object(tomllib.loads(text).get("project", {}))
            if project is not None:
                entry["name"] = project.get("name")
                scripts = json_object(project.get("scripts", {}))
                if scripts is not None:
                    entry["entry_points"] = sorted(scripts)
        elif name == "package.json":
            manifest = json_object(json.loads(text))
            if manifest is not None:
                entry["name"] = manifest.get("name")
                points: list[str] = []
                main = manifest.get("main")
                if isinstance(main, str):
                    points.append(main)
                bins = manifest.get("bin")
                if isinstance(bins, str):
                    points.append(bins)
                elif (bin_map := json_object(bins)) is not None:
                    points.extend(bin_map)
                if points:
                    entry["entry_points"] = points
        elif name == "Cargo.toml":
            package = json_object(tomllib.loads(text).get("package", {}))
            if package is not None:
                entry["name"] = package.get("name")
        else:
            for line in text.splitlines():
                if line.startswith("module "):
                    entry["name"] = line.split(None, 1)[1].strip()
                    break
    except (ValueError, tomllib.TOMLDecodeError, IndexError):
        entry["note"] = "could not be parsed"
    if entry.get("name") is None:
        entry.pop("name", None)
    return entry


def _entry_points(manifests: list[dict[str, Any]], files: tuple[ProjectFile, ...]) -> list[str]:
    points: list[str] = []
    for manifest in manifests:
        for point in manifest.get("entry_points", []):
            points.append(f"{point} ({manifest['path']})")
    for item in files:
        name = PurePosixPath(item.path).name
        parts = PurePosixPath(item.path).parts
        if name == "__main__.py" or (name in {"main.rs", "main.go"} and len(parts) <= 3):
            points.append(item.path)
    return points


def _readme(root: Path) -> tuple[str, list[str]] | None:
    for name in _README_NAMES:
        found = read_optional(root, name, max_bytes=UNDERSTAND_READ_MAX_BYTES)
        if found is not None:
            return name, found.data.decode("utf-8", errors="replace").splitlines()[:UNDERSTAND_README_LINES_MAX]
    return None


def _files(count: int) -> str:
    return "1 file" if count == 1 else f"{count} files"


def _layout(files: tuple[ProjectFile, ...]) -> list[str]:
    top_files: list[str] = []
    top_dirs: Counter[str] = Counter()
    sub_dirs: dict[str, Counter[str]] = {}
    for item in files:
        parts = PurePosixPath(item.path).parts
        if len(parts) == 1:
            top_files.append(parts[0] + (" (link)" if item.is_symlink else ""))
            continue
        top_dirs[parts[0]] += 1
        if len(parts) > 2:
            sub_dirs.setdefault(parts[0], Counter())[parts[1]] += 1
    lines: list[str] = []
    for folder in sorted(top_dirs):
        lines.append(f"- `{folder}/` ({_files(top_dirs[folder])})")
        for sub, count in sorted(sub_dirs.get(folder, Counter()).items()):
            lines.append(f"  - `{folder}/{sub}/` ({_files(count)})")
    lines.extend(f"- `{name}`" for name in top_files)
    return lines


def build_map(
    root: Path,
    *,
    files_max: int = UNDERSTAND_FILES_MAX,
    map_max_bytes: int = UNDERSTAND_MAP_MAX_BYTES,
) -> ProjectMapDocument:
    """Build a bounded Markdown map of the project (SRV-19).

    Args:
        root: the canonical project root.
        files_max: files visited at most.
        map_max_bytes: UTF-8 bytes of the ``map`` text at most.

    Returns:
        ``{"map": str (Markdown), "files": int (files visited), "truncated": bool (the
        walk stopped early or the text was cut), "languages": {name_or_ext: count}
        (largest first), "manifests": [{"path", "kind", "name"?, "entry_points"?,
        "note"?}], "entry_points": [str], "tests": [{"name", "command", "reason"}]}``.
    """
    walk = walk_files(root, files_max=files_max)
    languages = Counter(lang for item in walk.files if (lang := _language(item.path)) is not None)
    ordered_languages = dict(sorted(languages.items(), key=lambda pair: (-pair[1], pair[0])))
    manifests = [
        _manifest_details(root, item.path)
        for item in walk.files
        if PurePosixPath(item.path).name in MANIFEST_KINDS and not item.is_symlink
    ]
    entry_points = _entry_points(manifests, walk.files)
    tests = detect_test_commands(root)
    readme = _readme(root)

    lines = [f"# Project map: {root.name}", ""]
    lines.append(f"{len(walk.files)} files" + (" (walk stopped at its limit)" if walk.truncated else "") + ".")
    if ordered_languages:
        lines.append("Languages: " + ", ".join(f"{name} {count}" for name, count in ordered_languages.items()) + ".")
    lines += ["", "## Manifests"]
    lines += [f"- `{m['path']}` ({m['kind']})" + (f": {m['name']}" if m.get("name") else "") for m in manifests] or [
        "- none found"
    ]
    lines += ["", "## Entry points"]
    lines += [f"- {point}" for point in entry_points] or ["- none found"]
    lines += ["", "## Tests"]
    lines += [f"- `{' '.join(t['command'])}` ({t['reason']})" for t in tests] or ["- no test command detected"]
    if readme is not None:
        lines += ["", f"## {readme[0]} (first lines)", "", *(f"> {line}".rstrip() for line in readme[1])]
    lines += ["", "## Layout", *_layout(walk.files), ""]
    text, shortened = clip_utf8("\n".join(lines), map_max_bytes)
    return {
        "map": text,
        "files": len(walk.files),
        "truncated": walk.truncated or shortened,
        "languages": ordered_languages,
        "manifests": manifests,
        "entry_points": entry_points,
        "tests": tests,
    }
